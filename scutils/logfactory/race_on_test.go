//go:build race

package logfactory

// raceOn: the race detector drops sync.Pool items at random, so pooled
// buffers are allocated again now and then.
const raceOn = true
