package cli

import (
	"fmt"
	"regexp"
	"runtime"
	"runtime/debug"
	"strings"
	"time"

	"github.com/spf13/cobra"
)

func newVersionCmd(e *env) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print spool's version, the commit it was built from, and the Go it was built with",
		Long: `Print which spool this is: its version, the commit it was built from (with
the commit's date, and "modified" when the checkout had uncommitted changes),
the Go version and the platform. Worth quoting in a bug report. spool
--version prints the same line.`,
		Args: cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error { return runVersion(e) },
	}
}

// runVersion prints the version line; it has no flags of its own.
func runVersion(e *env) error {
	_, err := fmt.Fprintln(e.out, "spool "+versionText())
	return err
}

// versionText is what spool says about its build, after its name:
// "v1.2.3 (commit 4d41d14, 2026-11-25, modified) go1.26.8 linux/amd64".
func versionText() string {
	info, _ := debug.ReadBuildInfo()
	return describeBuild(Version, info, runtime.GOOS+"/"+runtime.GOARCH)
}

// describeBuild words a build: version is the -ldflags value of Version
// ("dev" when none was given), info what the Go toolchain recorded (nil
// when nothing was), platform GOOS/GOARCH. What is not known is left out
// rather than shown as blank.
func describeBuild(version string, info *debug.BuildInfo, platform string) string {
	settings := map[string]string{}
	mainVersion, goVersion := "", runtime.Version()
	if info != nil {
		for _, s := range info.Settings {
			settings[s.Key] = s.Value
		}
		mainVersion = info.Main.Version
		if info.GoVersion != "" {
			goVersion = info.GoVersion
		}
	}
	rev := settings["vcs.revision"]
	// A version given at link time is a release's deliberate name, so it
	// wins; otherwise the module's version, which `go install …@v1.2.3`
	// records. A build in a checkout gets "(devel)", or from Go 1.24 on a
	// pseudo-version made of the very commit and date shown after it
	// (v0.0.0-20261125085611-4d41d14a1b2c+dirty), which says no more than
	// "dev" does.
	if version == "" || version == "dev" {
		version = "dev"
		if mainVersion != "" && mainVersion != "(devel)" && !fromCheckout(mainVersion, rev) {
			version = mainVersion
		}
	}
	var vcs []string
	if rev != "" {
		vcs = append(vcs, "commit "+rev[:min(7, len(rev))])
	}
	if t, err := time.Parse(time.RFC3339, settings["vcs.time"]); err == nil {
		vcs = append(vcs, t.UTC().Format(time.DateOnly))
	}
	if settings["vcs.modified"] == "true" {
		vcs = append(vcs, "modified")
	}
	parts := []string{version}
	if len(vcs) > 0 {
		parts = append(parts, "("+strings.Join(vcs, ", ")+")")
	}
	return strings.Join(append(parts, goVersion, platform), " ")
}

// pseudoVersion matches the end of a Go pseudo-version: a 14-digit UTC
// time, then the first 12 digits of the commit, maybe then +dirty.
var pseudoVersion = regexp.MustCompile(`[-.]\d{14}-([0-9a-f]{12})(\+[0-9A-Za-z.]+)?$`)

// fromCheckout reports whether v is the pseudo-version the go command made
// up for commit rev of the checkout it built in.
func fromCheckout(v, rev string) bool {
	m := pseudoVersion.FindStringSubmatch(v)
	return m != nil && rev != "" && strings.HasPrefix(rev, m[1])
}
