package suggest

import "testing"

func TestDistance(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want int
	}{
		{"", "", 0},
		{"list", "list", 0},
		{"lst", "list", 1},
		{"runing", "running", 1},
		{"", "abc", 3},
		{"kitten", "sitting", 3},
		{"flush_interval", "flush_intervla", 2},
	} {
		if got := Distance(tc.a, tc.b); got != tc.want {
			t.Errorf("Distance(%q, %q) = %d, want %d", tc.a, tc.b, got, tc.want)
		}
		if got := Distance(tc.b, tc.a); got != tc.want {
			t.Errorf("Distance(%q, %q) = %d, want %d (it is symmetric)", tc.b, tc.a, got, tc.want)
		}
	}
}
