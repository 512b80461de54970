//go:build race

package token

// raceObjects is what the race detector adds to the objects a call makes
// (measured: two for Sign and for Verify alike), and one more: under the
// race detector a sync.Pool drops what is put into it at random, so now
// and then a call makes its pooled MAC again, and the average over a run
// comes out one higher in about a quarter of runs.
const raceObjects = 3
