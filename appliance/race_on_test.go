//go:build race

package appliance

// raceEnabled: the race detector allocates, and sync.Pool drops items at
// random under it, so allocation tests skip.
const raceEnabled = true
