package s3blob

// SetCopyLimit changes the largest blob copied in one request, and the
// part size of larger copies.
func SetCopyLimit(s *Store, limit, part int64) { s.copyLimit, s.copyPartSize = limit, part }
