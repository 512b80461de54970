//go:build race

package token

// raceObjects is what the race detector adds to the objects a call makes
// (measured: two for Sign and for Verify alike).
const raceObjects = 2
