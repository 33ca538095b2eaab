package monitor

// Launched returns how many batches, and messages in them, the monitor has
// launched into Redis, landed or not: with none processed, what it has in
// flight.
func (m *Monitor) Launched() (batches, messages int64) {
	return m.launched.batches.Load(), m.launched.messages.Load()
}
