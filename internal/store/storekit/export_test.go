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
