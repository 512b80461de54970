package storekit

// Sleeping is how many polls of queue wait for a wake-up.
func Sleeping(p *Polls, queue string) int {
	p.mu.Lock()
	t := p.queues[queue]
	p.mu.Unlock()
	if t == nil {
		return 0
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.sleeping
}

// Hold keeps queue's polls' shared state, as a poll under way would, until
// the returned function is called.
func Hold(p *Polls, queue string) func() {
	t := p.enter(queue)
	return func() { p.leave(queue, t) }
}
