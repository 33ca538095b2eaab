package scheduler

// ClusterAckSet is clusterAckSet, for the tests.
const ClusterAckSet = clusterAckSet
