//go:build race

package traces

const raceEnabled = true
