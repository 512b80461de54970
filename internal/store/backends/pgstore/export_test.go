package pgstore

import "context"

// Watching is how many keys the store's hub keeps for waiters.
func Watching(s *Store) int { return s.hub.Len() }

// NoticeStopped runs one look for stopped servers, as the heartbeat does,
// given the servers running at the last look, and returns those running now.
func NoticeStopped(s *Store, before []string) []string {
	was := map[string]bool{}
	for _, id := range before {
		was[id] = true
	}
	var out []string
	for id := range s.noticeStopped(context.Background(), was) {
		out = append(out, id)
	}
	return out
}
