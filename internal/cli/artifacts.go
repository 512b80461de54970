package cli

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/spool-run/spool"
	"github.com/spool-run/spool/client"
	"github.com/spool-run/spool/internal/jobjson"
	"github.com/spool-run/spool/internal/termview"
)

// A job's artifacts are the files it keeps beside its log. spool artifact
// upload runs inside a job (the worker gives it SPOOL_SERVER,
// SPOOL_JOB_ID and SPOOL_JOB_TOKEN); list and download run anywhere, with
// a key that may read the job.

func newArtifactCmd(e *env) *cobra.Command {
	cmd := &cobra.Command{
		Use:     "artifact",
		Aliases: []string{"artifacts"},
		Short:   "Keep files beside a job, list them, download them",
		Long: `A job keeps files beside its log: its artifacts. Name them when you submit
(spool submit --artifacts 'dist/**' -- make dist: the worker uploads what
the globs match once the command ends, whatever its exit code), or upload
them from inside the job with spool artifact upload.

Reading them takes what reading the job's log takes. The server bounds
their size and number (artifacts.* in its configuration).`,
	}
	cmd.AddCommand(newArtifactUploadCmd(e), newArtifactListCmd(e), newArtifactDownloadCmd(e))
	return cmd
}

// artifactUploadConfig is what spool artifact upload is told.
type artifactUploadConfig struct {
	paths []string
	as    string
	jobID string
}

func newArtifactUploadCmd(e *env) *cobra.Command {
	var cfg artifactUploadConfig
	cmd := &cobra.Command{
		Use:   "upload [flags] PATH...",
		Short: "Keep files as artifacts of the job this runs in",
		Long: `Upload files as artifacts of the job this command runs in: the worker gave the
job SPOOL_SERVER, SPOOL_JOB_ID and SPOOL_JOB_TOKEN, which are all it needs.
Each file is named by its path as given (dist/app.tar.gz); a directory
uploads every file under it; a path that is absolute or climbs out with ..
is named by its last part. --as names a single file (or directory) another
way; "-" uploads standard input, named with --as.

Outside a job, give --job and a key that may run jobs of its queue.`,
		Example: `  spool artifact upload coverage.html
  spool artifact upload dist/             # every file under dist/
  spool artifact upload --as report.txt /tmp/out.txt
  make report | spool artifact upload --as report.txt -`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg.paths = args
			return runArtifactUpload(cmd.Context(), cfg, e)
		},
	}
	cmd.Flags().StringVar(&cfg.as, "as", "", "the artifact's name, for a single PATH (a directory's files go under it)")
	cmd.Flags().StringVar(&cfg.jobID, "job", os.Getenv("SPOOL_JOB_ID"), "the job to keep the files of (inside a job: $SPOOL_JOB_ID)")
	return cmd
}

// artifactClient is a client that sends the job token, inside a job, or
// else the usual key.
func (e *env) artifactClient() (*client.Client, error) {
	cfg := e.clientConfig()
	if tok := client.JobTokenFromEnv(); tok != "" {
		cfg.APIKey = tok
	}
	return client.New(cfg)
}

// upload is one file to upload and its artifact's name.
type upload struct{ file, name string }

func runArtifactUpload(ctx context.Context, cfg artifactUploadConfig, e *env) error {
	if cfg.jobID == "" {
		return errors.New("which job? inside a job, SPOOL_JOB_ID says; outside one, give --job JOB")
	}
	if cfg.as != "" && len(cfg.paths) > 1 {
		return fmt.Errorf("--as names one file or directory; %d were given", len(cfg.paths))
	}
	var todo []upload
	for _, p := range cfg.paths {
		if p == "-" {
			if cfg.as == "" {
				return errors.New("standard input (-) needs a name: --as NAME")
			}
			todo = append(todo, upload{file: "-", name: cfg.as})
			continue
		}
		ups, err := uploadsOf(p, cfg.as)
		if err != nil {
			return err
		}
		todo = append(todo, ups...)
	}
	c, err := e.artifactClient()
	if err != nil {
		return err
	}
	var total int64
	for _, u := range todo {
		a, err := uploadOne(ctx, c, e, cfg.jobID, u)
		if err != nil {
			return err
		}
		total += a.Size
		fmt.Fprintf(e.errOut, "spool: kept %s (%s)\n", a.Path, termview.Size(a.Size))
	}
	if len(todo) > 1 {
		fmt.Fprintf(e.errOut, "spool: uploaded %d artifacts (%s)\n", len(todo), termview.Size(total))
	}
	return nil
}

