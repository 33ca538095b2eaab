package plugin

// MapLeaves is mapLeaves, for the conformance test's encoding of infinities.
var MapLeaves = mapLeaves
