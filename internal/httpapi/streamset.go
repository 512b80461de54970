package httpapi

import "sync"

// streamSet counts the WebSocket streams running so that a stopping server
// can wait for them. Unlike a sync.WaitGroup it may be waited on while new
// streams still arrive: once waiting has begun, join refuses them, so the
// wait cannot be outrun by a stream that starts during it.
type streamSet struct {
	mu      sync.Mutex
	running int
	closing bool
	idle    chan struct{} // closed when closing and nothing runs
}

// join counts a new stream; false when the server is stopping and the
// stream must not start. A stream that joined calls leave when it ends.
func (s *streamSet) join() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closing {
		return false
	}
	s.running++
	return true
}

func (s *streamSet) leave() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.running--
	if s.closing && s.running == 0 {
		close(s.idle)
	}
}

// wait refuses new streams and returns when the running ones have ended.
func (s *streamSet) wait() {
	s.mu.Lock()
	if !s.closing {
		s.closing = true
		s.idle = make(chan struct{})
		if s.running == 0 {
			close(s.idle)
		}
	}
	idle := s.idle
	s.mu.Unlock()
	<-idle
}