func uploadOne(ctx context.Context, c *client.Client, e *env, jobID string, u upload) (*client.Artifact, error) {
	if u.file == "-" {
		return c.UploadArtifact(ctx, jobID, u.name, e.in)
	}
	f, err := os.Open(u.file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return c.UploadArtifact(ctx, jobID, u.name, f)
}

// uploadsOf lists the files under p (p itself, for a file) and the name
// each is kept as: as, or else p's own name (artifactName), with each
// file's path under a directory after it.
func uploadsOf(p, as string) ([]upload, error) {
	fi, err := os.Stat(p)
	if err != nil {
		return nil, err
	}
	base := as
	if base == "" {
		base = artifactName(p)
	}
	if !fi.IsDir() {
		return []upload{{file: p, name: base}}, nil
	}
	var out []upload
	err = filepath.WalkDir(p, func(file string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		rel, err := filepath.Rel(p, file)
		if err != nil {
			return err
		}
		out = append(out, upload{file: file, name: path.Join(base, filepath.ToSlash(rel))})
		return nil
	})
	if err == nil && len(out) == 0 {
		err = fmt.Errorf("%s holds no files", p)
	}
	return out, err
}

// artifactName is the name a path given on the command line is kept as:
// the path itself, relative and with "/" between its parts, or its last
// part when it is absolute or climbs out with "..".
func artifactName(p string) string {
	clean := filepath.ToSlash(filepath.Clean(p))
	if clean == "." || filepath.IsAbs(p) || clean == ".." || strings.HasPrefix(clean, "../") {
		abs, err := filepath.Abs(p)
		if err == nil {
			return filepath.Base(abs)
		}
		return filepath.Base(clean)
	}
	return clean
}

// artifactListConfig is what spool artifacts list is told.
type artifactListConfig struct {
	jobID  string
	asJSON bool
}

func newArtifactListCmd(e *env) *cobra.Command {
	var cfg artifactListConfig
	cmd := &cobra.Command{
		Use:               "list [flags] JOB_ID",
		Aliases:           []string{"ls"},
		Short:             "List a job's artifacts: path, size, when kept",
		Example:           "  spool artifacts list JOB\n  spool artifacts list --json JOB | jq -r '.artifacts[].path'",
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: completeJobArg(e, false),
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg.jobID = args[0]
			return runArtifactList(cmd.Context(), cfg, e)
		},
	}
	cmd.Flags().BoolVar(&cfg.asJSON, "json", false, "print the list as JSON (path, size, sha256, modified)")
	return cmd
}

func runArtifactList(ctx context.Context, cfg artifactListConfig, e *env) error {
	c, err := e.artifactClient()
	if err != nil {
		return err
	}
	list, err := c.ListArtifacts(ctx, cfg.jobID)
	if err != nil {
		return err
	}
	if cfg.asJSON {
		out := jobjson.ArtifactList{JobID: cfg.jobID, Artifacts: make([]jobjson.Artifact, len(list))}
		for i, a := range list {
			out.Artifacts[i] = jobjson.Artifact{Path: a.Path, Size: a.Size, SHA256: a.SHA256, Modified: a.Modified.UTC()}
		}
		return printJSON(e.out, out)
	}
	if len(list) == 0 {
		fmt.Fprintf(e.errOut, "spool: job %s has no artifacts\n", cfg.jobID)
		return nil
	}
	tw := tabwriter.NewWriter(e.out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "PATH\tSIZE\tMODIFIED")
	now := time.Now()
	for _, a := range list {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", a.Path, termview.Size(a.Size), ago(a.Modified, now))
	}
	return tw.Flush()
}

// artifactDownloadConfig is what spool artifact download is told.
type artifactDownloadConfig struct {
	jobID, path, out string
}

func newArtifactDownloadCmd(e *env) *cobra.Command {
	var cfg artifactDownloadConfig
	cmd := &cobra.Command{
		Use:   "download [flags] JOB_ID PATH",
		Short: "Download one of a job's artifacts",
		Long: `Download an artifact to a file named as its last part, in this directory, or
where -o says ("-o -": standard output). Its SHA-256 is checked once it is
all there. A file that holds the start of the artifact already (a download
broken off) is completed, not fetched again. On a terminal, a line on
stderr shows how far the download has got.`,
		Example: `  spool artifact download JOB dist/app.tar.gz
  spool artifact download JOB report.html -o /tmp/report.html
  spool artifact download JOB data.csv -o - | head`,
		Args:              cobra.ExactArgs(2),
		ValidArgsFunction: completeJobArg(e, false),
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg.jobID, cfg.path = args[0], args[1]
			return runArtifactDownload(cmd.Context(), cfg, e)
		},
	}
	cmd.Flags().StringVarP(&cfg.out, "output", "o", "", `file to write ("-": standard output; default: the artifact's last part, here)`)
	return cmd
}

