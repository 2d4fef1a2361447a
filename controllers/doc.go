// Package controllers holds the reconcilers, and their wiring, that keep
// every ConsumerRetentionPolicy's proof current and every
// ClusterKafkaConnection's and KafkaConnection's view of its cluster
// (brokers, offsets retention, the groups no policy guards).
//
// Each reconciler has the same shape: gather (a policy through
// internal/gather, a connection through the Coalescer's cluster pass),
// compute the status (pure: computeStatus, computeConnectionStatus, with
// the write rule of internal/writerule), and summarize once in a defer
// (summarizeAndPatch: one status patch, then the result processors; a
// policy's: heartbeat confirmation, metrics, events; a connection's:
// metrics, its Ready event). What a restart of this
// process costs is in docs/architecture.md.
package controllers
