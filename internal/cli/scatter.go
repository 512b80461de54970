package cli

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/spool-run/spool"
	"github.com/spool-run/spool/client"
	"github.com/spool-run/spool/internal/jobjson"
	"github.com/spool-run/spool/internal/s3items"
	"github.com/spool-run/spool/internal/termview"
	"github.com/spool-run/spool/itembatch"
)

// scatterFlags are `spool scatter`'s own flags, beside the job's.
type scatterFlags struct {
	items, itemsFormat, groupBy, batchWith string
	itemsPrefix, results                   string
	batchInput, gather                     string
	maxItems, maxBytes, maxPerGroup        int
	maxConcurrency, toleratedCount         int32
	toleratedPct                           float32
	follow, asJSON                         bool
	// Whether the tolerated failures were given at all: 0 is a value of
	// its own, and unset leaves the server's default.
	toleratedCountSet, toleratedPctSet bool
}

// scatterConfig is what `spool scatter` is told on its command line: the
// job's flags, the scatter's, and the command.
type scatterConfig struct {
	argv []string
	job  submitFlags
	f    scatterFlags
}

func newScatterCmd(e *env) *cobra.Command {
	var (
		cfg    scatterConfig
		job, f = &cfg.job, &cfg.f
	)
	cmd := &cobra.Command{
		Use:   "scatter [flags] --items FILE -- COMMAND [ARG...]",
		Short: "Run a command over many items: one job per batch of items, then an optional gather",
		Long: `Cut the items of FILE (JSON Lines, a JSON array, or CSV whose header row
names the fields) into batches and run COMMAND once per batch, as one job
each, at most --max-concurrency at a time. Each batch's job reads on stdin (and
in the file $SPOOL_BATCH_FILE) the document

  {"items": [...], "batch_input": {...}, "batch_index": i, "batch_count": n, "scatter_id": "..."}

with $SPOOL_BATCH_INDEX, $SPOOL_BATCH_COUNT and $SPOOL_SCATTER_ID set, and may
write its result as JSON (at most 256 KiB) to the file $SPOOL_RESULT. Once every
batch has ended, and no more failed than tolerated, --gather runs with every
batch's result on stdin:

  {"batch_results": {"0": ..., "1": null}, "failed_batches": [1], "batch_count": n, "batch_input": {...}, "scatter_id": "..."}

Prints the scatter's id; with --follow, a progress line until it ends, then
exits 0 if it succeeded and 1 if not. spool scatters redrive runs the failed
batches of a scatter that failed again.`,
		Example: `  spool scatter --items images.jsonl --max-items-per-batch 50 \
      --batch-input '{"width": 800}' -- ./resize.sh
  find photos -name '*.png' | jq -R '{path: .}' | spool scatter --items - -f -- ./resize.sh
  spool scatter --items images.csv --max-items-per-batch 50 -- ./resize.sh
  spool scatter --items orders.json --group-by customer --max-concurrency 10 \
      --tolerated-failure-percentage 5 --gather 'jq -s . > summary.json' -- ./bill.sh`,
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg.argv = args
			f.toleratedCountSet = cmd.Flags().Changed("tolerated-failure-count")
			f.toleratedPctSet = cmd.Flags().Changed("tolerated-failure-percentage")
			return runScatter(cmd.Context(), cfg, e)
		},
	}
	job.register(cmd)
	fl := cmd.Flags()
	_ = fl.MarkHidden("request-id")
	fl.StringVar(&f.items, "items", "", `the items: JSON Lines (one item a line), a JSON array, or CSV (a .csv file, or --items-format csv); "-" reads stdin; s3://bucket/key has the server read them from S3 as the scatter runs`)
	fl.StringVar(&f.itemsPrefix, "items-prefix", "", `s3://bucket/prefix/: one item per object under the prefix, {"Etag","Key","LastModified","Size","StorageClass"}, listed by the server`)
	fl.StringVar(&f.results, "results", "", `s3://bucket/prefix/: write every batch's result there as its job ends, and a manifest.json when the batches have ended`)
	enumVar(fl, &f.itemsFormat, "items-format", "", `how --items is written: json (JSON Lines or a JSON array) or csv (a header row names the fields; each row is an item of strings); default: csv for a .csv file, json otherwise`,
		"json", "csv").aliases = map[string]string{"jsonl": "json"}
	fl.IntVar(&f.maxItems, "max-items-per-batch", 0, "at most this many items a batch (0: as many as fit --max-bytes-per-batch)")
	fl.IntVar(&f.maxBytes, "max-bytes-per-batch", itembatch.DefaultMaxBytes, "at most this many bytes of items (compact JSON) a batch; a bigger item travels alone")
	fl.StringVar(&f.groupBy, "group-by", "", "items with different values of this field never share a batch")
	fl.IntVar(&f.maxPerGroup, "max-items-per-group", 0, "at most this many items of one group in a batch (with --group-by)")
	fl.StringVar(&f.batchWith, "batch-with", "", "cut the batches with this shell command: it reads the items as JSON Lines and writes one JSON array a line, each a batch")
	fl.StringVar(&f.batchInput, "batch-input", "", "JSON given to every batch (and the gather) as batch_input; fixed now")
	fl.Int32Var(&f.maxConcurrency, "max-concurrency", 0, "batches queued or running at once (0: no limit)")
	fl.Int32Var(&f.toleratedCount, "tolerated-failure-count", 0, "failed batches allowed before the scatter fails (default 0)")
	fl.Float32Var(&f.toleratedPct, "tolerated-failure-percentage", 0, "failed batches allowed, as a percentage of all batches")
	fl.StringVar(&f.gather, "gather", "", "shell command run once after every batch has ended within tolerance, with their results on stdin")
	fl.BoolVarP(&f.follow, "follow", "f", false, "show a progress line until the scatter ends; exit 0 if it succeeded, 1 if not")
	fl.BoolVar(&f.asJSON, "json", false, "print the scatter as JSON instead of its id")
	cmd.MarkFlagsMutuallyExclusive("json", "follow")
	cmd.MarkFlagsMutuallyExclusive("batch-with", "max-items-per-batch")
	cmd.MarkFlagsMutuallyExclusive("batch-with", "group-by")
	cmd.MarkFlagsMutuallyExclusive("items", "items-prefix")
	cmd.MarkFlagsMutuallyExclusive("batch-with", "items-prefix")
	cmd.Flags().SetInterspersed(false)
	return cmd
}

