// Package heartbeat maintains the heartbeat Leases: one
// coordination.k8s.io Lease per Kafka cluster and checkInterval, in the
// manager's namespace, whose spec.renewTime says when every policy naming
// it was last re-proved. The policy reconciler names the Lease in
// status.heartbeat (Leases.Reference) and confirms each proof it wrote or
// kept (Leases.Confirm); the leader renews a Lease once all of its
// policies are confirmed. The webhook takes a proof as fresh by the later
// of its checkedAt and its Lease's renewTime (internal/freshness).
package heartbeat
