package cli

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/spool-run/spool/internal/mototest"
	"github.com/spool-run/spool/server"
	"github.com/spool-run/spool/spooltest"
	"github.com/spool-run/spool/worker"
)

// itemsFile writes lines to a file and returns its path.
func itemsFile(t *testing.T, lines ...string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "items.jsonl")
	if err := os.WriteFile(p, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func images(n int) []string {
	lines := make([]string, n)
	for i := range lines {
		lines[i] = fmt.Sprintf(`{"path":"img-%02d.png","album":"a%d"}`, i, i%2)
	}
	return lines
}

// TestScatterCommand: `spool scatter -f` batches the items, prints the
// scatter's id, follows its progress and exits as it ended; `spool jobs get`
// on the id shows the scatter.
func TestScatterCommand(t *testing.T) {
	t.Parallel()
	srv := spooltest.NewServer(t)
	spooltest.NewWorker(t, srv, worker.Config{Concurrency: 4})
	items := itemsFile(t, images(10)...)

	r := run(srv, "scatter", "-f", "--items", items, "--max-items-per-batch", "3", "--batch-input", `{"width": 800}`,
		"--gather", `cat > "$SPOOL_RESULT"`, "--",
		"sh", "-c", `grep -q '"batch_input":{"width":800}' && echo "{\"n\": $SPOOL_BATCH_INDEX}" > "$SPOOL_RESULT"`)
	if r.code != 0 {
		t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	id := strings.TrimSpace(r.stdout)
	if !strings.Contains(r.stderr, "10 items in 4 batches") || !strings.Contains(r.stderr, "succeeded: 4/4 batches") ||
		!strings.Contains(r.stderr, "10/10 items done") {
		t.Fatalf("stderr does not show the batches and the progress:\n%s", r.stderr)
	}
	got := run(srv, "jobs", "get", id)
	if got.code != 0 || !strings.Contains(got.stdout, "succeeded: 4/4 batches") || !strings.Contains(got.stdout, id+".gather") {
		t.Fatalf("jobs get %s: exit %d\n%s%s", id, got.code, got.stdout, got.stderr)
	}
	batch := run(srv, "jobs", "get", id+".2")
	if !strings.Contains(batch.stdout, "batch 2 of 4, 3 items") || !strings.Contains(batch.stdout, `{"n": 2}`) {
		t.Fatalf("jobs get of a batch:\n%s%s", batch.stdout, batch.stderr)
	}
	list := run(srv, "scatters", "list")
	if !strings.Contains(list.stdout, id) {
		t.Fatalf("scatters list does not show %s:\n%s", id, list.stdout)
	}

	// Grouped by album: no batch mixes albums, so 5 of each make 2 batches
	// of 3 and 2 each.
	r = run(srv, "scatter", "-f", "--items", items, "--group-by", "album", "--max-items-per-batch", "3", "--", "true")
	if r.code != 0 || !strings.Contains(r.stderr, "10 items in 4 batches") {
		t.Fatalf("grouped: exit %d\n%s", r.code, r.stderr)
	}

	// A failing scatter exits 1 and says why.
	r = run(srv, "scatter", "-f", "--items", items, "--max-items-per-batch", "5", "--", "false")
	if r.code != 1 || !strings.Contains(r.stderr, "batches failed, more than the 0 tolerated") {
		t.Fatalf("failing scatter: exit %d\n%s", r.code, r.stderr)
	}
}

// TestScatterCommandBadInput: empty items, broken JSON, a custom batcher
// that writes garbage and an item bigger than a batch are told clearly;
// nothing is started for the errors.
func TestScatterCommandBadInput(t *testing.T) {
	t.Parallel()
	srv := spooltest.NewServer(t)
	for _, tc := range []struct {
		name  string
		items []string
		args  []string
		want  string
	}{
		{"empty", []string{""}, nil, "holds no items"},
		{"broken JSON", []string{`{"a":1}`, `{"a":`}, nil, "line 2"},
		{"garbage batcher", images(3), []string{"--batch-with", "echo 'not a batch'"}, "--batch-with"},
		{"bad batch input", images(3), []string{"--batch-input", "{"}, "--batch-input is not valid JSON"},
		{"no items flag", nil, nil, "--items FILE"},
	} {
		args := []string{"scatter"}
		if tc.items != nil {
			args = append(args, "--items", itemsFile(t, tc.items...))
		}
		args = append(append(args, tc.args...), "--", "true")
		r := run(srv, args...)
		if r.code == 0 || !strings.Contains(r.stderr, tc.want) {
			t.Errorf("%s: exit %d, stderr %q; want an error saying %q", tc.name, r.code, r.stderr, tc.want)
		}
	}
	if list := run(srv, "scatters", "list"); !strings.Contains(list.stdout, "no scatters") {
		t.Fatalf("bad input started a scatter:\n%s", list.stdout)
	}

	// One item bigger than a batch travels alone, with a warning.
	big := fmt.Sprintf(`{"blob":%q}`, strings.Repeat("x", 2000))
	r := run(srv, "scatter", "--items", itemsFile(t, `{"a":1}`, big, `{"a":2}`), "--max-bytes-per-batch", "1000", "--", "true")
	if r.code != 0 || !strings.Contains(r.stderr, "warning") || !strings.Contains(r.stderr, "3 items in 3 batches") {
		t.Fatalf("huge item: exit %d\n%s", r.code, r.stderr)
	}
}

// TestScatterCommandCSV: a .csv file is read as CSV (its header names the
// fields, values are strings), stdin is CSV with --items-format csv, and a
// row with the wrong number of fields is refused with its line.
func TestScatterCommandCSV(t *testing.T) {
	t.Parallel()
	srv := spooltest.NewServer(t)
	spooltest.NewWorker(t, srv, worker.Config{Concurrency: 2})
	csvFile := filepath.Join(t.TempDir(), "images.CSV")
	if err := os.WriteFile(csvFile, []byte("path,width\r\na.jpg,800\r\n\"b, c.jpg\",1024\r\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	want := `[{"path":"a.jpg","width":"800"},{"path":"b, c.jpg","width":"1024"}]`
	check := `grep -qF '"items":` + want + `'`
	r := run(srv, "scatter", "-f", "--items", csvFile, "--max-items-per-batch", "2", "--", "sh", "-c", check)
	if r.code != 0 || !strings.Contains(r.stderr, "2 items in 1 batches") {
		t.Fatalf("a .csv file: exit %d\n%s", r.code, r.stderr)
	}
	in := "path,width\na.jpg,800\n\"b, c.jpg\",1024\n"
	r = runWith(strings.NewReader(in), "--server", srv.URL, "--api-key", srv.AdminKey,
		"scatter", "-f", "--items", "-", "--items-format", "csv", "--max-items-per-batch", "2", "--", "sh", "-c", check)
	if r.code != 0 {
		t.Fatalf("CSV on stdin: exit %d\n%s", r.code, r.stderr)
	}
	// The same file read as JSON, on request, is not JSON.
	if r := run(srv, "scatter", "--items", csvFile, "--items-format", "json", "--", "true"); r.code == 0 || !strings.Contains(r.stderr, "items line 1") {
		t.Fatalf("CSV read as JSON: exit %d, stderr %q", r.code, r.stderr)
	}
	bad := filepath.Join(t.TempDir(), "bad.csv")
	if err := os.WriteFile(bad, []byte("path,width\na.jpg,800\nb.jpg\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if r := run(srv, "scatter", "--items", bad, "--", "true"); r.code == 0 || !strings.Contains(r.stderr, "items line 3: 1 fields, but the header on line 1 names 2") {
		t.Fatalf("a short row: exit %d, stderr %q", r.code, r.stderr)
	}
	if r := run(srv, "scatter", "--items", bad, "--items-format", "xml", "--", "true"); r.code == 0 || !strings.Contains(r.stderr, `"xml" is not one of json or csv`) {
		t.Fatalf("an unknown format: exit %d, stderr %q", r.code, r.stderr)
	}
}

// TestScattersRedriveCommand: a failed scatter names its failed job (get,
// and the follow's last words), spool logs of the scatter's id says where
// the logs are, spool scatters redrive -f runs the failed batch again and
// exits 0 once it succeeded, and a second redrive is refused.
func TestScattersRedriveCommand(t *testing.T) {
	t.Parallel()
	srv := spooltest.NewServer(t)
	spooltest.NewWorker(t, srv, worker.Config{Concurrency: 2})
	mark := filepath.Join(t.TempDir(), "fixed")
	r := run(srv, "scatter", "-f", "--items", itemsFile(t, images(2)...), "--max-items-per-batch", "1", "-e", "MARK="+mark,
		"--", "sh", "-c", `test "$SPOOL_BATCH_INDEX" = 0 || test -e "$MARK"`)
	id := strings.TrimSpace(r.stdout)
	failed := id + ".1"
	if r.code != 1 || !strings.Contains(r.stderr, "failed jobs: "+failed) || !strings.Contains(r.stderr, "spool scatters redrive "+id) {
		t.Fatalf("failing scatter: exit %d\n%s", r.code, r.stderr)
	}
	if got := run(srv, "scatters", "get", id); !strings.Contains(got.stdout, "Failed jobs:  "+failed+"; see why with spool logs "+failed) {
		t.Fatalf("scatters get of a failed scatter:\n%s", got.stdout)
	}
	if logs := run(srv, "logs", id); logs.code == 0 || !strings.Contains(logs.stderr, id+" is a scatter, not a job") ||
		!strings.Contains(logs.stderr, "a failed batch's: spool logs "+failed) || !strings.Contains(logs.stderr, "spool scatters get "+id) {
		t.Fatalf("logs of a scatter id: exit %d\n%s", logs.code, logs.stderr)
	}

	if err := os.WriteFile(mark, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	r = run(srv, "scatters", "redrive", "-f", id)
	if r.code != 0 || !strings.Contains(r.stderr, "redrive 1 of scatter "+id+": 1 batches to run again") || !strings.Contains(r.stderr, "succeeded: 2/2 batches") {
		t.Fatalf("redrive: exit %d\n%s", r.code, r.stderr)
	}
	if got := run(srv, "scatters", "get", id); !strings.Contains(got.stdout, "Redrives:") || strings.Contains(got.stdout, "Failed jobs") {
		t.Fatalf("scatters get of a redriven scatter:\n%s", got.stdout)
	}
	if r := run(srv, "scatters", "redrive", id); r.code == 0 || !strings.Contains(r.stderr, "succeeded: there is nothing to run again") {
		t.Fatalf("a second redrive: exit %d\n%s", r.code, r.stderr)
	}
}

// TestScatterCommandWithoutCommand: the hint shows spool scatter, not
// spool submit.
func TestScatterCommandWithoutCommand(t *testing.T) {
	t.Parallel()
	srv := spooltest.NewServer(t)
	r := run(srv, "scatter", "--items", itemsFile(t, images(2)...))
	if r.code == 0 || !strings.Contains(r.stderr, "spool scatter --items FILE -- ") || strings.Contains(r.stderr, "spool submit") {
		t.Fatalf("no command: exit %d, stderr %q", r.code, r.stderr)
	}
}

// TestScatterCommandS3: --items s3://... and --items-prefix hand the
// items to the server, which reads them; --results is passed on; a typo in
// a location, or --batch-with on items the server reads, is told before
// anything is sent.
func TestScatterCommandS3(t *testing.T) {
	t.Parallel()
	moto := mototest.For(t)
	s3c := s3.NewFromConfig(moto.AWSConfig(), func(o *s3.Options) {
		o.UsePathStyle, o.DisableLogOutputChecksumValidationSkipped = true, true
	})
	bucket := mototest.NewName("cli-items")
	ctx := context.Background()
	if _, err := s3c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(bucket)}); err != nil {
		t.Fatal(err)
	}
	body := strings.Join(images(10), "\n")
	if _, err := s3c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String("in/items.jsonl"), Body: strings.NewReader(body)}); err != nil {
		t.Fatal(err)
	}
	srv := spooltest.NewServer(t, spooltest.Config{Server: func(c *server.Config) {
		c.Scatter.S3 = server.ScatterS3{Endpoint: moto.URL, PathStyle: true, Region: mototest.Region}
	}})
	spooltest.NewWorker(t, srv, worker.Config{Concurrency: 4})

	r := run(srv, "scatter", "-f", "--items", "s3://"+bucket+"/in/items.jsonl", "--max-items-per-batch", "3",
		"--results", "s3://"+bucket+"/out/", "--", "true")
	if r.code != 0 || !strings.Contains(r.stderr, "the server reads the items from s3://"+bucket+"/in/items.jsonl") ||
		!strings.Contains(r.stderr, "succeeded: 4/4 batches") || !strings.Contains(r.stderr, "10/10 items done") {
		t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	id := strings.TrimSpace(r.stdout)
	got := run(srv, "scatters", "get", id)
	if !strings.Contains(got.stdout, "s3://"+bucket+"/in/items.jsonl: all 10 read") ||
		!strings.Contains(got.stdout, "manifest s3://"+bucket+"/out/"+id+"/manifest.json") {
		t.Fatalf("scatters get %s:\n%s%s", id, got.stdout, got.stderr)
	}

	r = run(srv, "scatter", "-f", "--items-prefix", "s3://"+bucket+"/in/", "--", "true")
	if r.code != 0 || !strings.Contains(r.stderr, "1/1 items done") {
		t.Fatalf("--items-prefix: exit %d\n%s", r.code, r.stderr)
	}

	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--items", "s3://" + bucket + "/"}, "names no object"},
		{[]string{"--items-prefix", "s3:/" + bucket}, "is not an S3 location"},
		{[]string{"--items", "s3://" + bucket + "/a.jsonl", "--batch-with", "cat"}, "--batch-with runs here"},
		{[]string{"--items", "s3://" + bucket + "/a.jsonl", "--results", "/tmp/out"}, "--results"},
	} {
		r := run(srv, append(append([]string{"scatter"}, tc.args...), "--", "true")...)
		if r.code == 0 || !strings.Contains(r.stderr, tc.want) {
			t.Errorf("scatter %v: exit %d, %q; want it refused saying %q", tc.args, r.code, r.stderr, tc.want)
		}
	}
}