// runScatter starts a scatter and, with --follow, shows its progress until
// it ends.
func runScatter(ctx context.Context, cfg scatterConfig, e *env) error {
	if len(cfg.argv) == 0 && cfg.job.script == "" {
		return errors.New("say what each batch runs: spool scatter --items FILE -- ./resize.sh (or --shell 'jq .items ... | ./resize.sh')")
	}
	s, err := cfg.job.submission(cfg.argv)
	if err != nil {
		return err
	}
	if cfg.job.requestID != "" {
		return errors.New("--request-id is for one job; a scatter names its jobs after itself")
	}
	ns, err := cfg.f.scatter(ctx, e, s)
	if err != nil {
		return err
	}
	c, err := e.client()
	if err != nil {
		return err
	}
	sc, err := c.StartScatter(ctx, ns)
	if err != nil {
		return err
	}
	if !cfg.f.follow {
		if cfg.f.asJSON {
			return printJSON(e.out, jobjson.ScatterView(sc))
		}
		fmt.Fprintln(e.out, sc.ID)
		return nil
	}
	fmt.Fprintln(e.out, sc.ID)
	return followScatter(ctx, e, c, sc.ID)
}

// scatter reads the items, cuts them into batches and builds the request.
func (f *scatterFlags) scatter(ctx context.Context, e *env, job client.SubmitParams) (client.ScatterParams, error) {
	ns := client.ScatterParams{Job: job, MaxConcurrency: int(f.maxConcurrency), Results: f.results}
	if f.items == "" && f.itemsPrefix == "" {
		return ns, errors.New(`say where the items are: --items FILE (JSON Lines, a JSON array or CSV; "-" for stdin; s3://bucket/key), or --items-prefix s3://bucket/prefix/`)
	}
	if f.results != "" {
		if _, err := s3items.Parse(f.results, true); err != nil {
			return ns, fmt.Errorf("--results: %w", err)
		}
	}
	if f.toleratedCountSet {
		n := int(f.toleratedCount)
		ns.ToleratedFailureCount = &n
	}
	if f.toleratedPctSet {
		ns.ToleratedFailurePercentage = &f.toleratedPct
	}
	if f.batchInput != "" {
		if !json.Valid([]byte(f.batchInput)) {
			return ns, fmt.Errorf("--batch-input is not valid JSON: %s", termview.Truncate(f.batchInput, 60))
		}
		ns.BatchInput = json.RawMessage(f.batchInput)
	}
	ns.Gather = f.gather
	if f.itemsPrefix != "" || s3items.IsS3(f.items) {
		return ns, f.source(e, &ns)
	}
	items, err := f.readItems(e)
	if err != nil {
		return ns, err
	}
	if len(items) == 0 {
		return ns, fmt.Errorf("%s holds no items: there is nothing to scatter", f.itemsName())
	}
	batches, warnings, err := f.split(ctx, e, items)
	for _, w := range warnings {
		fmt.Fprintf(e.errOut, "spool: warning: %s\n", w)
	}
	if err != nil {
		return ns, err
	}
	if len(batches) == 0 {
		return ns, errors.New("no batches with items: nothing to scatter")
	}
	for _, b := range batches {
		ns.Batches = append(ns.Batches, b.JSON())
	}
	fmt.Fprintf(e.errOut, "spool: %d items in %d batches\n", len(items), len(batches))
	return ns, nil
}

