package storekit

// Hold keeps queue's polls' shared state, as a poll under way would, until
// the returned function is called.
func Hold(p *Polls, queue string) func() {
	t := p.enter(queue)
	return func() { p.leave(queue, t) }
}
