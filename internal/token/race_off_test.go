//go:build !race

package token

// raceObjects is what the race detector adds to the objects a call makes:
// none without it.
const raceObjects = 0
