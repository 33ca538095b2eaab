package monitor

// Launched returns how many batches, and messages in them, the monitor has
// launched into Redis, landed or not: with none processed, what it has in
// flight.
func (m *Monitor) Launched() (batches, messages int64) {
	return m.launched.batches.Load(), m.launched.messages.Load()
}

// HeldBytes is what Run's read-ahead budget holds now: the messages read
// from Kafka and not yet stored and reported (0 before Run starts).
func (m *Monitor) HeldBytes() int64 {
	if b := m.budget.Load(); b != nil {
		return b.heldBytes()
	}
	return 0
}

// HeldCost is what a message of n bytes counts for in the budget.
func HeldCost(n int) int64 { return int64(n) + messageOverhead }
