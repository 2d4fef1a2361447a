package webhook

// Reasons the webhook reports in denial messages, warnings and events, in
// addition to the proof's own (internal/proof). CamelCase and stable: they
// are an API, documented in docs/concepts.md.
const (
	// ReasonOffsetResetNotDeclared: the consumer container does not set the
	// offset-reset variable (spec.consumer.offsetResetEnv), so the client
	// falls back to its default (latest for most clients) and skips silently.
	ReasonOffsetResetNotDeclared = "OffsetResetNotDeclared"
	// ReasonOffsetResetSilent: the variable is set to a value with which a
	// client resets silently (earliest, latest, smallest, by_duration:...,
	// empty): the client jumps over an expired position instead of failing.
	ReasonOffsetResetSilent = "OffsetResetSilent"
	// ReasonOffsetResetRejected: the variable is set to a value no client
	// fails loudly with in that spelling: NONE or None (the Java client
	// accepts only lower-case none: a ConfigException), or a value no
	// client accepts at all. The consumer would not start.
	ReasonOffsetResetRejected = "OffsetResetRejected"
	// ReasonOffsetResetNotProvable: the group is a Kafka Streams group,
	// whose per-topic reset policies (set in its topology, invisible to the
	// webhook) beat auto.offset.reset: the variable proves nothing.
	ReasonOffsetResetNotProvable = "OffsetResetNotProvable"
	// ReasonOffsetResetUnresolvable: the value cannot be known from the pod
	// template: a ConfigMap or key that does not exist, a Secret (never
	// read), a field reference or a $(VAR) expansion.
	ReasonOffsetResetUnresolvable = "OffsetResetUnresolvable"
	// ReasonAutoCommitEnabled: spec.consumer.autoCommitEnv is set to a value
	// other than false: auto commit advances offsets past unprocessed
	// records.
	ReasonAutoCommitEnabled = "AutoCommitEnabled"
	// ReasonAutoCommitNotDeclared: spec.consumer.autoCommitEnv is named by
	// the policy but not set in the container (clients default to true).
	ReasonAutoCommitNotDeclared = "AutoCommitNotDeclared"
	// ReasonAutoCommitUnresolvable: like ReasonOffsetResetUnresolvable, for
	// the auto-commit variable.
	ReasonAutoCommitUnresolvable = "AutoCommitUnresolvable"
	// ReasonConsumerContainerNotFound: spec.consumer.container names a
	// container the pod template does not have.
	ReasonConsumerContainerNotFound = "ConsumerContainerNotFound"

	// ReasonProofMissing: the policy has no proof in its status yet and no
	// live check could make one. Verdict Unknown.
	ReasonProofMissing = "ProofMissing"
	// ReasonProofStale: the status proof is older than
	// 2 × checkInterval + 30s, or describes an older generation of the
	// policy, and no live check is configured. Verdict Unknown.
	ReasonProofStale = "ProofStale"
	// ReasonLiveCheckFailed: the status proof was missing or stale and the
	// live re-check failed or did not answer within its deadline. Verdict
	// Unknown.
	ReasonLiveCheckFailed = "LiveCheckFailed"
)

// Event reasons, recorded on the policy (never for dry-run requests).
const (
	// EventRolloutDenied: a Deny policy refused a rollout.
	EventRolloutDenied = "RolloutDenied"
	// EventRolloutWarned: a Warn policy, or a Deny policy Violated by risks
	// only, let a rollout through with warnings.
	EventRolloutWarned = "RolloutWarned"
	// EventRolloutAudited: an Audit policy would have refused a rollout.
	EventRolloutAudited = "RolloutAudited"
	// EventProofOverridden: a rollout went through a failing Deny policy
	// with the retentionguard.io/override-proof annotation; the event names
	// the requesting user.
	EventProofOverridden = "ProofOverridden"
)
