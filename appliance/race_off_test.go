//go:build !race

package appliance

const raceEnabled = false
