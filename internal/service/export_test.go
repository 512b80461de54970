package service

// SetMaxInlineResults sets how many bytes of results a gather's input holds
// when they were written to S3 too, until the returned func restores it.
func SetMaxInlineResults(n int64) (restore func()) {
	old := maxInlineResults.Swap(n)
	return func() { maxInlineResults.Store(old) }
}
