//go:build !race

package natsjobs

const raceEnabled = false