// source says where the server reads the items, checked here so that a
// typo is told before anything is sent.
func (f *scatterFlags) source(e *env, ns *client.ScatterParams) error {
	if f.batchWith != "" {
		return errors.New("--batch-with runs here, on items read here: it cannot cut items the server reads from S3; use the batching flags")
	}
	src := &spool.ScatterSource{
		Items: f.items, ItemsPrefix: f.itemsPrefix, Format: f.itemsFormat,
		MaxItemsPerBatch: f.maxItems, MaxBytesPerBatch: f.maxBytes, GroupBy: f.groupBy, MaxItemsPerGroup: f.maxPerGroup,
	}
	if src.Items != "" {
		if _, err := s3items.Parse(src.Items, false); err != nil {
			return fmt.Errorf("--items: %w", err)
		}
	} else {
		if _, err := s3items.Parse(src.ItemsPrefix, true); err != nil {
			return fmt.Errorf("--items-prefix: %w", err)
		}
		if f.itemsFormat != "" {
			return errors.New("--items-format is for --items: the items of --items-prefix are its objects")
		}
	}
	if _, err := itembatch.NewSplitter(itembatch.Config{MaxItems: f.maxItems, MaxBytes: f.maxBytes, GroupBy: f.groupBy, MaxItemsPerGroup: f.maxPerGroup}); err != nil {
		return fmt.Errorf("batching flags: %w", err)
	}
	ns.Source = src
	fmt.Fprintf(e.errOut, "spool: the server reads the items from %s as the scatter runs\n", cmp.Or(src.Items, src.ItemsPrefix))
	return nil
}

func (f *scatterFlags) itemsName() string {
	if f.items == "-" {
		return "stdin"
	}
	return f.items
}

func (f *scatterFlags) readItems(e *env) ([]itembatch.Item, error) {
	var r io.Reader = e.in
	if f.items != "-" {
		fh, err := os.Open(f.items)
		if err != nil {
			return nil, fmt.Errorf("--items: %w", err)
		}
		defer fh.Close()
		r = fh
	}
	read, err := f.itemsReader()
	if err != nil {
		return nil, err
	}
	items, err := read(r)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", f.itemsName(), err)
	}
	return items, nil
}

