// Package proof decides whether a consumer group can lose data to retention.
//
// It is pure: no I/O, no clocks, no Kubernetes. Evaluate takes an
// Observation gathered by internal/kafka, a Policy, and the time "now", and
// returns a Result. Every clause is a small function returning its condition
// and violations, in the spirit of cert-manager's policy chain.
package proof

import "time"

// Verdict is the overall outcome of a proof.
type Verdict string

const (
	// Proven: every clause holds; the group can be down for the recovery
	// window and resume without losing a record.
	Proven Verdict = "Proven"
	// Violated: at least one clause is shown to fail with the facts at hand.
	Violated Verdict = "Violated"
	// Unknown: a fact the proof needs could not be read. In Deny mode this
	// is treated like Violated (fail closed).
	Unknown Verdict = "Unknown"
)

// Clause (condition) types. These are an API: they appear as
// metav1.Condition types in a policy's status.
const (
	ClauseKafkaReachable        = "KafkaReachable"
	ClauseRetentionCoversWindow = "RetentionCoversWindow"
	ClauseGroupOffsetsRetained  = "GroupOffsetsRetained"
	ClauseOffsetsInRange        = "OffsetsInRange"
	ClauseReady                 = "Ready"
)

// ClauseTypes lists the clause types in evaluation order, Ready last.
var ClauseTypes = []string{
	ClauseKafkaReachable,
	ClauseRetentionCoversWindow,
	ClauseGroupOffsetsRetained,
	ClauseOffsetsInRange,
	ClauseReady,
}

// Reasons. CamelCase, stable, documented in docs/concepts.md.
const (
	// KafkaReachable
	ReasonBrokerUnreachable         = "BrokerUnreachable"
	ReasonAuthenticationFailed      = "AuthenticationFailed"
	ReasonAuthorizationFailed       = "AuthorizationFailed"
	ReasonTopicNotFound             = "TopicNotFound"
	ReasonBootstrapServerNotAllowed = "BootstrapServerNotAllowed"

	// RetentionCoversWindow
	ReasonRetentionUnreadable         = "RetentionUnreadable"
	ReasonInfiniteRetentionNotAllowed = "InfiniteRetentionNotAllowed"
	ReasonRetentionShorterThanWindow  = "RetentionShorterThanWindow"
	ReasonSizeBoundedRetention        = "SizeBoundedRetention"
	ReasonCompactedTopic              = "CompactedTopic" // holds: compact-only topic
	ReasonRetentionCoversWindow       = "RetentionCoversWindow"

	// GroupOffsetsRetained
	ReasonOffsetsRetentionUnreadable        = "OffsetsRetentionUnreadable"
	ReasonOffsetsRetentionShorterThanWindow = "OffsetsRetentionShorterThanWindow"
	ReasonGroupOffsetsRetained              = "GroupOffsetsRetained"

	// OffsetsInRange
	ReasonCommittedOffsetExpired      = "CommittedOffsetExpired"
	ReasonNoCommittedOffset           = "NoCommittedOffset"
	ReasonCommittedOffsetBeyondLogEnd = "CommittedOffsetBeyondLogEnd"
	ReasonOffsetsInRange              = "OffsetsInRange"

	// KafkaReachable holds / Ready holds
	ReasonReachable = "Reachable"
	ReasonProven    = "Proven"
	// ReasonNotEvaluated: a clause that could not be evaluated because an
	// earlier fact was missing (its condition status is Unknown).
	ReasonNotEvaluated = "NotEvaluated"
)

// Warning types (reported, never a reason to deny on their own).
const (
	WarningRecoveryHeadroom     = "recoveryHeadroom"
	WarningGroupOffsetsExpireIn = "groupOffsetsExpireIn"
)

// Group protocols, as Kafka names them.
const (
	ProtocolClassic  = "classic"
	ProtocolConsumer = "consumer" // KIP-848
)

// Group states the proof cares about (Kafka's own names).
const (
	GroupStateEmpty  = "Empty"
	GroupStateStable = "Stable"
	GroupStateDead   = "Dead"
)

// NoOffset marks a partition without a committed offset.
const NoOffset int64 = -1

// Policy is what the proof needs of a ConsumerRetentionPolicy, free of
// Kubernetes types.
type Policy struct {
	// UID identifies the policy; it feeds the proofID so two policies with
	// the same gap get different IDs.
	UID                       string
	GroupID                   string
	Topics                    []string
	RecoveryWindow            time.Duration
	AllowInfiniteRetention    bool
	AllowSizeBoundedRetention bool
}

// Kafka API names the observer reports in Failure.API: a contract between
// internal/kafka and the proof, which decides from them what facts a
// failure cost.
const (
	APIMetadata              = "Metadata"
	APIDescribeConfigs       = "DescribeConfigs" // topic configs (Topic set) or broker configs (Topic empty)
	APIListOffsets           = "ListOffsets"
	APIOffsetFetch           = "OffsetFetch"
	APIDescribeGroups        = "DescribeGroups"
	APIConsumerGroupDescribe = "ConsumerGroupDescribe"
	APIFetch                 = "Fetch"
)

