// Package webhook is retention-guard's validating admission webhook: it
// refuses rollouts of Kafka consumers (apps/v1 Deployments and
// StatefulSets, batch/v1 Jobs and CronJobs, Argo Rollouts) while their
// ConsumerRetentionPolicy cannot prove that the consumer group resumes
// without silently losing records.
//
// # Batch consumers
//
// A batch consumer (seed 003's daily settlement run) starts consumers each
// time a Job starts, so every Job start is a rollout: a Job created not
// suspended — by hand or by the CronJob controller for a scheduled run — or
// unsuspended. A CronJob is a rollout when it would schedule runs: created
// not suspended, unsuspended, or its spec.jobTemplate changed while not
// suspended; a suspended CronJob is created and edited freely, and a
// schedule change is not a rollout (each run is judged when its Job is
// created). Matching uses the Job's pod template labels, or the CronJob's
// spec.jobTemplate.spec.template labels, old and new. A refused run of a
// CronJob (a Job whose controller ownerReference is a CronJob) is named as
// such in the denial, which the CronJob controller records as its
// FailedCreate event, and the RolloutDenied event on the policy names the
// CronJob and has it as its related object. For a CronJob, the override
// annotation is read from spec.jobTemplate.metadata.annotations — the
// annotations its Jobs are created with — so one annotation covers the
// CronJob's edit and the runs it then starts; the denial prints the
// `kubectl patch cronjob` that sets it.
//
// # Argo Rollouts
//
// An argoproj.io/v1alpha1 Rollout (and its scale subresource) is guarded
// like a Deployment: created with replicas ≠ 0, scaled from zero,
// unpaused (spec.paused), or its pod template changed while replicas > 0.
// A Rollout with spec.workloadRef has no template of its own: its pods come
// from the referenced apps/v1 Deployment's template, which the webhook
// reads (WorkloadReader) and matches and judges instead; a changed
// workloadRef counts as a template change. A workloadRef naming anything
// but an apps/v1 Deployment, or a Deployment that cannot be read, is
// refused (fail closed). The chart installs the Rollout rule only where
// the Rollout CRD is (argoRollouts.enabled).
//
// A request goes through five small steps, each in its own file:
//
//   - decode.go: what admission reads of the workload, in one pass over the
//     request's object (for a scale request, the stored workload; for a
//     Rollout with spec.workloadRef, the referenced Deployment's template).
//   - rollout.go: is this a rollout, i.e. would it start consumers? Anything
//     else (scale down, scale within >0, metadata, status) is allowed
//     without reading a policy: the guard never blocks an incident response.
//   - match.go: which policies in the workload's namespace select the pod
//     template's labels, new or old (dropping a label does not escape).
//   - decision.go (with consumer.go and freshness.go): per matching policy,
//     the proof from status when fresh, else a bounded live re-check; then
//     the consumer clause against the pod template; then enforcement and the
//     override annotation. Pure functions, table-tested.
//   - message.go (with wayout.go and layout.go): the denial message,
//     warnings and event notes.
//
// handler.go gathers (policies from the informer cache, ConfigMaps, live
// checks) and calls the pure steps; setup.go wires it into a manager.
//
// # Override semantics
//
// The annotation retentionguard.io/override-proof on the workload (the new
// object; for a scale request, the workload as stored; for a CronJob, its
// job template) lets a rollout
// through a Deny policy knowingly. Its value is one proofID, or several
// separated by commas when more than one policy fails. It is accepted only
// when every Deny policy that would refuse the rollout fails on the Kafka
// side alone and its current proofID is among the values. A stale ID is
// refused with a message naming the current one. The consumer clause (the
// offset-reset and auto-commit environment variables) cannot be overridden:
// the person rolling out controls those settings, and fixing them is the way
// out. Each accepted use is recorded as a ProofOverridden event on the
// policy naming the requesting user (never for dry-run requests).
//
// The denial says how to set the annotation: `kubectl annotate` on the
// stored workload, `kubectl patch cronjob` on a CronJob's job template (also
// for a refused run of a CronJob), and for a refused CREATE, which stored
// nothing to annotate, the line to add to the manifest's
// metadata.annotations (a CronJob's spec.jobTemplate.metadata.annotations)
// before applying it again.
//
// When the webhook itself cannot obtain a proof (status proof missing or
// stale and the live check failed or is not configured) the verdict is
// Unknown with a proofID the webhook derives deterministically from the
// policy UID, generation, the reason and the stale proof's checkedAt, so it
// stays the same while the situation does and changes when it moves.
//
// # Freshness and heartbeat Leases
//
// The manager writes a policy's status only when its proof changes; that
// an unchanged proof was re-checked is said by a heartbeat Lease
// (coordination.k8s.io, one per Kafka cluster and checkInterval, in the
// manager's namespace), which status.heartbeat names. The leader renews a
// Lease once every policy naming it has been re-proved, to the time of the
// oldest of those observations, so its renewTime never claims more than is
// true.
//
// A status proof is fresh (internal/freshness, the one rule) when
// status.observedGeneration equals the policy's metadata.generation,
// status.proof.checkedAt is set, and the later of checkedAt and the
// renewTime of the heartbeat Lease status.heartbeat names lies within
// 2 × spec.checkInterval + 30s before now, and at most 30s after it (clock
// skew). A Lease that is missing, has no renewTime or cannot be read
// (Options.Heartbeats: the manager's cache, holding only heartbeat Leases;
// nil: none) leaves checkedAt alone to say it. A stale proof's detail names
// what confirmed it last (checkedAt, or the Lease) and how long ago.
//
// A rollout that starts consumers that were not running (a create with
// replicas, a scale from zero, an unpause, an unsuspend, a Job's create)
// is judged on a live check whenever a LiveChecker is configured, however
// fresh the status: a start is exactly when a stale Proven lets a consumer
// skip records. Other rollouts (a template change; any rollout of a
// CronJob, which starts nothing until its Jobs are created) use a fresh
// status proof, else the LiveChecker, bounded by Options.LiveCheckTimeout;
// without a LiveChecker, or when the check fails or times out, the proof
// is Unknown, which a Deny policy refuses.
//
// # ConfigMaps and Secrets
//
// Values given through valueFrom.configMapKeyRef and envFrom.configMapRef
// are read through Options.ConfigMapReader (the manager's direct API reader
// in Setup: fresh, so a ConfigMap applied together with the Deployment is
// seen, and no cluster-wide ConfigMap informer). A missing ConfigMap or key
// is a violation (OffsetResetUnresolvable) unless the reference is
// optional, in which case it sets nothing. Secrets are never read: a
// variable that comes, or may come, from a Secret is unresolvable; declare
// it under env or in a ConfigMap.
package webhook
