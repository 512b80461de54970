package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/spf13/cobra"

	"github.com/spool-run/spool/internal/cwlogs"
	"github.com/spool-run/spool/internal/httpapi"
	"github.com/spool-run/spool/internal/wire"
)

// backfillProgressEvery is how often a long backfill says how far it has
// come: often enough to see it move, rarely enough to read.
const backfillProgressEvery = 5 * time.Second

func newIngestBackfillCmd(e *env) *cobra.Command {
	cfg := ingestBackfillConfig{now: time.Now, progressEvery: backfillProgressEvery}
	cmd := &cobra.Command{
		Use:   "backfill --log-group GROUP [--log-stream STREAM] --since TIME [--until TIME]",
		Short: "Add the CloudWatch Logs events spool lacks to their sources' jobs",
		Long: `Read a CloudWatch Logs log group (or one of its streams) over a span of
time and send spool the events it does not have: those a subscription never
delivered (it was set up later, Firehose gave a delivery up, the server was
away). Each stream is a source, "<logGroup>:<logStream>", as with the
subscription, and its events go to the source's external job in
CloudWatch's order, keeping the ids CloudWatch gives them. spool keeps each
id of a source once, so events it has already are not added again: a
backfill after a subscription's deliveries, or run twice, adds nothing
twice. A source without an open job gets a new one.

Lines never move in spool: events added by a backfill come after the lines
the job has, even if they are older.

--since and --until bound the events' times, both included: a duration
before now (90s, 10m, 2d), a time (2026-11-27T09:30:00Z) or a date.
Credentials and region come from the usual AWS sources (environment,
shared configuration, instance role); the caller needs the permission
logs:FilterLogEvents on the group. The spool key needs role ingest (or
admin).

A line on stderr says how far a long backfill has come; at the end, a
summary: events read, added, and already there, per stream.`,
		Example: `  spool ingest backfill --log-group /ecs/api --since 2d
  spool ingest backfill --log-group /ecs/api --log-stream ecs/api/4f6c0d2e --since 2026-11-27T09:00 --until 2026-11-27T10:00`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runIngestBackfill(cmd.Context(), cfg, e)
		},
	}
	f := cmd.Flags()
	f.StringVar(&cfg.query.LogGroup, "log-group", "", "the CloudWatch Logs log group to read (required)")
	f.StringVar(&cfg.query.LogStream, "log-stream", "", "read only this stream of the group")
	f.Var(timeFlag{t: &cfg.query.Since, now: cfg.now}, "since", "read events stamped at or after this time: 2d (ago), 2026-11-27T09:30:00Z, 2026-11-27 (required)")
	f.Var(timeFlag{t: &cfg.query.Until, now: cfg.now}, "until", "read events stamped at or before this time (same forms as --since; default: now)")
	f.StringVar(&cfg.aws.Region, "region", "", "the log group's AWS region (default: AWS_REGION, or the shared AWS configuration's)")
	f.StringVar(&cfg.aws.Endpoint, "endpoint", "", "call this CloudWatch Logs endpoint URL instead of AWS's (a compatible server; default: AWS_ENDPOINT_URL_CLOUDWATCH_LOGS or AWS_ENDPOINT_URL when set)")
	f.BoolVar(&cfg.asJSON, "json", false, "print the summary as JSON")
	_ = cmd.MarkFlagRequired("log-group")
	_ = cmd.MarkFlagRequired("since")
	return cmd
}

// ingestBackfillConfig is what `spool ingest backfill` is told on its
// command line.
type ingestBackfillConfig struct {
	query         cwlogs.Query
	aws           cwlogs.Config
	asJSON        bool
	now           func() time.Time
	progressEvery time.Duration
}

