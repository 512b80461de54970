package cli

import (
	"regexp"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
)

// TestDescribeBuild: each thing the toolchain may have recorded is shown
// when known and left out when not; a release's -ldflags version wins, and
// the pseudo-version Go makes up for a checkout is not repeated.
func TestDescribeBuild(t *testing.T) {
	vcs := func(kv ...string) []debug.BuildSetting {
		var s []debug.BuildSetting
		for i := 0; i < len(kv); i += 2 {
			s = append(s, debug.BuildSetting{Key: kv[i], Value: kv[i+1]})
		}
		return s
	}
	const rev = "4d41d14a1b2c3d4e5f60718293a4b5c6d7e8f901"
	checkout := vcs("vcs", "git", "vcs.revision", rev, "vcs.time", "2026-11-25T08:56:11Z", "vcs.modified", "true")
	info := func(version string, settings []debug.BuildSetting) *debug.BuildInfo {
		return &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Path: "github.com/spool-run/spool", Version: version}, Settings: settings}
	}
	for _, tc := range []struct {
		name    string
		version string
		info    *debug.BuildInfo
		want    string
	}{
		{"release by ldflags, in a checkout", "v1.2.3", info("(devel)", checkout),
			"v1.2.3 (commit 4d41d14, 2026-11-25, modified) go1.26.8 linux/amd64"},
		{"ldflags over the module's version", "v1.2.3", info("v1.2.0", nil), "v1.2.3 go1.26.8 linux/amd64"},
		{"go install of a tag", "dev", info("v1.4.0", nil), "v1.4.0 go1.26.8 linux/amd64"},
		{"go install of a commit", "dev", info("v1.4.1-0.20261125085611-4d41d14a1b2c", nil),
			"v1.4.1-0.20261125085611-4d41d14a1b2c go1.26.8 linux/amd64"},
		{"go build in a checkout", "dev", info("v0.0.0-20261125085611-4d41d14a1b2c+dirty", checkout),
			"dev (commit 4d41d14, 2026-11-25, modified) go1.26.8 linux/amd64"},
		{"clean checkout, no date recorded", "dev", info("(devel)", vcs("vcs.revision", rev, "vcs.modified", "false")),
			"dev (commit 4d41d14) go1.26.8 linux/amd64"},
		{"nothing recorded", "dev", nil, "dev " + runtime.Version() + " linux/amd64"},
	} {
		if got := describeBuild(tc.version, tc.info, "linux/amd64"); got != tc.want {
			t.Errorf("%s:\n got %q\nwant %q", tc.name, got, tc.want)
		}
	}
}

// TestVersionCommand: spool version and spool --version print the same
// line, about this very binary; a version set at link time shows.
func TestVersionCommand(t *testing.T) {
	cmd, flag := runLocal("version"), runLocal("--version")
	if cmd.code != 0 || flag.code != 0 || cmd.stderr != "" || cmd.stdout != flag.stdout {
		t.Fatalf("version: %+v\n--version: %+v", cmd, flag)
	}
	platform := runtime.GOOS + "/" + runtime.GOARCH
	form := regexp.MustCompile(`^spool (dev|v\d\S*)( \(commit [0-9a-f]{7}(, \d{4}-\d\d-\d\d)?(, modified)?\))? ` +
		regexp.QuoteMeta(runtime.Version()+" "+platform) + "\n$")
	if !form.MatchString(cmd.stdout) {
		t.Fatalf("spool version printed %q", cmd.stdout)
	}
	// go test records no commit, and calls the module (devel).
	if info, _ := debug.ReadBuildInfo(); info.Main.Version == "(devel)" && !hasSetting(info, "vcs.revision") {
		if want := "spool dev " + runtime.Version() + " " + platform + "\n"; cmd.stdout != want {
			t.Fatalf("spool version printed %q, want %q", cmd.stdout, want)
		}
	}

	defer func(v string) { Version = v }(Version)
	Version = "v1.2.3"
	if r := runLocal("-v"); r.code != 0 || !strings.HasPrefix(r.stdout, "spool v1.2.3 ") {
		t.Fatalf("with Version set at link time: %+v", r)
	}
}

func hasSetting(info *debug.BuildInfo, key string) bool {
	for _, s := range info.Settings {
		if s.Key == key {
			return true
		}
	}
	return false
}
