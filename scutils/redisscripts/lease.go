package redisscripts

import "strconv"

// LeaseOwner is lease_owner.lua's keys and arguments: Owner's deadline in
// Owners is now + TTL; with Renew only when it has one (it was not reaped).
type LeaseOwner struct {
	Owners string
	// TTL is in seconds, as text (formatted once by its holder).
	TTL   string
	Owner string
	Renew bool
}

// Script is lease_owner.lua.
func (LeaseOwner) Script() *Script { return leaseOwner }

func (a LeaseOwner) encode() ([]string, []any) {
	mode := "register"
	if a.Renew {
		mode = "renew"
	}
	return []string{a.Owners}, []any{a.TTL, a.Owner, mode}
}

// LeaseRequeue is lease_requeue.lua's keys and arguments: lease LeaseID
// (in the records hash Records) ends and Member is queued at Score in
// Queue, only while the lease is held.
type LeaseRequeue struct {
	Records, Queue string
	LeaseID        string
	Score          float64
	Member         string
}

// Script is lease_requeue.lua.
func (LeaseRequeue) Script() *Script { return leaseRequeue }

func (a LeaseRequeue) encode() ([]string, []any) {
	return []string{a.Records, a.Queue}, []any{a.LeaseID, strconv.FormatFloat(a.Score, 'f', -1, 64), a.Member}
}

// LeaseReap is lease_reap.lua's keys and arguments: the leases of up to Max
// owners past their deadline in Owners go back to their queues.
type LeaseReap struct {
	Owners, Records string
	Max             int
}

// Script is lease_reap.lua.
func (LeaseReap) Script() *Script { return leaseReap }

func (a LeaseReap) encode() ([]string, []any) { return []string{a.Owners, a.Records}, []any{a.Max} }

// LeaseRestore is lease_restore.lua's keys and arguments: the leases IDs
// go back to their queues, or, without IDs, up to Max leases of the
// earlier form (the sorted set Legacy) past their deadline.
type LeaseRestore struct {
	Legacy, Records string
	IDs             []string
	Max             int
}

// Script is lease_restore.lua.
func (LeaseRestore) Script() *Script { return leaseRestore }

func (a LeaseRestore) encode() ([]string, []any) {
	keys := []string{a.Legacy, a.Records}
	if len(a.IDs) == 0 {
		return keys, []any{"expired", a.Max}
	}
	args := make([]any, 0, len(a.IDs)+1)
	args = append(args, "ids")
	for _, id := range a.IDs {
		args = append(args, id)
	}
	return keys, args
}