func runIngestBackfill(ctx context.Context, cfg ingestBackfillConfig, e *env) error {
	if cfg.query.Until.IsZero() {
		cfg.query.Until = cfg.now()
	}
	if err := cfg.query.Check(); err != nil {
		return err
	}
	send, err := e.linesSender()
	if err != nil {
		return err
	}
	api, err := cwlogs.NewClient(ctx, cfg.aws)
	if err != nil {
		return err
	}
	last := cfg.now()
	b := cwlogs.Backfill{API: api, Send: send, Progress: func(p cwlogs.Progress) {
		if now := cfg.now(); now.Sub(last) >= cfg.progressEvery {
			last = now
			fmt.Fprintf(e.errOut, "read %s, %d added, through %s\n", count(int64(p.Read), "event"), p.Added, p.Through.Format(time.RFC3339))
		}
	}}
	sum, err := b.Run(ctx, cfg.query)
	if err != nil && sum.Sent > 0 {
		// What was sent is in spool; sending it again adds nothing.
		return fmt.Errorf("%w\n(the %s sent before this are in spool, %d of them added; running the backfill again adds only what is missing)", err, count(int64(sum.Sent), "event"), sum.Added)
	}
	if err != nil {
		return err
	}
	if cfg.asJSON {
		return printJSON(e.out, backfillView(sum))
	}
	fmt.Fprintf(e.out, "read %s from %s: %d added, %d already there\n", count(int64(sum.Read), "event"), count(int64(len(sum.Streams)), "log stream"), sum.Added, sum.Read-sum.Added)
	for _, s := range sum.Streams {
		job := s.JobID
		switch {
		case job == "":
			job = "(no open job)"
		case s.Opened:
			job += " (opened)"
		}
		fmt.Fprintf(e.out, "  %s  %s  %d read, %d added\n", s.Source, job, s.Read, s.Added)
	}
	return nil
}

// backfillSummary is the JSON of a backfill's summary.
type backfillSummary struct {
	Read    int              `json:"read"`
	Added   int              `json:"added"`
	Already int              `json:"already_there"`
	Sources []backfillSource `json:"sources"`
}

type backfillSource struct {
	Source string `json:"source"`
	JobID  string `json:"job_id,omitempty"`
	Read   int    `json:"read"`
	Added  int    `json:"added"`
	Opened bool   `json:"opened"`
}

func backfillView(s cwlogs.Summary) backfillSummary {
	out := backfillSummary{Read: s.Read, Added: s.Added, Already: s.Read - s.Added, Sources: []backfillSource{}}
	for _, st := range s.Streams {
		out.Sources = append(out.Sources, backfillSource(st))
	}
	return out
}

// maxIngestAnswer bounds the answer to a post of lines: a summary per
// source of the post, a few hundred bytes each.
const maxIngestAnswer = 4 << 20

// linesSender posts events to the server's lines endpoint with the
// command's key, as a log shipper would.
func (e *env) linesSender() (cwlogs.Send, error) {
	hc, err := wire.HTTPClient(wire.Options{CAFile: e.caFile()})
	if err != nil {
		return nil, err
	}
	base, err := wire.BaseURL(e.server)
	if err != nil {
		return nil, err
	}
	key, _ := e.apiKey()
	return func(ctx context.Context, lines []byte) (cwlogs.Stored, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/api/v1/ingest/lines", bytes.NewReader(lines))
		if err != nil {
			return cwlogs.Stored{}, err
		}
		req.Header.Set("Content-Type", "application/x-ndjson")
		if key != "" {
			req.Header.Set("Authorization", "Bearer "+key)
		}
		resp, err := hc.Do(req)
		if err != nil {
			return cwlogs.Stored{}, fmt.Errorf("cannot reach the spool server at %s (%v): start one with `spool server`, or point --server or SPOOL_SERVER at yours", base, err)
		}
		defer resp.Body.Close()
		var body struct {
			httpapi.IngestSummary
			Error string `json:"error"`
		}
		if err := json.NewDecoder(io.LimitReader(resp.Body, maxIngestAnswer)).Decode(&body); err != nil {
			return cwlogs.Stored{}, fmt.Errorf("the server at %s answered %s, not as a spool server does: is --server right?", base, resp.Status)
		}
		switch resp.StatusCode {
		case http.StatusOK:
		case http.StatusUnauthorized:
			return cwlogs.Stored{}, fmt.Errorf("the server at %s refused the key (%s)", base, e.keyHint())
		case http.StatusForbidden:
			return cwlogs.Stored{}, fmt.Errorf("the server at %s does not let this key send logs: use a key of role ingest or admin (spool keys create --role ingest --name backfill)", base)
		default:
			return cwlogs.Stored{}, fmt.Errorf("the server at %s refused events: %s", base, body.Error)
		}
		st := cwlogs.Stored{Accepted: body.Accepted}
		for _, s := range body.Sources {
			st.Sources = append(st.Sources, cwlogs.SourceStored(s))
		}
		return st, nil
	}, nil
}
