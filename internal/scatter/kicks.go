package scatter

import "sync"

// kicks are the scatters a driver should run a round of soon: a batch job
// of theirs ended, or they were just created.
type kicks struct {
	mu      sync.Mutex
	pending map[string]bool
	wake    chan struct{}
}

func (k *kicks) init() {
	k.pending, k.wake = map[string]bool{}, make(chan struct{}, 1)
}

// kick asks for a round of scatter id soon.
func (k *kicks) kick(id string) {
	k.mu.Lock()
	k.pending[id] = true
	k.mu.Unlock()
	select {
	case k.wake <- struct{}{}:
	default:
	}
}

// take returns the kicked scatters and forgets them.
func (k *kicks) take() []string {
	k.mu.Lock()
	defer k.mu.Unlock()
	ids := make([]string, 0, len(k.pending))
	for id := range k.pending {
		ids = append(ids, id)
	}
	clear(k.pending)
	return ids
}
