package cli

// RefuseCluster is refuseCluster, for the tests.
var RefuseCluster = refuseCluster
