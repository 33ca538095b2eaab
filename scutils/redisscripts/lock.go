package redisscripts

import "time"

// LockRenew is lock_renew.lua's keys and arguments: Lock expires TTL from
// now if Token still holds it.
type LockRenew struct {
	Lock, Token string
	TTL         time.Duration
}

// Script is lock_renew.lua.
func (LockRenew) Script() *Script { return lockRenew }

func (a LockRenew) encode() ([]string, []any) {
	return []string{a.Lock}, []any{a.Token, a.TTL.Milliseconds()}
}

// LockRelease is lock_release.lua's keys and arguments: Lock is deleted if
// Token still holds it.
type LockRelease struct{ Lock, Token string }

// Script is lock_release.lua.
func (LockRelease) Script() *Script { return lockRelease }

func (a LockRelease) encode() ([]string, []any) { return []string{a.Lock}, []any{a.Token} }

// RequestDelete is request_delete.lua's keys and arguments: the request at
// Key is deleted if it still holds Value, and its Failures count anyway.
type RequestDelete struct{ Key, Failures, Value string }

// Script is request_delete.lua.
func (RequestDelete) Script() *Script { return requestDelete }

func (a RequestDelete) encode() ([]string, []any) {
	return []string{a.Key, a.Failures}, []any{a.Value}
}
