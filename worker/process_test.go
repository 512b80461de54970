package worker

import (
	"os"
	"sync"
	"syscall"
	"testing"
	"time"
)

// TestNoSignalAfterReaping: once a command has exited and been reaped, its
// pid (and process group id) may be given to another process, so stopping
// or killing it must send nothing; before that, a stop reaches it.
func TestNoSignalAfterReaping(t *testing.T) {
	t.Parallel()
	var (
		mu   sync.Mutex
		sent []syscall.Signal
	)
	real := killGroup
	killGroup = func(pgid int, sig syscall.Signal) error {
		mu.Lock()
		sent = append(sent, sig)
		mu.Unlock()
		return real(pgid, sig)
	}
	t.Cleanup(func() { killGroup = real })
	count := func() int {
		mu.Lock()
		defer mu.Unlock()
		return len(sent)
	}

	p, err := startProcess([]string{"true"}, "", os.Environ(), "", false, nil)
	if err != nil {
		t.Fatal(err)
	}
	p.stdout.Close()
	p.stderr.Close()
	<-p.done
	before := count() // the clean-up kill of the group, before reaping
	p.stop(time.Millisecond)
	p.kill()
	time.Sleep(20 * time.Millisecond) // the stop's SIGKILL timer would have fired
	if n := count(); n != before {
		t.Fatalf("%d signals sent to a reaped process's group", n-before)
	}

	// A live command does get the stop.
	p, err = startProcess([]string{"sleep", "60"}, "", os.Environ(), "", false, nil)
	if err != nil {
		t.Fatal(err)
	}
	p.stdout.Close()
	p.stderr.Close()
	p.stop(time.Second)
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
		t.Fatal("stop did not end the command")
	}
	if code, sig := p.exit(); code != -1 || sig != "terminated" {
		t.Fatalf("stopped command ended with %d %q, want SIGTERM", code, sig)
	}
}
