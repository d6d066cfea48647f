//go:build !race

package pgproxy

const raceEnabled = false
