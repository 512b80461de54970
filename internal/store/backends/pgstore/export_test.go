package pgstore

// Watching is how many keys the store's hub keeps for waiters.
func Watching(s *Store) int { return s.hub.Len() }
