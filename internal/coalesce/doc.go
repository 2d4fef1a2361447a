// Package coalesce shares one Kafka observation pass among every policy
// and connection that reads the same Kafka cluster with the same
// credentials.
//
// A reconciler asks for an observation no older than it needs
// (Coalescer.RequestSince); it never waits on Kafka. A stale or missing
// observation schedules one pass per connection, for all the targets
// registered on it, after a short linger that gathers the requests of the
// same moment; when the pass completes, the owners whose targets it
// observed are notified and reconcile again with it. A connection nobody
// asks for is forgotten (its client closed) after the linger. The webhook's
// live check uses ObserveNow: one pass for one target, bounded by its
// context, sharing the connection's client; at most Options.LiveChecks of
// them run on one connection at once, so a cluster whose passes fell
// behind is not also buried under one-group passes (a caller beyond them
// waits for a slot, then gets a BusyError).
//
// Nothing here survives a restart: a new process registers each policy on
// its first reconcile and observes every connection once before its first
// proof.
package coalesce
