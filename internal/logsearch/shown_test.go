package logsearch

import "testing"

// shownText leaves out what the web UI's renderer does not show.
func TestShownText(t *testing.T) {
	for in, want := range map[string]string{
		"plain":                                         "plain",
		"\x1b[1;92mbold\x1b[22m x":                      "bold x",
		"\x1b[38;2;1;2;3;48;5;4mx":                      "x",
		"\x1b[2K\x1b[1Gcleared\x1b[?25l":                "cleared",
		"\x1b]0;window title\x07text":                   "text",
		"\x1b]8;;https://e.com\x1b\\link\x1b]8;;\x1b\\": "link",
		"\x1b]0;cut\x1b[1mbold":                         "bold",
		"\x1bPdevice\x1b\\after":                        "after",
		"\x1bPcut\x1b[1mbold":                           "bold",
		"\x1b(Bcharset":                                 "charset",
		"a\x00b\x07c\x7fd\te":                           "abcd\te",
		"cut off \x1b[3":                                "cut off ",
		"ends in \x1b":                                  "ends in ",
		"crlf\r":                                        "crlf\r",
		"Ünïcödé ABC":                                   "Ünïcödé ABC",
	} {
		if got := string(shownText(nil, []byte(in), false)); got != want {
			t.Errorf("shownText(%q) = %q, want %q", in, got, want)
		}
	}
	if got := string(shownText(nil, []byte("Ünïcödé ABC \xff"), true)); got != "ünïcödé abc \xff" {
		t.Errorf("folded: %q", got)
	}
}
