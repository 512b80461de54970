package httpapi_test

import (
	"context"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/spool-run/spool/internal/httpapi"
	"github.com/spool-run/spool/spooltest"
)

// Twenty clients follow one job from its start while it writes 10,000
// lines: each gets every line once, in order, then the end message and a
// normal close.
func TestStreamManyClients(t *testing.T) {
	t.Parallel()
	e := start(t)
	l := e.running(t)
	l.Write(spooltest.Seq(1, 500)...) // some stored before anyone connects
	ctx := within(t, 2*time.Minute)
	const clients = 20
	errs := make(chan error, clients)
	var ready sync.WaitGroup
	for range clients {
		c := e.dial(ctx, t, wsURL(e.srv.URL, l.JobID(), 0), nil)
		ready.Add(1)
		go func() {
			defer c.CloseNow()
			var once sync.Once
			defer once.Do(ready.Done) // also if the client fails early
			seq := sequence{next: 1}
			var bad error
			end, status, err := follow(ctx, c, func(ln httpapi.Line) bool {
				once.Do(ready.Done)
				bad = seq.add(ln)
				return bad == nil
			})
			switch {
			case bad != nil:
				errs <- bad
			case err != nil:
				errs <- err
			case end == nil || end.State != "succeeded" || end.TotalLines != 10000 || end.ExitCode != 0:
				errs <- errorf("end message %+v", end)
			case status != websocket.StatusNormalClosure:
				errs <- errorf("closed with %v, want 1000", status)
			case seq.next != 10001:
				errs <- errorf("stream ended after line %d", seq.next-1)
			default:
				errs <- nil
			}
		}()
	}
	ready.Wait() // every client is reading: the rest is written while they follow
	writeLines(l, 501, 10000, 100)
	for range clients {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
}

// A client that drops at line 5,000 and reconnects with last_line=5000
// continues at 5,001, while the job is still writing.
func TestStreamResume(t *testing.T) {
	t.Parallel()
	e := start(t)
	l, done := e.writingJob(t, 1, 10000, 250)
	ctx := within(t, time.Minute)

	c := e.dial(ctx, t, wsURL(e.srv.URL, l.JobID(), 0), nil)
	seq := sequence{next: 1}
	var bad error
	_, _, err := follow(ctx, c, func(ln httpapi.Line) bool {
		if ln.LineNumber > 5000 {
			return false // the rest of this frame is dropped with the connection
		}
		bad = seq.add(ln)
		return bad == nil
	})
	c.CloseNow()
	if bad != nil || err != nil || seq.next != 5001 {
		t.Fatalf("first connection: line %d, %v, %v", seq.next-1, bad, err)
	}

	c = e.dial(ctx, t, wsURL(e.srv.URL, l.JobID(), 5000), nil)
	defer c.CloseNow()
	end, status, err := follow(ctx, c, func(ln httpapi.Line) bool {
		bad = seq.add(ln)
		return bad == nil
	})
	if bad != nil || err != nil {
		t.Fatalf("after reconnecting with last_line=5000: %v %v", bad, err)
	}
	if seq.next != 10001 || end == nil || status != websocket.StatusNormalClosure {
		t.Fatalf("resumed stream ended at line %d with %+v, close %v", seq.next-1, end, status)
	}
	<-done
}

// A finished job streams its stored lines and ends; last_line at or past
// the end gets the end message alone.
func TestStreamFinishedJob(t *testing.T) {
	t.Parallel()
	e := start(t)
	job := spooltest.RunJob(t, e.srv, spooltest.Seq(1, 3000)...)
	ctx := within(t, time.Minute)
	for _, last := range []int64{0, 2999, 3000, 5000} {
		c := e.dial(ctx, t, wsURL(e.srv.URL, job.ID, last), nil)
		seq := sequence{next: min(last, 3000) + 1}
		var bad error
		end, status, err := follow(ctx, c, func(ln httpapi.Line) bool { bad = seq.add(ln); return bad == nil })
		c.CloseNow()
		if bad != nil || err != nil || seq.next != 3001 || end == nil || end.TotalLines != 3000 || status != websocket.StatusNormalClosure {
			t.Errorf("last_line=%d: ended after line %d, end %+v, close %v, %v %v", last, seq.next-1, end, status, bad, err)
		}
	}
}

// A client that reads slowly, and for a while not at all, loses nothing;
// meanwhile the server holds no more than a frame and a couple of stored
// batches for it: its heap does not grow with what the client has not
// read, and no frame exceeds the caps.
func TestStreamSlowClientBounded(t *testing.T) {
	var frames, maxLines, maxBytes atomic.Int64
	httpapi.SetTestHooks(t, httpapi.TestHooks{OnFrame: func(lines, bytes int) {
		frames.Add(1)
		setMax(&maxLines, int64(lines))
		setMax(&maxBytes, int64(bytes))
	}})
	e := start(t)

	l := e.running(t)
	const total, width = 100_000, 100 // 10 MB of output
	pad := strings.Repeat("x", width)
	ctx := within(t, 5*time.Minute)
	c := e.dial(ctx, t, wsURL(e.srv.URL, l.JobID(), 0), nil)
	defer c.CloseNow()
	l.Write(spooltest.Line{Text: pad})
	_, _, err := follow(ctx, c, func(httpapi.Line) bool { return false }) // connected, following
	if err != nil {
		t.Fatal(err)
	}
	before := heapInUse()

	// The client reads nothing while the whole log is written.
	for i := 2; i <= total; i += 5000 {
		lines := make([]spooltest.Line, 0, 5000)
		for n := i; n < i+5000 && n <= total; n++ {
			lines = append(lines, spooltest.Line{Text: pad})
		}
		l.Write(lines...)
	}
	stalled := heapInUse()
	t.Logf("heap in use: %.1f MiB before, %.1f MiB with %d MB unread", mib(before), mib(stalled), total*width/1_000_000)
	if grown := stalled - before; grown > 6<<20 {
		t.Errorf("heap grew %.1f MiB while the client read nothing: the server is buffering for it", mib(grown))
	}
	l.End(0)

	// Then it reads slowly: every line still comes, once, in order.
	next := int64(2)
	end, _, err := follow(ctx, c, func(ln httpapi.Line) bool {
		if ln.LineNumber != next || ln.Text != pad {
			t.Errorf("got line %d, want %d", ln.LineNumber, next)
			return false
		}
		if next%5000 == 0 {
			time.Sleep(time.Millisecond) // a slow reader
		}
		next++
		return true
	})
	if err != nil || end == nil || next != total+1 {
		t.Fatalf("slow client: stopped before line %d, end %+v, %v", next, end, err)
	}
	t.Logf("%d frames, at most %d lines and %d bytes each", frames.Load(), maxLines.Load(), maxBytes.Load())
	if maxLines.Load() > httpapi.MaxFrameLines || maxBytes.Load() > httpapi.MaxFrameBytes {
		t.Errorf("a frame of %d lines or %d bytes: over the caps (%d lines, %d bytes)", maxLines.Load(), maxBytes.Load(), httpapi.MaxFrameLines, httpapi.MaxFrameBytes)
	}
}

// Pings keep a quiet connection alive; a client that stops answering them
// is dropped and stops counting as a follower.
func TestStreamKeepalive(t *testing.T) {
	// A ping's answer is awaited for one interval: long enough that the
	// live client's answer comes in time on a machine busy with the whole
	// suite under the race detector (at 20 ms it sometimes did not, and the
	// live client was dropped too), short enough for a quick test.
	httpapi.SetTestHooks(t, httpapi.TestHooks{PingInterval: 250 * time.Millisecond})
	e := start(t)
	l := e.running(t)
	ctx := within(t, time.Minute)

	var pings atomic.Int64
	alive := e.dial(ctx, t, wsURL(e.srv.URL, l.JobID(), 0), &websocket.DialOptions{
		OnPingReceived: func(context.Context, []byte) bool { pings.Add(1); return true }})
	defer alive.CloseNow()
	readCtx, stopReading := context.WithCancel(ctx)
	go follow(readCtx, alive, func(httpapi.Line) bool { return true }) //nolint:errcheck // ends with the test

	dead := e.dial(ctx, t, wsURL(e.srv.URL, l.JobID(), 0), &websocket.DialOptions{
		OnPingReceived: func(context.Context, []byte) bool { return false }}) // never pongs
	defer dead.CloseNow()
	_, _, err := follow(ctx, dead, func(httpapi.Line) bool { return true })
	if err != nil && ctx.Err() != nil {
		t.Fatalf("the unresponsive client was not dropped: %v", err)
	}
	for pings.Load() < 3 {
		if ctx.Err() != nil {
			t.Fatalf("%d pings answered", pings.Load())
		}
		time.Sleep(10 * time.Millisecond)
	}
	// The live client still counts as a follower: the job is watched.
	if _, watched := l.Heartbeat(); !watched {
		t.Error("the job is not watched while a responsive client follows it")
	}
	stopReading()
	alive.CloseNow()
	for {
		if _, watched := l.Heartbeat(); !watched {
			break
		}
		if ctx.Err() != nil {
			t.Fatal("still watched after both clients are gone")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// While a WebSocket follows a running job, its worker is told the job is
// watched (so it flushes output promptly), and no longer once it is gone.
func TestStreamMarksJobWatched(t *testing.T) {
	t.Parallel()
	e := start(t)
	l := e.running(t)
	ctx := within(t, time.Minute)
	watched := func() bool {
		_, w := l.Heartbeat()
		return w
	}
	if watched() {
		t.Fatal("watched before anyone follows")
	}
	c := e.dial(ctx, t, wsURL(e.srv.URL, l.JobID(), 0), nil)
	l.Write(spooltest.Seq(1, 1)...)
	if _, _, err := follow(ctx, c, func(httpapi.Line) bool { return false }); err != nil {
		t.Fatal(err)
	}
	if !watched() {
		t.Error("not watched while a WebSocket follows the job")
	}
	c.CloseNow()
	for watched() {
		if ctx.Err() != nil {
			t.Fatal("still watched after the WebSocket closed")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// When the server shuts down, followers get 1012 (service restart), and on
// reconnecting to the restarted server with their last line they continue
// where they were.
func TestStreamServerRestart(t *testing.T) {
	t.Parallel()
	e := start(t)
	l := e.running(t)
	l.Write(spooltest.Seq(1, 1000)...)
	ctx := within(t, time.Minute)
	c := e.dial(ctx, t, wsURL(e.srv.URL, l.JobID(), 0), nil)
	defer c.CloseNow()
	seq := sequence{next: 1}
	var bad error
	got1000 := make(chan struct{})
	result := make(chan websocket.StatusCode, 1)
	go func() {
		_, status, err := follow(ctx, c, func(ln httpapi.Line) bool {
			bad = seq.add(ln)
			if ln.LineNumber == 1000 {
				close(got1000)
			}
			return bad == nil
		})
		if err != nil {
			t.Error(err)
		}
		result <- status
	}()
	<-got1000
	e.srv.Stop()
	if st := <-result; st != websocket.StatusServiceRestart || bad != nil {
		t.Fatalf("on shutdown: closed with %v (want 1012), %v", st, bad)
	}
	e.srv.Restart()
	l.Write(spooltest.Seq(1001, 2000)...)
	l.End(0)
	c = e.dial(ctx, t, wsURL(e.srv.URL, l.JobID(), seq.next-1), nil)
	defer c.CloseNow()
	end, status, err := follow(ctx, c, func(ln httpapi.Line) bool { bad = seq.add(ln); return bad == nil })
	if err != nil || bad != nil || seq.next != 2001 || end == nil || status != websocket.StatusNormalClosure {
		t.Fatalf("after the restart: ended at line %d, end %+v, close %v, %v %v", seq.next-1, end, status, err, bad)
	}
}

func setMax(v *atomic.Int64, n int64) {
	for {
		old := v.Load()
		if n <= old || v.CompareAndSwap(old, n) {
			return
		}
	}
}

// heapInUse is the live heap after a full collection.
func heapInUse() int64 {
	var m runtime.MemStats
	runtime.GC()
	runtime.GC() // the second also clears what sync.Pools kept from the first
	runtime.ReadMemStats(&m)
	return int64(m.HeapAlloc)
}

func mib(n int64) float64 { return float64(n) / (1 << 20) }

// A client that reads a long log steadily but slowly (a message every
// 100 ms) stays connected, however late its pongs come behind what its
// side has buffered: its frames keep going through. A client that stops
// reading altogether is dropped.
func TestStreamKeepaliveCountsProgress(t *testing.T) {
	var (
		mu      sync.Mutex
		last    time.Time
		maxGap  time.Duration
		measure atomic.Bool
	)
	httpapi.SetTestHooks(t, httpapi.TestHooks{PingInterval: time.Second, OnFrame: func(int, int) {
		mu.Lock()
		defer mu.Unlock()
		if now := time.Now(); measure.Load() && !last.IsZero() {
			maxGap = max(maxGap, now.Sub(last))
		}
		last = time.Now()
	}})
	e := start(t)
	l := e.running(t)
	// 16 MB stored, far more than socket buffers hold: the server's writes
	// wait on the client.
	pad := strings.Repeat("x", 1000)
	lines := make([]spooltest.Line, 16_000)
	for i := range lines {
		lines[i].Text = pad
	}
	l.Write(lines...)
	ctx := within(t, 2*time.Minute)
	watched := func() bool {
		_, w := l.Heartbeat()
		return w
	}

	slow := e.dial(ctx, t, wsURL(e.srv.URL, l.JobID(), 0), nil)
	// Reading 4 MB quickly first lets the system grow the client's receive
	// buffer, as it does for a reader that was fast: then megabytes wait
	// there ahead of every ping.
	for got := 0; got < 4<<20; {
		_, data, err := slow.Read(ctx)
		if err != nil {
			t.Fatal(err)
		}
		got += len(data)
	}
	measure.Store(true)
	read := 0
	for start := time.Now(); time.Since(start) < 5*time.Second; read++ {
		if _, _, err := slow.Read(ctx); err != nil {
			t.Fatalf("the slow reader lost its connection after %d messages: %v", read, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	measure.Store(false)
	mu.Lock()
	t.Logf("slow reader: %d messages in 5s; frames went out at most %v apart", read, maxGap)
	mu.Unlock()
	// Its reads may come from what its side had buffered: the server
	// counting it as a follower says the server kept it.
	if !watched() {
		t.Fatal("the server dropped a client that was reading, slowly")
	}
	slow.CloseNow()
	for watched() {
		if ctx.Err() != nil {
			t.Fatal("still watched after the slow reader left")
		}
		time.Sleep(10 * time.Millisecond)
	}

	stuck := e.dial(ctx, t, wsURL(e.srv.URL, l.JobID(), 0), nil)
	defer stuck.CloseNow()
	for !watched() { // connected
		if ctx.Err() != nil {
			t.Fatal("the stuck client never counted as a follower")
		}
		time.Sleep(10 * time.Millisecond)
	}
	for watched() { // it reads nothing: dropped within two intervals
		if ctx.Err() != nil {
			t.Fatal("a client that reads nothing was never dropped")
		}
		time.Sleep(10 * time.Millisecond)
	}
}
