package redisscripts

// RunByNodeWith is RunByNode with nodeOf standing for the client's slot
// map (a stale map, in tests).
var RunByNodeWith = runByNode