// itemsReader is the reader of --items' format: the one --items-format
// names, else CSV for a file named .csv and JSON for anything else (stdin
// included: a pipe has no name to go by).
func (f *scatterFlags) itemsReader() (func(io.Reader) ([]itembatch.Item, error), error) {
	format := f.itemsFormat
	if format == "" {
		format = "json"
		if strings.EqualFold(filepath.Ext(f.items), ".csv") {
			format = "csv"
		}
	}
	if format == "csv" {
		return itembatch.ReadCSVItems, nil
	}
	return itembatch.ReadItems, nil
}

// split cuts the items with the flags' strategy, or with --batch-with.
func (f *scatterFlags) split(ctx context.Context, e *env, items []itembatch.Item) ([]itembatch.Batch, []itembatch.Warning, error) {
	if f.batchWith != "" {
		c := exec.CommandContext(ctx, "/bin/sh", "-c", f.batchWith)
		c.Stderr = e.errOut
		bs, ws, err := itembatch.FromCommand(ctx, c, items)
		if err != nil {
			return nil, ws, fmt.Errorf("--batch-with: %w", err)
		}
		return bs, ws, nil
	}
	bs, ws, err := itembatch.Split(items, itembatch.Config{MaxItems: f.maxItems, MaxBytes: f.maxBytes, GroupBy: f.groupBy, MaxItemsPerGroup: f.maxPerGroup})
	if errors.Is(err, itembatch.ErrInvalidConfig) {
		return nil, ws, fmt.Errorf("batching flags: %w", err)
	}
	return bs, ws, err
}

// followScatter shows a scatter's progress until it ends, and exits as it
// ended: 0 if it succeeded.
func followScatter(ctx context.Context, e *env, c *client.Client, id string) error {
	ti := e.errTerm
	sc, err := c.FollowScatter(ctx, id, 300*time.Millisecond, func(sc *spool.Scatter) {
		line := progressLine(sc, ti)
		if ti.TTY {
			fmt.Fprint(e.errOut, termview.ClearLine+line)
		} else {
			fmt.Fprintln(e.errOut, line)
		}
	})
	if ti.TTY {
		fmt.Fprintln(e.errOut)
	}
	if err != nil {
		return err
	}
	if sc.Error != "" {
		fmt.Fprintf(e.errOut, "spool: scatter %s %s: %s\n", id, sc.State.String(), sc.Error)
	}
	if sc.State != spool.ScatterSucceeded {
		fmt.Fprintf(e.errOut, "spool: to run its failed batches again: spool scatters redrive %s\n", id)
		return exitError{code: 1}
	}
	return nil
}

// progressLine says where a scatter is in one line: a bar on a terminal,
// then the counts.
func progressLine(sc *spool.Scatter, ti termview.Info) string {
	p := sc.Progress
	n := p.BatchCount
	ended := p.Succeeded + p.Failed + p.Cancelled
	var b strings.Builder
	if ti.TTY {
		const width = 24
		done := int(int64(ended) * width / int64(max(n, 1)))
		b.WriteString(ti.Bar(done, width, p.Failed+p.Cancelled > 0) + " ")
	}
	fmt.Fprintf(&b, "%s: %d/%d batches · %d queued · %d running · %d succeeded · %d failed", sc.State.String(),
		ended, n, p.Queued+p.Waiting, p.Running, p.Succeeded, p.Failed)
	if p.Cancelled > 0 {
		fmt.Fprintf(&b, " · %d cancelled", p.Cancelled)
	}
	fmt.Fprintf(&b, " · %d/%d items done", p.ItemsDone, p.ItemCount)
	if r := sc.Reading; r != nil && !r.Done && !sc.State.IsFinal() {
		fmt.Fprintf(&b, " · reading the items: %d so far", r.ItemsRead)
	}
	return b.String()
}
