package cli

import "testing"

// TestByteSize: sizes are read with or without a unit (powers of 1024
// either way) and said back in the largest unit that divides them;
// anything else is refused with an example.
func TestByteSize(t *testing.T) {
	for in, want := range map[string]int64{"1GiB": 1 << 30, "1GB": 1 << 30, "500 MiB": 500 << 20, "4096": 4096, "2KiB": 2048, "0": 0, "7B": 7} {
		var n int64
		if err := (byteSize{&n}).Set(in); err != nil || n != want {
			t.Errorf("%q: %d, %v; want %d", in, n, err, want)
		}
	}
	for _, bad := range []string{"", "1.5GiB", "-1", "GiB", "1PiB", "9999999TiB"} {
		var n int64
		if err := (byteSize{&n}).Set(bad); err == nil {
			t.Errorf("%q was taken as %d", bad, n)
		}
	}
	for n, want := range map[int64]string{1 << 30: "1GiB", 1536 << 20: "1536MiB", 1000: "1000", 0: "0"} {
		if got := (byteSize{&n}).String(); got != want {
			t.Errorf("%d is said %q, want %q", n, got, want)
		}
	}
}
