package s3items

import (
	"strings"
	"testing"
)

// TestParse: a location names a bucket, and an object's a key; what is
// wrong is said with how to write it.
func TestParse(t *testing.T) {
	for _, tc := range []struct {
		in     string
		prefix bool
		want   Location
		err    string
	}{
		{"s3://b/k.jsonl", false, Location{"b", "k.jsonl"}, ""},
		{"s3://b/dir/k", false, Location{"b", "dir/k"}, ""},
		{"s3://b/p/", true, Location{"b", "p/"}, ""},
		{"s3://b", true, Location{"b", ""}, ""},
		{"s3://b/", false, Location{}, "names no object"},
		{"s3://b/dir/", false, Location{}, "names no object"},
		{"s3:///k", false, Location{}, "names no bucket"},
		{"/tmp/items.jsonl", false, Location{}, "is not an S3 location"},
	} {
		got, err := Parse(tc.in, tc.prefix)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("Parse(%q): %v, want an error saying %q", tc.in, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("Parse(%q) = %+v, %v; want %+v", tc.in, got, err, tc.want)
		}
		if tc.in != "s3://b" && got.String() != tc.in {
			t.Errorf("%+v.String() = %q, want %q", got, got.String(), tc.in)
		}
	}
}

// TestFormat: the format given wins; else a .csv key is CSV and anything
// else JSON.
func TestFormat(t *testing.T) {
	for _, tc := range []struct{ format, key, want string }{
		{"", "a/b.csv", "csv"}, {"", "a/b.CSV", "csv"}, {"", "a/b.jsonl", "json"}, {"", "a/b", "json"},
		{"json", "b.csv", "json"}, {"csv", "b.txt", "csv"}, {"jsonl", "b.csv", "json"},
	} {
		if got := Format(tc.format, tc.key); got != tc.want {
			t.Errorf("Format(%q, %q) = %q, want %q", tc.format, tc.key, got, tc.want)
		}
	}
}
