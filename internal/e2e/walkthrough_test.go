package e2e

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/spool-run/spool"
	"github.com/spool-run/spool/client"
)

// TestConsumeWalkThrough runs the commands of docs/consume.md's "Try it
// without Kafka" as a reader would: each in a shell, all in one directory
// holding bin/spool and examples/, the broker, server, worker and consumer
// in the background and the rest one after another. The only change is the
// ports (the broker's and the server's may be taken on a machine running
// tests): every message sent becomes a job that succeeds, the listing shows
// them, the first one's log says what it echoed, and the consumer stops
// gracefully on SIGTERM.
func TestConsumeWalkThrough(t *testing.T) {
	t.Parallel()
	lines := walkThrough(t, "../../docs/consume.md", "## Try it without Kafka")

	dir := t.TempDir()
	examples, err := filepath.Abs("../../examples")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	for link, target := range map[string]string{"bin/spool": spoolBin, "examples": examples} {
		if err := os.Symlink(target, filepath.Join(dir, link)); err != nil {
			t.Fatal(err)
		}
	}
	kafka, server := freePort(t), freePort(t)
	env := []string{"SPOOL_SERVER_ADDR=" + server, "SPOOL_SERVER=http://" + server}
	ports := strings.NewReplacer(
		"bin/spool dev kafka produce", "bin/spool dev kafka produce --brokers "+kafka,
		"bin/spool dev kafka", "bin/spool dev kafka --port "+strings.TrimPrefix(kafka, "127.0.0.1:"),
		"127.0.0.1:9092", kafka)

	var (
		c        *client.Client
		consumer *proc
		produced int
		kinds    = map[string]bool{}
		first    *spool.Job
	)
	sent := regexp.MustCompile(`(?m)^jobs/\d+@\d+$`)
	for i, line := range lines {
		kind, ready := walkThroughKind(line)
		kinds[kind] = true
		if ready == "" && kind != "produce" && produced > 0 && first == nil {
			// What was sent must have become jobs, and run, before the
			// reader looks at them.
			first = waitJobs(t, c, produced)
		}
		if first != nil {
			line = strings.Replace(line, "JOB", first.ID, 1)
		}
		p := startProc(t, line, dir, env, exec.Command("sh", "-c", "exec "+ports.Replace(line)))
		if ready != "" {
			p.waitSaid(t, ready)
			switch kind {
			case "server":
				c = adminClient(t, dir, server)
			case "consume":
				consumer = p
			}
			continue
		}
		if err := p.cmd.Wait(); err != nil {
			t.Fatalf("step %d, %s: %v\n%s", i+1, line, err, p.out.String())
		}
		out := p.out.String()
		switch kind {
		case "produce":
			produced += len(sent.FindAllString(out, -1))
		case "jobs list":
			if n := strings.Count(out, " succeeded "); n != produced {
				t.Errorf("%s lists %d succeeded jobs; %d messages were sent:\n%s", line, n, produced, out)
			}
		case "logs":
			if !strings.Contains(out, "hello from Kafka") {
				t.Errorf("%s does not show what the first message's job echoed:\n%s", line, out)
			}
		}
	}
	for _, want := range []string{"dev kafka", "server", "worker", "consume", "produce", "jobs list", "logs"} {
		if !kinds[want] {
			t.Errorf("the walk-through has no `spool %s`: has the section changed? (steps: %q)", want, lines)
		}
	}
	if produced < 2 {
		t.Fatalf("the walk-through sent %d messages; want the one given and those of the file", produced)
	}
	if err := consumer.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := consumer.cmd.Wait(); err != nil {
		t.Fatalf("spool consume after SIGTERM: %v; want exit 0 (a graceful stop)", err)
	}
}

// walkThrough is the spool commands of the sh blocks of page's section
// that starts with heading, in order, as written.
func walkThrough(t *testing.T, page, heading string) []string {
	t.Helper()
	f, err := os.Open(page)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var (
		lines           []string
		inSection, inSh bool
		sc              = bufio.NewScanner(f)
	)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "## "):
			inSection = line == heading
		case strings.HasPrefix(line, "```"):
			inSh = line == "```sh"
		case inSection && inSh && strings.HasPrefix(line, "bin/spool "):
			lines = append(lines, line)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(lines) == 0 {
		t.Fatalf("%s has no section %q with bin/spool commands", page, heading)
	}
	return lines
}

// walkThroughKind is which spool command line runs, and, for one that runs
// until stopped, what it says once it is ready.
func walkThroughKind(line string) (kind, ready string) {
	fields := strings.Fields(line)[1:]
	switch {
	case len(fields) >= 3 && fields[0] == "dev" && fields[2] == "produce":
		return "produce", ""
	case len(fields) >= 2 && fields[0] == "dev":
		return "dev kafka", "broker at"
	case fields[0] == "server":
		return "server", "spool server listening"
	case fields[0] == "worker":
		return "worker", "worker started"
	case fields[0] == "consume":
		return "consume", "consumer: partitions assigned"
	case len(fields) >= 2 && fields[0] == "jobs":
		return "jobs " + fields[1], ""
	}
	return fields[0], ""
}

// adminClient is a client of the server at addr with the admin key it
// wrote in dir on its first start.
func adminClient(t *testing.T, dir, addr string) *client.Client {
	t.Helper()
	key, err := os.ReadFile(filepath.Join(dir, "spool-data", "admin.key"))
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.New(client.Config{URL: "http://" + addr, APIKey: strings.TrimSpace(string(key))})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// waitJobs waits until n jobs have run and succeeded, and returns the one
// of the topic's first message.
func waitJobs(t *testing.T, c *client.Client, n int) *spool.Job {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(50 * time.Millisecond) {
		byRequest, total := jobsByRequest(t, c)
		done := 0
		for _, j := range byRequest {
			if j.State == spool.Succeeded {
				done++
			}
		}
		if total == n && done == n {
			return byRequest["kafka:jobs/0/0"]
		}
		if time.Now().After(deadline) {
			t.Fatalf("after a minute, %d jobs of %d messages, %d of them succeeded: %v", total, n, done, byRequest)
		}
	}
}
