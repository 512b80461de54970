package server

import "sync"

// watchers counts live followers per job on this server, so a worker
// publishing the job's output can be told to flush promptly (DESIGN
// principle 9: low latency when someone is watching, few writes when no one
// is). Followers on other replicas are not counted: their workers fall back
// to the configured flush interval.
type watchers struct {
	mu sync.Mutex
	n  map[string]int
}

// add registers a follower of job and returns the function that removes it.
func (w *watchers) add(job string) (remove func()) {
	w.mu.Lock()
	if w.n == nil {
		w.n = map[string]int{}
	}
	w.n[job]++
	w.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			w.mu.Lock()
			defer w.mu.Unlock()
			if w.n[job]--; w.n[job] <= 0 {
				delete(w.n, job)
			}
		})
	}
}

// watched reports whether job has a follower.
func (w *watchers) watched(job string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.n[job] > 0
}

// total is the number of followers of all jobs.
func (w *watchers) total() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := 0
	for _, k := range w.n {
		n += k
	}
	return n
}
