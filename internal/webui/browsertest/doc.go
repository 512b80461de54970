// Package browsertest drives the web UI in headless Chromium against a real
// spool server: live log updates, line permalinks, the ANSI renderer, the
// cancel button, and the log's tools (search, times, the raw download,
// folding sections, copying links to lines, keys). It keeps a screenshot of the job page as a test
// artifact (under $SPOOL_ARTIFACTS_DIR, else testdata/artifacts at the
// repository root).
//
// The tests run side by side, each in a browser context of its own (its
// own cookies and storage) of one shared Chromium: most of their time is
// spent waiting on the server and the page.
//
// The tests need Chromium (Debian: apt-get install -y chromium; make test
// installs it) and fail, rather than skip, without it.
package browsertest
