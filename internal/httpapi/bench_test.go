package httpapi_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/spool-run/spool/client"
	"github.com/spool-run/spool/spooltest"
)

const (
	benchClients = 100
	benchLines   = 10_000
)

// Replay: 100 clients read a finished 10,000-line log at once.
//
//	go test -run '^$' -bench StreamFanout -benchtime 5x ./internal/httpapi/
func BenchmarkStreamFanoutReplay(b *testing.B) {
	srv := spooltest.NewServer(b)
	job := spooltest.RunJob(b, srv, spooltest.Seq(1, benchLines)...)
	var frames atomic.Int64
	start := time.Now()
	for b.Loop() {
		frames.Add(fanout(b, &env{srv: srv}, job.ID, nil))
	}
	report(b, time.Since(start), frames.Load())
}

// Live: 100 clients follow a job while its worker writes 10,000 lines as
// fast as it can; timed from the first write to the last client's end.
func BenchmarkStreamFanoutLive(b *testing.B) {
	srv := spooltest.NewServer(b)
	c := srv.Client()
	var frames atomic.Int64
	var elapsed time.Duration
	for b.Loop() {
		b.StopTimer()
		if _, _, err := c.Submit(context.Background(), client.SubmitParams{Argv: []string{"seq", "1", "10000"}}); err != nil {
			b.Fatal(err)
		}
		l := spooltest.LeaseJob(b, srv, "")
		l.Begin()
		b.StartTimer()
		start := time.Now()
		frames.Add(fanout(b, &env{srv: srv}, l.JobID(), func() {
			for i := 1; i <= benchLines; i += 500 {
				l.Write(spooltest.Seq(i, i+499)...)
			}
			l.End(0)
		}))
		elapsed += time.Since(start)
	}
	report(b, elapsed, frames.Load())
}

// fanout connects the clients, runs write (if any) once all are connected,
// and waits until every client has read every line and the end message. It
// returns the frames they received.
func fanout(b *testing.B, e *env, jobID string, write func()) int64 {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	conns := make([]*websocket.Conn, benchClients)
	for i := range conns {
		conns[i] = e.dial(ctx, b, wsURL(e.srv.URL, jobID, 0), nil)
	}
	var frames atomic.Int64
	var wg sync.WaitGroup
	for _, c := range conns {
		wg.Go(func() {
			defer c.CloseNow()
			var n int64
			for {
				typ, data, err := c.Read(ctx)
				if err != nil {
					if websocket.CloseStatus(err) != websocket.StatusNormalClosure || n != benchLines {
						b.Errorf("stream ended after %d lines: %v", n, err)
					}
					return
				}
				if typ == websocket.MessageText && len(data) > 15 && string(data[:15]) == `{"type":"lines"` {
					frames.Add(1)
					n += countLines(data)
				}
			}
		})
	}
	if write != nil {
		write()
	}
	wg.Wait()
	return frames.Load()
}

// countLines counts the lines in a frame without decoding it: one
// "line_number" key per line.
func countLines(frame []byte) int64 {
	var n int64
	const key = `"line_number"`
	for i := 0; i+len(key) <= len(frame); i++ {
		if frame[i] == '"' && string(frame[i:i+len(key)]) == key {
			n++
		}
	}
	return n
}

func report(b *testing.B, elapsed time.Duration, frames int64) {
	lines := float64(b.N) * benchClients * benchLines
	b.ReportMetric(lines/elapsed.Seconds(), "lines/s")
	b.ReportMetric(lines/float64(frames), "lines/frame")
}
