package pgstore

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"
)

// Watches are shared as notifications on the changes channel:
//
//	watch:SERVER 1 JOB…  SERVER follows these jobs (sent when that starts,
//	                     and again every announceEvery while it lasts)
//	watch:SERVER 0 JOB…  SERVER no longer follows them
//	watch:SERVER ?       SERVER has just started: everyone announces
//
// A server that dies without saying so is forgotten forgetAfter after its
// last announcement.
const (
	watchPrefix   = "watch:"
	announceEvery = 5 * time.Second
	forgetAfter   = 3 * announceEvery
	// maxWatchPayload keeps a message under PostgreSQL's 8000-byte limit.
	maxWatchPayload = 7000
)

// watches tells the other servers which jobs this server's followers
// watch, and keeps what they say, so that a worker that talks to one server
// flushes its output promptly for a follower on another.
type watches struct {
	s  *Store
	id string

	mu       sync.Mutex
	local    map[string]bool                 // jobs followed here
	pending  map[string]bool                 // changes to local not yet sent
	remote   map[string]map[string]time.Time // job -> server -> forget at
	servers  map[string]bool                 // other servers running at the last beat (run's own)
	onChange func(jobID string)

	kick chan struct{} // pending has changes
	ask  chan struct{} // an announcement is due
	quit chan struct{}
	done chan struct{}
}

func newWatches(s *Store) *watches {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	w := &watches{s: s, id: hex.EncodeToString(b), local: map[string]bool{}, pending: map[string]bool{},
		remote: map[string]map[string]time.Time{}, kick: make(chan struct{}, 1), ask: make(chan struct{}, 1), quit: make(chan struct{}), done: make(chan struct{})}
	go w.run()
	return w
}

// ShareWatch implements store.WatchSharer. It does not wait for the
// message to go out.
func (s *Store) ShareWatch(jobID string, watched bool) {
	w := s.watches
	w.mu.Lock()
	if watched {
		w.local[jobID] = true
	} else {
		delete(w.local, jobID)
	}
	w.pending[jobID] = watched
	w.mu.Unlock()
	select {
	case w.kick <- struct{}{}:
	default:
	}
}

// WatchedElsewhere implements store.WatchSharer.
func (s *Store) WatchedElsewhere(jobID string) bool {
	w := s.watches
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.remote[jobID]) > 0
}

// OnWatchChange implements store.WatchSharer.
func (s *Store) OnWatchChange(fn func(jobID string)) {
	s.watches.mu.Lock()
	defer s.watches.mu.Unlock()
	s.watches.onChange = fn
}

// run sends the pending changes as they come, announces what is followed
// here every announceEvery and forgets servers that stopped announcing.
func (w *watches) run() {
	defer close(w.done)
	tick := time.NewTicker(announceEvery)
	defer tick.Stop()
	for {
		select {
		case <-w.quit:
			return
		case <-w.kick:
			w.flush()
		case <-w.ask:
			w.announce()
		case <-tick.C:
			w.beat()
			w.announce()
			w.forget(time.Now())
		}
	}
}

// beat records that this server runs, and notices others that stopped.
func (w *watches) beat() {
	ctx, cancel := context.WithTimeout(context.Background(), announceEvery)
	defer cancel()
	if err := w.s.seen(ctx); err != nil {
		w.s.log.Warn("could not record this server as running", "error", err)
	}
	w.servers = w.s.noticeStopped(ctx, w.servers)
}

// flush sends the changes made since the last flush.
func (w *watches) flush() {
	w.mu.Lock()
	var on, off []string
	for job, watched := range w.pending {
		if watched {
			on = append(on, job)
		} else {
			off = append(off, job)
		}
	}
	clear(w.pending)
	w.mu.Unlock()
	w.send(append(w.messages("1", on), w.messages("0", off)...))
}

// announce says again which jobs are followed here.
func (w *watches) announce() {
	w.send(w.messages("1", w.localJobs()))
}

// localJobs are the jobs followed here.
func (w *watches) localJobs() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Collect(maps.Keys(w.local))
}

// resync runs once this server listens (at start, and after the listening
// connection came back, when messages sent meanwhile were missed): it
// announces and asks the others to.
func (w *watches) resync() {
	w.due()
	w.send([]string{watchPrefix + w.id + " ?"})
}

// due has run announce soon, off the caller's goroutine.
func (w *watches) due() {
	select {
	case w.ask <- struct{}{}:
	default:
	}
}

// messages packs jobs into as few messages as fit.
func (w *watches) messages(flag string, jobs []string) []string {
	var out []string
	head := watchPrefix + w.id + " " + flag
	var b strings.Builder
	for _, job := range jobs {
		if b.Len() > 0 && b.Len()+1+len(job) > maxWatchPayload {
			out = append(out, b.String())
			b.Reset()
		}
		if b.Len() == 0 {
			b.WriteString(head)
		}
		b.WriteByte(' ')
		b.WriteString(job)
	}
	if b.Len() > 0 {
		out = append(out, b.String())
	}
	return out
}

// send notifies, best effort: a lost message is made good by the next
// announcement.
func (w *watches) send(payloads []string) {
	if len(payloads) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), announceEvery)
	defer cancel()
	if err := notifyNow(ctx, w.s.pool, payloads); err != nil {
		w.s.log.Warn("could not tell other servers which jobs are followed here", "error", err)
	}
}

// heard takes another server's message (without its prefix).
func (w *watches) heard(msg string) {
	f := strings.Fields(msg)
	if len(f) < 2 || f[0] == w.id {
		return
	}
	server, flag, jobs := f[0], f[1], f[2:]
	if flag == "?" {
		w.due()
		return
	}
	until := time.Now().Add(forgetAfter)
	w.edit(func() (changed []string) {
		for _, job := range jobs {
			servers := w.remote[job]
			switch flag {
			case "1":
				if servers == nil {
					servers = map[string]time.Time{}
					w.remote[job] = servers
					changed = append(changed, job)
				}
				servers[server] = until
			case "0":
				if _, ok := servers[server]; ok {
					delete(servers, server)
					if len(servers) == 0 {
						delete(w.remote, job)
						changed = append(changed, job)
					}
				}
			}
		}
		return changed
	})
}

// forget drops the follows of servers that stopped announcing them.
func (w *watches) forget(now time.Time) {
	w.edit(func() (changed []string) {
		for job, servers := range w.remote {
			for server, until := range servers {
				if now.After(until) {
					delete(servers, server)
				}
			}
			if len(servers) == 0 {
				delete(w.remote, job)
				changed = append(changed, job)
			}
		}
		return changed
	})
}

// edit changes the remote follows with fn under w.mu, then tells the
// service which jobs fn says changed. The service is told without w.mu
// held, so it may call ShareWatch meanwhile.
func (w *watches) edit(fn func() (changed []string)) {
	w.mu.Lock()
	changed := fn()
	onChange := w.onChange
	w.mu.Unlock()
	if onChange == nil {
		return
	}
	for _, job := range changed {
		onChange(job)
	}
}

// close tells the others that nothing is followed here any more and stops.
func (w *watches) close() {
	close(w.quit)
	<-w.done
	w.send(w.messages("0", w.localJobs()))
}