// Failure is a request the observer could not complete. Each becomes a
// KafkaReachable violation; the verdict is at best Unknown.
type Failure struct {
	Reason    string // one of the KafkaReachable reasons
	API       string // Kafka API that failed, e.g. "OffsetFetch"; empty if none
	Topic     string // empty when not topic-specific
	Partition int32  // -1 when not partition-specific
	Message   string // human-readable; never contains credentials
}

// ConfigValue is a config entry as read from DescribeConfigs.
type ConfigValue struct {
	// Present is false when the broker's answer did not include the key.
	Present bool
	// Value is the raw string; Null for a null value.
	Value string
	Null  bool
}

// Observation is everything gathered from Kafka for one group and its topics
// at one moment.
type Observation struct {
	// ObservedAt is when the observation was taken.
	ObservedAt time.Time
	// Failures are requests that were not answered (or denied). A non-empty
	// list makes KafkaReachable fail.
	Failures []Failure

	// OffsetsRetentionMinutes is the broker setting offsets.retention.minutes
	// (the smallest over brokers). Present=false when unreadable.
	OffsetsRetentionMinutes ConfigValue

	Group  GroupObservation
	Topics []TopicObservation
}

// GroupObservation is the consumer group's state.
type GroupObservation struct {
	ID string
	// State as Kafka reports it (Empty, Stable, PreparingRebalance, Dead, ...);
	// empty when unknown.
	State string
	// Protocol is "classic" or "consumer" (KIP-848); empty when unknown.
	Protocol string
	// EmptySince is when the group was first seen Empty (classic groups'
	// offsets expire offsets.retention.minutes after that). Zero when the
	// group is not empty or the time is not known.
	EmptySince time.Time
}

// TopicObservation is one topic's configuration and partitions.
type TopicObservation struct {
	Name           string
	RetentionMs    ConfigValue
	RetentionBytes ConfigValue
	CleanupPolicy  ConfigValue
	Partitions     []PartitionObservation
}

// PartitionObservation is one partition's offsets.
type PartitionObservation struct {
	Partition int32
	// LogStart is the log start offset (low watermark).
	LogStart int64
	// LogEnd is the log end offset (high watermark).
	LogEnd int64
	// Committed is the group's committed offset, or NoOffset (-1).
	Committed int64
	// CommittedTimestamp is the timestamp of the record at the committed
	// offset; zero when unknown or when the consumer is caught up.
	CommittedTimestamp time.Time
	// LastCommit is when the offset was last committed, when the broker
	// tells (KIP-848 groups expire each offset this long after its last
	// commit); zero when unknown.
	LastCommit time.Time
}

// Condition is one clause's result, shaped like metav1.Condition without
// depending on it.
type Condition struct {
	Type    string
	Status  ConditionStatus
	Reason  string
	Message string
}

// ConditionStatus mirrors metav1.ConditionStatus.
type ConditionStatus string

const (
	ConditionTrue    ConditionStatus = "True"
	ConditionFalse   ConditionStatus = "False"
	ConditionUnknown ConditionStatus = "Unknown"
)

// Violation is one failing fact.
type Violation struct {
	Clause    string
	Reason    string
	Topic     string // empty when not topic-specific
	Partition int32  // -1 when not partition-specific
	Message   string
	// Numbers a person needs, when they apply (-1 otherwise for offsets).
	Committed      int64
	LogStart       int64
	LogEnd         int64
	ExpiredRecords int64
}

// Warning is reported and never denies on its own.
type Warning struct {
	Type    string
	Message string
	// Duration is the headroom or time left it speaks of.
	Duration time.Duration
}

// PartitionResult is the per-partition line of the proof.
type PartitionResult struct {
	Topic          string
	Partition      int32
	Committed      int64 // NoOffset when none
	LogStart       int64
	LogEnd         int64
	Lag            int64 // logEnd - committed when committed in range; else logEnd - logStart
	ExpiredRecords int64 // logStart - committed when committed < logStart
	// Headroom: timestamp(record at committed) + retention.ms - now;
	// HasHeadroom is false when it cannot be computed (infinite/compact
	// retention or unknown timestamps).
	Headroom    time.Duration
	HasHeadroom bool
	Verdict     Verdict
	Reason      string // the failing reason, empty when in range
}

// PartitionSummary counts partitions by outcome.
type PartitionSummary struct {
	Total     int
	InRange   int
	Expired   int
	Missing   int
	BeyondEnd int
}

// Result is the proof.
type Result struct {
	Verdict Verdict
	// ProofID is a short stable hash of the failing facts; empty when Proven.
	ProofID string
	// Conditions, one per clause in ClauseTypes order (Ready last).
	Conditions []Condition
	// Violations sorted by clause order, topic, partition, reason.
	Violations []Violation
	Warnings   []Warning
	Partitions []PartitionResult // sorted by topic, partition
	Summary    PartitionSummary
	// ExpiredRecords is the sum over partitions.
	ExpiredRecords int64
	// RecoveryHeadroom is the smallest partition headroom.
	RecoveryHeadroom    time.Duration
	HasRecoveryHeadroom bool
	// GroupOffsetsExpireIn is how long until the group's offsets expire,
	// when the group is empty.
	GroupOffsetsExpireIn    time.Duration
	HasGroupOffsetsExpireIn bool
}
