//go:build race

package tcpproxy

const raceEnabled = true