func runArtifactDownload(ctx context.Context, cfg artifactDownloadConfig, e *env) error {
	c, err := e.artifactClient()
	if err != nil {
		return err
	}
	if cfg.out == "-" {
		rc, info, err := c.DownloadArtifact(ctx, cfg.jobID, cfg.path, 0, -1)
		if err != nil {
			return err
		}
		defer rc.Close()
		return copyChecked(e.out, rc, sha256.New(), info, 0)
	}
	name := cfg.out
	if name == "" {
		name = path.Base(cfg.path)
	}
	f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	defer f.Close()
	// What the file holds already is the start of the artifact, if a
	// download was broken off: hash it, and fetch only the rest.
	h := sha256.New()
	have, err := io.Copy(h, f)
	if err != nil {
		return err
	}
	rc, info, err := c.DownloadArtifact(ctx, cfg.jobID, cfg.path, have, -1)
	if have > 0 && errors.Is(err, spool.ErrInvalidArgument) {
		// The range starts at or past the end: the file may be whole.
		rc, info, err = c.DownloadArtifact(ctx, cfg.jobID, cfg.path, 0, 1)
		if err == nil {
			rc.Close()
			if have == info.Size && hex.EncodeToString(h.Sum(nil)) == info.SHA256 {
				fmt.Fprintf(e.errOut, "spool: %s holds %s already\n", name, cfg.path)
				return nil
			}
			return fmt.Errorf("%s is larger than artifact %s (%s) or holds other bytes: remove it, or give another -o", name, cfg.path, termview.Size(info.Size))
		}
	}
	if err != nil {
		return err
	}
	defer rc.Close()
	if have > 0 {
		fmt.Fprintf(e.errOut, "spool: %s holds %s of %s already; fetching the rest\n", name, termview.Size(have), termview.Size(info.Size))
	}
	var w io.Writer = f
	var p *downloadProgress
	if e.errTerm.TTY {
		p = &downloadProgress{term: e.errTerm, w: e.errOut, size: info.Size, done: have}
		w = io.MultiWriter(f, p)
	}
	err = copyChecked(w, rc, h, info, have)
	p.end()
	if err != nil {
		return fmt.Errorf("%w (%s keeps what came: run the same command to fetch the rest)", err, name)
	}
	fmt.Fprintf(e.errOut, "spool: downloaded %s to %s (%s)\n", cfg.path, name, termview.Size(info.Size))
	return nil
}

// copyChecked copies the artifact's bytes from have on to w, and checks
// that the whole (what h has hashed already, and these) is the artifact.
func copyChecked(w io.Writer, r io.Reader, h hash.Hash, info client.ArtifactInfo, have int64) error {
	n, err := io.Copy(io.MultiWriter(w, h), r)
	if err != nil {
		return fmt.Errorf("the download broke off after %s: %w", termview.Size(have+n), err)
	}
	if have+n != info.Size {
		return fmt.Errorf("the download ended after %s of %s", termview.Size(have+n), termview.Size(info.Size))
	}
	if info.SHA256 != "" && hex.EncodeToString(h.Sum(nil)) != info.SHA256 {
		return fmt.Errorf("the bytes do not have the artifact's SHA-256 (%s): what the file held before was not its start, or the artifact changed; remove the file and download again", info.SHA256)
	}
	return nil
}

// downloadProgress is the line on a terminal while a download runs:
// "spool: 120.4 MB of 200.0 MB (60%)".
type downloadProgress struct {
	term       termview.Info
	w          io.Writer
	size, done int64
	last       time.Time
	drawn      bool
}

func (p *downloadProgress) Write(b []byte) (int, error) {
	p.done += int64(len(b))
	if now := time.Now(); now.Sub(p.last) >= 250*time.Millisecond {
		p.last = now
		text := fmt.Sprintf("spool: %s of %s", termview.Size(p.done), termview.Size(p.size))
		if p.size > 0 {
			text += fmt.Sprintf(" (%d%%)", p.done*100/p.size)
		}
		io.WriteString(p.w, termview.ClearLine+termview.Truncate(text, max(1, p.term.Width-1)))
		p.drawn = true
	}
	return len(b), nil
}

// end takes the line off the screen.
func (p *downloadProgress) end() {
	if p != nil && p.drawn {
		io.WriteString(p.w, termview.ClearLine)
	}
}
