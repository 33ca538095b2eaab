//go:build !race

package logfactory

// raceOn: see race_on_test.go.
const raceOn = false
