// Package proof decides whether a consumer group can lose data to retention.
//
// It is pure: no I/O, no clocks, no Kubernetes. Evaluate takes an
// Observation gathered by internal/kafka, a Policy, and the time "now", and
// returns a Result. Every clause is a small function returning its condition
// and violations, in the spirit of cert-manager's policy chain.
package proof

import (
	"net/netip"
	"time"
)

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
	// ClauseCursorInRange: the business cursor (spec.cursor) lies inside
	// the retained log; present only when the policy declares a cursor.
	ClauseCursorInRange = "CursorInRange"
	ClauseReady         = "Ready"
)

// ClauseTypes lists every clause type in evaluation order, Ready last. A
// proof has the conditions Clauses returns for its policy: CursorInRange
// only when the policy declares a cursor.
var ClauseTypes = []string{
	ClauseKafkaReachable,
	ClauseRetentionCoversWindow,
	ClauseGroupOffsetsRetained,
	ClauseOffsetsInRange,
	ClauseCursorInRange,
	ClauseReady,
}

// Clauses lists the clause types of a proof for p, in evaluation order,
// Ready last.
func Clauses(p Policy) []string {
	if p.Cursor != nil {
		return ClauseTypes
	}
	return []string{ClauseKafkaReachable, ClauseRetentionCoversWindow, ClauseGroupOffsetsRetained, ClauseOffsetsInRange, ClauseReady}
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
	// ReasonRecoveryHeadroomShorterThanWindow: the oldest record the group
	// has not consumed (at its committed offset) is deleted by retention
	// before now + recoveryWindow: a lagging group that goes down now loses
	// it before its window ends (Violated; the violation's proofID stays the
	// same while the same partitions lag, so a faster consumer can ship
	// with the override annotation).
	ReasonRecoveryHeadroomShorterThanWindow = "RecoveryHeadroomShorterThanWindow"
	// ReasonTombstoneRetentionShorterThanWindow: a compacting topic's
	// delete.retention.ms is shorter than the window: the log cleaner drops
	// tombstones that long after they are written, so a consumer down
	// longer never sees the deletes and keeps stale keys forever.
	ReasonTombstoneRetentionShorterThanWindow = "TombstoneRetentionShorterThanWindow"
	// ReasonTombstoneHeadroomShorterThanWindow: on a compacting topic, a
	// tombstone at or after a lagging group's committed offset (at the
	// business cursor with resumeFrom Cursor) may be dropped by the log
	// cleaner before now + recoveryWindow: it was written no earlier than
	// the record there (its timestamp, less how far ahead a CreateTime
	// producer may stamp), and the cleaner keeps it delete.retention.ms
	// from the cleaning that first saw it, which follows the write. A
	// group that goes down now may never see the delete and keep the key
	// forever. A risk like RecoveryHeadroomShorterThanWindow: nothing is
	// lost yet, the consumer catching up is the way out (Violated).
	ReasonTombstoneHeadroomShorterThanWindow = "TombstoneHeadroomShorterThanWindow"
	// ReasonRecordTimestampUnread: a lagging partition's committed record
	// was not dated (Fetch needs Read on the topic; a tiered broker may
	// answer a remote read with no records; the Fetch failed) and
	// ListOffsets by timestamp (now + recoveryWindow − retention.ms,
	// Describe only) did not decide either: nothing shows the record
	// outlives the window (Unknown, fail closed). See undated.go.
	ReasonRecordTimestampUnread = "RecordTimestampUnread"
	// ReasonTombstonesUnread: on a compacting topic, a lagging group's
	// partition (at the business cursor with resumeFrom Cursor) whose
	// tombstones ahead of it were neither all read (the observer's scan
	// stopped short of the high watermark, or could not read the topic)
	// nor dated by the records' timestamps (not read, or stamped by
	// producers that message.timestamp.after.max.ms does not bound, Kafka
	// 3.x's default): nothing shows the log cleaner keeps them until the
	// window ends (Unknown, fail closed). See tombstone.go.
	ReasonTombstonesUnread = "TombstonesUnread"

	// GroupOffsetsRetained
	ReasonOffsetsRetentionUnreadable        = "OffsetsRetentionUnreadable"
	ReasonOffsetsRetentionShorterThanWindow = "OffsetsRetentionShorterThanWindow"
	ReasonGroupOffsetsRetained              = "GroupOffsetsRetained"
	// ReasonOffsetsExpireBeforeWindow: an offset that expires per commit
	// (simple, KIP-848 and streams groups, unsubscribed topics) was last
	// committed, by the exact time read from __consumer_offsets, so long
	// ago that it expires before now + recoveryWindow.
	ReasonOffsetsExpireBeforeWindow = "OffsetsExpireBeforeWindow"
	// ReasonOffsetsMayExpireBeforeWindow: the same, when the commit time is
	// only bounded from below (record timestamps, a change the observer
	// witnessed) or unknown: the proof cannot show the offset survives the
	// window (Unknown, fail closed).
	ReasonOffsetsMayExpireBeforeWindow = "OffsetsMayExpireBeforeWindow"
	// ReasonGroupTypeUnknown: the group has committed offsets but no
	// describe call knows it (a streams group on a broker the observer
	// could not ask, or a group deleted meanwhile): the clock its offsets
	// expire on is unknown (Unknown, fail closed).
	ReasonGroupTypeUnknown = "GroupTypeUnknown"
	// ReasonEmptyGroupOffsetsExpireBeforeWindow: an Empty classic group's
	// offsets expire offsets.retention.minutes after it became Empty, and
	// that is before now + recoveryWindow: the group cannot stay down for
	// its window from now (it has been down since then). Start the
	// consumer (a member stops the clock). Violated.
	ReasonEmptyGroupOffsetsExpireBeforeWindow = "EmptyGroupOffsetsExpireBeforeWindow"
	// ReasonEmptyGroupOffsetsMayExpireBeforeWindow: the same, when the time the
	// group became Empty is not known well enough to show that its offsets
	// outlive now + recoveryWindow: not known at all (a one-shot check, a
	// manager that started while the group was Empty, without
	// readOffsetsTopic), or known only to be after a time from which the
	// offsets would expire before the window ends. The offsets may expire
	// any moment within offsets.retention.minutes: Unknown (fail closed),
	// and a risk like the one above (nothing lost yet; a start is the way
	// out).
	ReasonEmptyGroupOffsetsMayExpireBeforeWindow = "EmptyGroupOffsetsMayExpireBeforeWindow"
	// ReasonExplicitOffsetExpiryBeforeWindow: an offset was committed with
	// an explicit retention time (OffsetCommit v2–v4 retention_time, old
	// Sarama and kafka-go clients), read from __consumer_offsets: it
	// expires at that time once its group is Empty, whatever the group's
	// clock, and that is before now + recoveryWindow. Violated.
	ReasonExplicitOffsetExpiryBeforeWindow = "ExplicitOffsetExpiryBeforeWindow"
	// ReasonShareGroupOffsetsRetained: a share group (KIP-932) keeps its
	// progress, the share-partition start offset, in the share coordinator's
	// state: offsets.retention.minutes does not apply to it (holds).
	ReasonShareGroupOffsetsRetained = "ShareGroupOffsetsRetained"

	// OffsetsInRange
	ReasonCommittedOffsetExpired      = "CommittedOffsetExpired"
	ReasonNoCommittedOffset           = "NoCommittedOffset"
	ReasonCommittedOffsetBeyondLogEnd = "CommittedOffsetBeyondLogEnd"
	ReasonOffsetsInRange              = "OffsetsInRange"
	// ReasonCommittedOffsetOfDeletedTopic: the committed offset was
	// written for another topic ID than the topic's (read from
	// __consumer_offsets, OffsetCommitValue v4, Kafka 4.1+): the topic was
	// deleted and recreated, and the offset points into the old topic's
	// log, not the records of this one (Violated).
	ReasonCommittedOffsetOfDeletedTopic = "CommittedOffsetOfDeletedTopic"
	// ReasonNoShareStartOffset: a share group has no share-partition start
	// offset (no share state) for a partition whose log no longer starts at
	// 0: nothing proves the group read what expired, and
	// share.auto.offset.reset decides silently where it starts (Violated).
	ReasonNoShareStartOffset = "NoShareStartOffset"
	// ReasonShareRecordsExpired: a share group's share-partition start
	// offset is below log start and more records are unacknowledged than
	// the retained log holds: at least that many expired before the group
	// acknowledged them (Kafka moves the SPSO up silently). Violated; the
	// partition's expiredRecords is that lower bound.
	ReasonShareRecordsExpired = "ShareRecordsExpired"
	// ReasonShareStartOffsetBelowLogStart: a share group's share-partition
	// start offset (as persisted, it can lag the acknowledgements) is below
	// log start and its unacknowledged records may lie below log start or
	// above it: the proof cannot tell whether any expired (Unknown).
	ReasonShareStartOffsetBelowLogStart = "ShareStartOffsetBelowLogStart"
	// ReasonResetToLatestSkipsRecords: a partition without a committed
	// offset (share group: without a share-partition start offset) holds
	// records, the group has committed on the topic's other partitions (a
	// partition added while it was down, or never read), and the reset
	// that decides where it starts is known to be latest (a share group's
	// share.auto.offset.reset, latest by default): when the consumers
	// start they begin at the log end and skip every record there
	// (skippedRecords = logEnd − logStart). Violated; committing an offset
	// for the partition, or share.auto.offset.reset=earliest, is the way
	// out.
	ReasonResetToLatestSkipsRecords = "ResetToLatestSkipsRecords"
	// ReasonOffsetResetMaySkipRecords: the same partition, when nothing
	// shows which reset the client uses (a consumer group without the
	// consumer clause: the Java client's default is latest; a share
	// group's share.auto.offset.reset unread, or by_duration): the
	// consumers may skip its records (Unknown, fail closed).
	ReasonOffsetResetMaySkipRecords = "OffsetResetMaySkipRecords"
	// ReasonCommittedOffsetDiverged: the committed offset carries no
	// leader epoch (kafka-consumer-groups --reset-offsets,
	// Admin.alterConsumerGroupOffsets, clients without KIP-320), and the
	// leader epoch the guard first saw it in ends, on the partition's
	// leader, below it (OffsetsForLeaderEpoch), the offset committed before
	// that sighting (__consumer_offsets): the log was truncated below the
	// group's position and grew back with other records. No consumer
	// validates an offset without an epoch: it resumes there silently and
	// skips the records now at the epoch's end to the committed offset.
	// Violated, a loss; the violation's divergedRecords is committed − the
	// epoch's end.
	ReasonCommittedOffsetDiverged = "CommittedOffsetDiverged"
	// ReasonCommittedEpochDiverged: the committed offset carries the leader
	// epoch it was read in (a KIP-320 client), which ends, on the
	// partition's leader, below it (OffsetsForLeaderEpoch): the log was
	// truncated below the group's position and grew back with other
	// records. The records the group read from the epoch's end to its
	// committed offset are gone from the log, but the Java consumer
	// validates the position on restart and rewinds to the epoch's end
	// (SubscriptionState.maybeCompleteValidation; it throws
	// LogTruncationException under auto.offset.reset=none): it skips
	// nothing it has not read. Violated, a risk (IsRisk); the violation's
	// divergedRecords is committed − the epoch's end.
	ReasonCommittedEpochDiverged = "CommittedEpochDiverged"
	// ReasonCommittedLeaderEpochUnknown: the committed offset carries a
	// leader epoch the partition's leader does not know (above its own,
	// UNDEFINED_EPOCH): a consumer stalls there, or resets by
	// auto.offset.reset; where it resumes cannot be proven (Unknown).
	ReasonCommittedLeaderEpochUnknown = "CommittedLeaderEpochUnknown"
	// ReasonCommittedOffsetOnDivergedLog: the committed offset carries no
	// leader epoch, so no consumer validates it, and the observer saw the
	// partition's log end go down below it since the commit: the records
	// the group read there may have been truncated and replaced (Unknown).
	ReasonCommittedOffsetOnDivergedLog = "CommittedOffsetOnDivergedLog"

	// CursorInRange (only with a business cursor, spec.cursor)
	//
	// ReasonCursorExpired: the business cursor is below log start: the
	// records between them expired before the business processed them.
	ReasonCursorExpired = "CursorExpired"
	// ReasonNoCursor: no cursor row for a partition whose log no longer
	// starts at 0: nothing proves the business processed what expired.
	ReasonNoCursor = "NoCursor"
	// ReasonCursorBeyondLogEnd: the cursor is past log end: the topic was
	// truncated or recreated below the business's position.
	ReasonCursorBeyondLogEnd = "CursorBeyondLogEnd"
	// ReasonCursorUnreadable: the cursor could not be read, or what was
	// read breaks the column contract (connection, authentication, query,
	// columns, NULLs, duplicate or unknown partitions, negative offsets,
	// too many rows): Unknown, fail closed.
	ReasonCursorUnreadable = "CursorUnreadable"
	// ReasonGroupAheadOfCursor: the group's committed offset is ahead of
	// the cursor (auto commit running ahead of processing, seed 003): a
	// consumer that resumes from the group's offsets (resumeFrom
	// GroupOffsets) skips records the business never processed.
	ReasonGroupAheadOfCursor = "GroupAheadOfCursor"
	ReasonCursorInRange      = "CursorInRange"

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
	// WarningRecordTimestamps: a CreateTime topic accepts record timestamps
	// older than retention.ms − recoveryWindow, so a record stamped that
	// old (a backfill, a mirror) is deleted sooner than the window after it
	// was written. Configuration advice: reported in status and by check,
	// not repeated on every admission.
	WarningRecordTimestamps = "recordTimestamps"
	// WarningOffsetsTopic: __consumer_offsets was to be read for exact
	// commit times and could not be (denied, not caught up): commit times
	// are bounded instead.
	WarningOffsetsTopic = "offsetsTopic"
	// WarningGroupOffsets: with resumeFrom Cursor the group's offsets do
	// not decide the verdict (they are a cache; the consumer restarts from
	// its cursor), but a clause about them fails: reported, so that the
	// person starting the consumer knows it must seek to its cursor.
	WarningGroupOffsets = "groupOffsets"
	// WarningSeekRequired: with Policy.ResetFailsLoudly, partitions without
	// a committed offset on a log that starts at 0 are proven (nothing
	// expired) but the client throws there instead of starting at 0
	// (auto.offset.reset=none: NoOffsetForPartitionException): the group
	// needs its offsets committed at the log start before the consumer
	// starts.
	WarningSeekRequired = "seekRequired"
	// WarningCronJobSchedule: a CronJob the policy selects runs (or,
	// suspended, stops) so that the group's offsets may expire between two
	// runs, or its pause between runs uses up the recovery window. Not
	// Evaluate's: internal/assemble adds it from the CronJobs the manager
	// gathered.
	WarningCronJobSchedule = "cronJobSchedule"
	// WarningScaledToZero: KEDA holds a workload the policy selects at
	// zero (a ScaledObject's target at 0 replicas, a ScaledJob between
	// Jobs): the group is Empty, its offsets count down, and KEDA starts
	// it again only on new lag. Duration is the time left before the
	// group's soonest offset may expire, when a clock runs. Not
	// Evaluate's: internal/assemble adds it from the KEDA objects the
	// manager read.
	WarningScaledToZero = "scaledToZero"
)

// ForeseesTime reports whether a warning type's Duration is a time
// foreseen from now (the recovery headroom, the time left before an Empty
// group's offsets expire): it moves with the clock, and zero means due now.
func ForeseesTime(typ string) bool {
	return typ == WarningRecoveryHeadroom || typ == WarningGroupOffsetsExpireIn || typ == WarningScaledToZero
}

// ConfigWarning reports whether a warning type is configuration advice
// (shown in status and by check, not on admission) rather than a risk at
// the group's current position.
func ConfigWarning(typ string) bool {
	return typ == WarningRecordTimestamps || typ == WarningOffsetsTopic
}

// Group protocols, as Kafka names them.
const (
	ProtocolClassic  = "classic"
	ProtocolConsumer = "consumer" // KIP-848
	ProtocolStreams  = "streams"  // KIP-1071, Kafka 4.1+
	// ProtocolShare: a share group (KIP-932, Kafka 4.1 preview, 4.2 GA).
	// Its progress is the share-partition start offset (SPSO), read with
	// DescribeShareGroupOffsets; the observer reports it as the
	// partition's Committed offset. It has no offset-expiry clock.
	ProtocolShare = "share"
)

// ProtocolTypeConsumer is the protocol type of classic groups of Kafka
// consumers (Kafka Connect's is "connect"; a simple group, which commits
// without joining, has none).
const ProtocolTypeConsumer = "consumer"

// Offset expiry clocks: the time from which the group coordinator counts
// offsets.retention.minutes before it deletes a committed offset.
const (
	// ExpiryClockGroupEmpty: classic groups with a protocol type expire
	// every offset offsets.retention.minutes after the group became Empty
	// (KIP-211); nothing expires while it has members.
	ExpiryClockGroupEmpty = "GroupEmpty"
	// ExpiryClockLastCommit: each offset expires offsets.retention.minutes
	// after its own last commit: simple groups in any state, KIP-848 and
	// streams groups for topics no member subscribes to (all topics once
	// Empty), a Stable classic consumer group's unsubscribed topics
	// (KIP-496).
	ExpiryClockLastCommit = "LastCommit"
)

// Group states the proof cares about (Kafka's own names).
const (
	GroupStateEmpty  = "Empty"
	GroupStateStable = "Stable"
	GroupStateDead   = "Dead"
)

// NoOffset marks a partition without a committed offset (or a cursor).
const NoOffset int64 = -1

// Where a consumer with a business cursor restarts from (spec.cursor.resumeFrom).
const (
	// ResumeFromCursor: the consumer seeks to its business cursor on start;
	// the group's offsets are a cache that does not decide.
	ResumeFromCursor = "Cursor"
	// ResumeFromGroupOffsets: the consumer resumes from the group's
	// committed offsets (the default); the cursor says what the business
	// really processed.
	ResumeFromGroupOffsets = "GroupOffsets"
)

// CursorPolicy declares the consumer's business cursor.
type CursorPolicy struct {
	// ResumeFrom is ResumeFromCursor or ResumeFromGroupOffsets (anything
	// else is taken as ResumeFromGroupOffsets: both positions decide).
	ResumeFrom string
}

// ResumesFromCursor reports whether the consumer restarts from its cursor.
func (c *CursorPolicy) ResumesFromCursor() bool {
	return c != nil && c.ResumeFrom == ResumeFromCursor
}

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
	// ResetFailsLoudly: the consumer clause (spec.consumer) holds the
	// client to an auto.offset.reset that fails loudly (none, error), so a
	// partition without a committed offset is not a fresh start from 0:
	// the client throws there (WarningSeekRequired).
	ResetFailsLoudly bool
	// Cursor, when set, adds the clause CursorInRange: the business cursor
	// the consumer keeps in its own database must lie inside the retained
	// log. Nil: no cursor.
	Cursor *CursorPolicy
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
	APIStreamsGroupDescribe  = "StreamsGroupDescribe"
	APIShareGroupDescribe    = "ShareGroupDescribe"
	// APIDescribeShareGroupOffsets reads a share group's share-partition
	// start offsets (its Committed offsets).
	APIDescribeShareGroupOffsets = "DescribeShareGroupOffsets"
	APIFetch                     = "Fetch"
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
	// Source says where the value comes from when it is not the topic's
	// own override, for messages: e.g. "broker default log.retention.hours,
	// strictest of 3 brokers". Empty for a topic override or a broker
	// setting read as is.
	Source string
}

// Observation is everything gathered from Kafka for one group and its topics
// at one moment.
type Observation struct {
	// ObservedAt is when the observation was taken.
	ObservedAt time.Time
	// ClusterID is the cluster ID the brokers report (Metadata v2+);
	// empty when none answered. Facts remembered from an earlier proof
	// (the policy's status) hold only for the same cluster.
	ClusterID string
	// Failures are requests that were not answered (or denied). A non-empty
	// list makes KafkaReachable fail.
	Failures []Failure

	// OffsetsRetentionMinutes is the broker setting offsets.retention.minutes
	// (the smallest over brokers). Present=false when unreadable.
	OffsetsRetentionMinutes ConfigValue
	// Transactions is how long a transactional offset commit may stay
	// hidden after the time it carries (txncommit.go).
	Transactions TransactionConfig

	Group  GroupObservation
	Topics []TopicObservation

	// OffsetsTopic says whether exact commit times were asked of
	// __consumer_offsets, and what came of it.
	OffsetsTopic OffsetsTopicRead

	// Cursor is the business cursor as read from the consumer's database,
	// for a policy that declares one.
	Cursor CursorObservation
}

// CursorObservation is what one read of the business cursor returned. The
// reader checks the connection, the query and the column types; the proof
// checks the rows against the topics (rows naming no topic with several
// topics, unknown topics or partitions, duplicates, negative offsets).
type CursorObservation struct {
	// Read: the query ran and Rows are its rows.
	Read bool
	// Problem says why the cursor could not be read (connection,
	// authentication, query, columns, NULLs, too many rows); empty when
	// Read. It never holds the connection string or a password.
	Problem string
	// HasTopic: the query returns a topic column. Without one, every row
	// is about the proof's only topic.
	HasTopic bool
	Rows     []CursorRow
}

// CursorRow is one row of the cursor query: the next offset the business
// will process on a partition (a Kafka committed offset's meaning).
type CursorRow struct {
	// Topic is empty when the query has no topic column.
	Topic      string
	Partition  int64
	NextOffset int64
	// UpdatedAt is when the business last wrote the cursor; zero when the
	// query has no updated_at column.
	UpdatedAt time.Time
}

// OffsetsTopicRead is the outcome of reading __consumer_offsets for exact
// commit times (on by default; the principal needs Read on that topic).
type OffsetsTopicRead struct {
	// Requested: the policy asked for exact commit times.
	Requested bool
	// Reason says, as data, why they could not be read: one of the
	// OffsetsTopic… constants; empty when they were, or not requested.
	Reason string
	// Problem says it for a person (the request, the error, the
	// partition); empty when Reason is.
	Problem string
	// CoordinatorAhead is how far ahead of the observer's clock the newest
	// record read from __consumer_offsets was stamped when it arrived:
	// the coordinators' clock is at least that far ahead of the guard's.
	// Zero when not ahead (or not read). The exact times read there are
	// the coordinator's; the proof allows for this lead plus
	// CoordinatorClockAllowance (CoordinatorSkew).
	CoordinatorAhead time.Duration
}

// Why exact times were not read from __consumer_offsets
// (OffsetsTopicRead.Reason).
const (
	// OffsetsTopicDenied: an ACL denied Describe (Metadata, ListOffsets)
	// or Read (Fetch) on __consumer_offsets; granting Read fixes it.
	OffsetsTopicDenied = "Denied"
	// OffsetsTopicAbsent: the cluster has no __consumer_offsets (no group
	// has committed yet, or a service speaking Kafka's protocol without it).
	OffsetsTopicAbsent = "Absent"
	// OffsetsTopicUndecodable: a record of the group could not be decoded
	// (a record version newer than the guard knows, a corrupt batch):
	// never guessed at.
	OffsetsTopicUndecodable = "Undecodable"
	// OffsetsTopicNotRead: not read to its end this time (a deadline, an
	// open transaction, a partition without a leader, a broker that did
	// not answer); the next observation goes on from there.
	OffsetsTopicNotRead = "NotRead"
)

// ExactTimesRead reports whether exact commit and Empty times were read
// from __consumer_offsets for the observation.
func (r OffsetsTopicRead) ExactTimesRead() bool { return r.Requested && r.Reason == "" }

// GroupObservation is the consumer group's state.
type GroupObservation struct {
	ID string
	// State as Kafka reports it (Empty, Stable, PreparingRebalance, Dead, ...);
	// empty when unknown.
	State string
	// Protocol is "classic", "consumer" (KIP-848) or "streams"; empty when
	// unknown.
	Protocol string
	// ProtocolType is a classic group's protocol type: "consumer" for Kafka
	// consumers, "connect" for Kafka Connect, empty for a simple group
	// (one that commits offsets without joining: Flink, Spark, assign()).
	ProtocolType string
	// Subscribed lists the topics a Stable classic consumer group's members
	// subscribe to, when SubscriptionKnown (decoded from their metadata):
	// the others' offsets expire per commit (KIP-496).
	Subscribed        []string
	SubscriptionKnown bool
	// EmptySince is when the group became Empty (classic groups' offsets
	// expire offsets.retention.minutes after that): exact when
	// EmptySinceExact (read from __consumer_offsets), else a lower bound
	// (the last observation that saw the group in another state: it
	// became Empty after that). Zero when the group is not Empty or the
	// time is not known (a one-shot observation of an Empty group, an
	// observer that started while it was Empty).
	EmptySince      time.Time
	EmptySinceExact bool
	// EmptyBy, with a lower-bound EmptySince, is an upper bound: the first
	// observation that saw the group Empty after seeing it in another
	// state (it became Empty by then). Zero when not known.
	EmptyBy time.Time
	// MigrationPossible: the brokers would convert this classic group to a
	// consumer group if its members rejoined with group.protocol=consumer
	// (a broker serves the consumer protocol: on 4.0+ the finalized
	// group.version feature at 1, the default, read from ApiVersions, with
	// group.coordinator.rebalance.protocols not leaving consumer out; on
	// 3.x that config alone; an Empty group converts whatever
	// group.consumer.migration.policy says; KIP-848). Its offsets keep
	// their commit times then and expire per commit from then on, so they
	// are dated too.
	MigrationPossible bool
	// ShareAutoOffsetReset is a share group's share.auto.offset.reset, read
	// with DescribeConfigs on the GROUP resource (Kafka 4.0+): where Kafka
	// starts a share-partition it has no state for
	// (SharePartition.startOffsetDuringInitialization): latest (the
	// default), earliest or by_duration:<ISO-8601 duration>. Present is
	// false when not read; ShareAutoOffsetResetProblem then says why
	// (empty when it was not asked: not a share group).
	ShareAutoOffsetReset        ConfigValue
	ShareAutoOffsetResetProblem string
	// ShareNewPartitionsStartAtZero: every broker initialises a share
	// group's new partitions of a topic the group already knows at offset
	// 0, whatever share.auto.offset.reset says (KAFKA-20742, Kafka 4.4:
	// GroupMetadataManager.buildInitializeShareGroupStateRequest); before
	// 4.4 they start at share.auto.offset.reset. Read for share groups only.
	ShareNewPartitionsStartAtZero bool
	// Members are the group's live members as its coordinator describes
	// them (DescribeGroups for classic groups, ConsumerGroupDescribe for
	// KIP-848 groups), sorted by member ID: who consumes as the group
	// right now, and from which address. Empty for an Empty group, and
	// for kinds whose members are not read (streams, share).
	Members []GroupMember
}

// GroupMember is one live member of a group.
type GroupMember struct {
	MemberID string
	// ClientID is the client's client.id as it sent it.
	ClientID string
	// ClientHost is the address the broker saw the member's connection
	// come from, as it reported it (Kafka writes "/10.1.2.3", sometimes
	// "name/10.1.2.3"; kfake "10.1.2.3:port").
	ClientHost string
	// Host is ClientHost as an IP address (IPv4-mapped IPv6 unmapped);
	// invalid when ClientHost names no address.
	Host netip.Addr
}

// TopicObservation is one topic's configuration and partitions.
type TopicObservation struct {
	Name           string
	RetentionMs    ConfigValue
	RetentionBytes ConfigValue
	CleanupPolicy  ConfigValue
	// DeleteRetentionMs is how long the log cleaner keeps tombstones of a
	// compacting topic (delete.retention.ms).
	DeleteRetentionMs ConfigValue
	// TimestampType is message.timestamp.type (CreateTime or
	// LogAppendTime); TimestampBeforeMaxMs is
	// message.timestamp.before.max.ms (Kafka 3.6+; absent before: no bound).
	TimestampType        ConfigValue
	TimestampBeforeMaxMs ConfigValue
	// TimestampAfterMaxMs is message.timestamp.after.max.ms: how far ahead
	// of the broker's clock a CreateTime record may be stamped (Kafka 3.6+,
	// unbounded by default before 4.0, 1 hour from 4.0; absent before 3.6:
	// unbounded). A commit dated from a record's timestamp is dated that
	// much earlier; unbounded leaves it undated.
	TimestampAfterMaxMs ConfigValue
	// TimestampDifferenceMaxMs is message.timestamp.difference.max.ms, the
	// bound both ways before 3.6 (Long.MAX by default; removed in 4.0):
	// read when TimestampAfterMaxMs is absent.
	TimestampDifferenceMaxMs ConfigValue
	// RemoteStorageEnable is remote.storage.enable (tiered storage, KIP-405):
	// the remote log's expiration deletes by retention.ms and
	// retention.bytes even when cleanup.policy is empty.
	RemoteStorageEnable ConfigValue
	// TopicID is the topic's ID (hex), from metadata; empty when unknown.
	TopicID    string
	Partitions []PartitionObservation
}

// TombstoneBound is what set a partition's tombstone headroom.
type TombstoneBound int

const (
	// TombstoneUnread: a tombstone the observer did not decode, written no
	// earlier than the record at the committed offset.
	TombstoneUnread TombstoneBound = iota
	// TombstoneFound: a tombstone found in a batch no cleaning had stamped
	// when read.
	TombstoneFound
	// TombstoneStamped: a tombstone found in a batch stamped with a delete
	// horizon.
	TombstoneStamped
)

// TombstoneScan is what one fetch at a lagging committed offset of a
// compacting topic showed of its tombstones: the whole record batches
// decoded from the committed offset's batch up to Through, the tombstones
// among them at or after From, and whether they reach the partition's high
// watermark (tombstone.go).
type TombstoneScan struct {
	// From is the committed offset the scan was for.
	From int64
	// Through is the offset after the last whole batch decoded: the
	// records in [From, Through) were all seen.
	Through int64
	// ReachesEnd: Through is at or past the high watermark the fetch's
	// answer gave, so no record after From went unseen at FetchedAt.
	ReachesEnd bool
	// Found are the tombstones (records with a null value) in
	// [From, Through), ascending offsets.
	Found []TombstoneSeen
	// NextTimestamp is a lower bound on when the records from Through on
	// were written, read from the header of the batch cut there (its
	// first timestamp; its max with LogAppendTime); zero when unknown.
	NextTimestamp time.Time
	// FetchedAt is the observer's clock when it sent the fetch.
	FetchedAt time.Time
	// CleaningAllowance is how long a cleaning already running when the
	// fetch was sent may have started before it (DefaultCleaningAllowance
	// unless the observer was told otherwise).
	CleaningAllowance time.Duration
}

// TombstoneSeen is one tombstone a TombstoneScan found.
type TombstoneSeen struct {
	Offset int64
	// Timestamp is the record's own timestamp.
	Timestamp time.Time
	// DeleteHorizon is the delete horizon stamped on its batch by the
	// first cleaning that retained it (attribute bit 6, KIP-534), on the
	// partition leader's clock; zero when the batch was never cleaned.
	DeleteHorizon time.Time
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
	// PrecedingTimestamp is the timestamp of the last record before the
	// committed offset (committing offset n follows the write of record
	// n−1, so it bounds the commit time from below); zero when unknown.
	PrecedingTimestamp time.Time
	// PrecedingMarkerTimestamp is the timestamp of the last transaction
	// marker (a control record) before the committed offset, stamped by
	// the partition leader's clock when it wrote the marker: a position
	// past it is committed after it (txncommit.go); zero when none was
	// read.
	PrecedingMarkerTimestamp time.Time
	// LastCommit is when the offset was last committed, read from
	// __consumer_offsets (exact); zero when not read.
	LastCommit time.Time
	// LoggedOffset is the committed offset __consumer_offsets still holds
	// for this partition (its latest commit record, no tombstone read
	// after it) when OffsetFetch answered none (Committed NoOffset):
	// LoggedOffsetKnown then. Expiry and deletion both write a tombstone,
	// so the offset is not gone: the coordinator that answered has not
	// caught up with it (one that just took the group over answers at its
	// high watermark, which lags behind the log it took over until its
	// followers catch up). Zero and false otherwise.
	LoggedOffset      int64
	LoggedOffsetKnown bool
	// ExpireAt is the explicit expiry the offset was committed with
	// (OffsetCommit v2–v4 retention_time; OffsetCommitValue v1
	// expireTimestamp), read from __consumer_offsets; zero when it has
	// none or the topic was not read. It replaces the group's clock.
	ExpireAt time.Time
	// ShareLag is a share group's count of records from its
	// share-partition start offset to the log end not yet acknowledged
	// (DescribeShareGroupOffsets v1, Kafka 4.2+; deleted records
	// included); -1 or 0 with ShareLagKnown false when unknown.
	ShareLag      int64
	ShareLagKnown bool
	// CommitTopicID is the topic ID the offset was committed for (hex,
	// OffsetCommitValue v4, Kafka 4.1+), read from __consumer_offsets;
	// empty when the record has none or the topic was not read.
	CommitTopicID string
	// CommittedAfter is a time the last commit is known to follow: the
	// last observation that saw another committed offset (a change the
	// observer witnessed); zero when unknown.
	CommittedAfter time.Time
	// OffsetVanished: the observer saw the group commit VanishedOffset on
	// this partition (last at VanishedSeenAt) and now it has none: it
	// expired or was deleted. A long-running observer's memory; a one-shot
	// observation cannot know it.
	OffsetVanished bool
	VanishedOffset int64
	VanishedSeenAt time.Time
	// TimestampUnread says why CommittedTimestamp is zero for a lagging
	// partition whose record the observer tried to date (TimestampReadDenied,
	// TimestampNoRecords, TimestampFetchFailed); empty otherwise.
	TimestampUnread string
	// OffsetForTimestamp is the leader's answer to ListOffsets for timestamp
	// OffsetForTimestampAt (now + recoveryWindow − retention.ms), asked when
	// the committed record's timestamp was not read: the first offset whose
	// record is stamped at or after it, -1 when none is below the high
	// watermark. Valid when OffsetForTimestampRead; OffsetForTimestampProblem
	// says why it was not read when it was asked and failed.
	OffsetForTimestamp        int64
	OffsetForTimestampAt      time.Time
	OffsetForTimestampRead    bool
	OffsetForTimestampProblem string
	// CursorTimestamp is the timestamp of the record at the business
	// cursor (headroom with resumeFrom Cursor); zero when unknown, when
	// there is no cursor or when it is at log end.
	CursorTimestamp time.Time
	// Tombstones is what the observer decoded, on a compacting topic, at
	// and after the committed offset of a group that lags: the tombstones
	// there with their batches' delete horizons (tombstone.go); nil when
	// not read.
	Tombstones *TombstoneScan
	// CommitEpoch is what the partition's leader says of the leader
	// epoch the offset was committed with (epoch.go).
	CommitEpoch CommitEpoch
	// CommitWitness: for an offset committed without an epoch, the
	// leader epoch a long-running observer first saw it in, and where
	// the leader now says that epoch ends (epoch.go).
	CommitWitness CommitWitness
	// RewindTimestamp is the timestamp of the record at the end of the
	// commit's leader epoch when that end is inside the log and below the
	// committed offset (CommittedEpochDiverged): where the Java consumer
	// rewinds to, the oldest record it has not read, whose expiry the
	// headroom measures (epoch.go); zero when unknown or not asked.
	RewindTimestamp time.Time
	// LogDiverged: the observer saw the partition's log end go down
	// (a truncation: an unclean leader election, a leader that lost
	// what it had not flushed), from DivergedFrom to DivergedTo, first
	// at DivergedSeenAt, and the group has not committed since. A
	// long-running observer's memory (internal/groupmemory); a one-shot
	// observation cannot know it.
	LogDiverged    bool
	DivergedFrom   int64
	DivergedTo     int64
	DivergedSeenAt time.Time
}

// CommitEpoch is the leader epoch a committed offset carries (OffsetFetch
// v5+: the epoch of the last record the committing consumer read, set by
// KIP-320 clients) and where the partition's leader says that epoch ends
// (OffsetsForLeaderEpoch). The zero value is an offset without an epoch
// whose epoch end was not asked.
type CommitEpoch struct {
	// HasEpoch: the commit carries a leader epoch (OffsetFetch answered
	// one ≥ 0); false for offsets committed without one
	// (kafka-consumer-groups --reset-offsets, Admin.alterConsumerGroupOffsets,
	// clients without KIP-320), which no consumer validates.
	HasEpoch bool
	Epoch    int32
	// EndKnown: the leader answered OffsetsForLeaderEpoch for Epoch
	// without an error. False when it was not asked or did not answer:
	// nothing is judged then (logged by the observer).
	EndKnown bool
	// EndEpoch and EndOffset are the answer: the largest epoch ≤ Epoch the
	// leader knows and the offset where it ends (the log end for the
	// current epoch). -1 (UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET) when the
	// leader does not know the epoch (above its own).
	EndEpoch  int32
	EndOffset int64
}

// CommitWitness is the leader epoch a long-running observer's memory
// first saw an epoch-less committed offset in (the log end at or past the
// offset, ListOffsets answering that epoch: the records below the offset
// were in that epoch's log then), and where the partition's leader now
// says that epoch ends (OffsetsForLeaderEpoch). The zero value: no witness
// (a one-shot observation, or an offset first seen on a log that did not
// reach it).
type CommitWitness struct {
	Known  bool
	Epoch  int32
	SeenAt time.Time
	// EndKnown, EndEpoch, EndOffset: the leader's answer, as in
	// CommitEpoch (-1, -1: the leader does not know the epoch).
	EndKnown  bool
	EndEpoch  int32
	EndOffset int64
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
	// SkippedRecords counts the records a reset to latest skips when the
	// consumers start (ResetToLatestSkipsRecords, OffsetResetMaySkipRecords:
	// logEnd − logStart); 0 otherwise.
	SkippedRecords int64
	// DivergedRecords counts the records the group read that a truncated
	// log no longer holds (CommittedEpochDiverged, CommittedOffsetDiverged:
	// committed − the end of the commit's leader epoch, or of the epoch the
	// guard first saw it in); 0 otherwise.
	DivergedRecords int64
	// Cursor is the business cursor the violation speaks of (CursorInRange
	// violations); NoOffset otherwise.
	Cursor int64
	// ExpiresAt is when what the violation is about expires, for the
	// violations about an expiry: the record at the group's position
	// (RecoveryHeadroomShorterThanWindow: its timestamp plus retention.ms),
	// a tombstone the group has not read, at the earliest
	// (TombstoneHeadroomShorterThanWindow),
	// a committed offset (OffsetsExpireBeforeWindow exactly,
	// OffsetsMayExpireBeforeWindow at the earliest,
	// ExplicitOffsetExpiryBeforeWindow), the group's offsets
	// (EmptyGroupOffsetsExpireBeforeWindow: at the latest). Zero otherwise,
	// and for an offset whose commit is not dated.
	ExpiresAt time.Time
}

// Warning is reported and never denies on its own. It is data: Message is
// rendered from the other fields, and whether a warning changed is judged
// on them (status.proof.warningFacts), never on its text.
type Warning struct {
	// Type is the kind of warning (WarningRecoveryHeadroom, …).
	Type string
	// Reason tells warnings of one Type apart (WarningReason… constants,
	// or the clause reason of a WarningGroupOffsets).
	Reason string
	// Subject is what it is about: a partition ("orders[3]"), a topic, a
	// group, a clause, a CronJob and its schedule, the partitions without
	// a committed offset.
	Subject string
	// Detail is the problem it reports, when it reports one.
	Detail string
	// Offset is the committed offset it speaks of (RewindShorterThanWindow:
	// the offset the consumer rewinds to); nil for none.
	Offset *int64
	// Duration is the headroom or time left it foresees, measured from
	// now: it shrinks as time passes. Zero for the types that foresee no
	// time (only WarningRecoveryHeadroom and WarningGroupOffsetsExpireIn
	// do).
	Duration time.Duration
	// Span is a duration it states that does not move with the clock (a
	// topic's retention.ms − recoveryWindow, a schedule's longest gap,
	// offsets.retention.minutes); zero for none.
	Span time.Duration
	// Limit is the duration it measures against (recoveryWindow, a
	// timestamp bound); zero for none.
	Limit time.Duration
	// Message is the prose, rendered from the fields above.
	Message string
}

// Warning reasons (Warning.Reason), stable CamelCase words.
const (
	// WarningReasonPastRetention: what the warning speaks of is already
	// past its retention (a record, a group's offsets).
	WarningReasonPastRetention = "PastRetention"
	// WarningReasonShorterThanWindow: it expires sooner than
	// recoveryWindow.
	WarningReasonShorterThanWindow = "ShorterThanWindow"
	// WarningReasonTombstone…: a recoveryHeadroom warning about a
	// tombstone the group has not read (TombstoneHeadroom) rather than the
	// record at its position: the log cleaner may drop it sooner than
	// recoveryWindow, or may already have.
	WarningReasonTombstoneShorterThanWindow = "TombstoneShorterThanWindow"
	WarningReasonTombstoneMayBeDropped      = "TombstoneMayBeDropped"
	// WarningReasonRewindShorterThanWindow: a recoveryHeadroom warning
	// about the record a consumer whose commit diverged
	// (CommittedEpochDiverged) rewinds to, rather than the record at its
	// committed offset (the warning's Offset is the rewind point):
	// retention deletes it sooner than recoveryWindow, or already may.
	WarningReasonRewindShorterThanWindow = "RewindShorterThanWindow"
	// WarningReasonMay…: the same, at the earliest (the Empty time is a
	// bound, not exact).
	WarningReasonMayBePastRetention     = "MayBePastRetention"
	WarningReasonMayExpireBeforeWindow  = "MayExpireBeforeWindow"
	WarningReasonAcceptsAnyAge          = "AcceptsAnyAge"
	WarningReasonAcceptsOlderThanWindow = "AcceptsOlderThanWindow"
	WarningReasonNotRead                = "NotRead"
	WarningReasonNoCommittedOffset      = "NoCommittedOffset"
	// CronJob warnings (WarningCronJobSchedule).
	WarningReasonSuspended                  = "Suspended"
	WarningReasonScheduleUnreadable         = "ScheduleUnreadable"
	WarningReasonGapReachesOffsetsRetention = "GapReachesOffsetsRetention"
	WarningReasonGapReachesRecoveryWindow   = "GapReachesRecoveryWindow"
	WarningReasonMoreWarnings               = "MoreWarnings"
	// WarningScaledToZero: HeldByKEDA, the offsets' expiry foreseen (in
	// Duration); HeldByKEDAExpiryUnknown, no clock the proof can read.
	WarningReasonHeldByKEDA              = "HeldByKEDA"
	WarningReasonHeldByKEDAExpiryUnknown = "HeldByKEDAExpiryUnknown"
)

// PartitionResult is the per-partition line of the proof.
type PartitionResult struct {
	Topic          string
	Partition      int32
	Committed      int64 // NoOffset when none
	LogStart       int64
	LogEnd         int64
	Lag            int64 // logEnd - committed when committed in range; else logEnd - logStart
	ExpiredRecords int64 // logStart - committed when committed < logStart
	// SkippedRecords: logEnd − logStart on a partition a reset to latest
	// skips (ResetToLatestSkipsRecords, OffsetResetMaySkipRecords).
	SkippedRecords int64
	// DivergedRecords: committed − the end of the commit's leader epoch
	// (CommittedEpochDiverged; CommittedOffsetDiverged: of the epoch the
	// guard first saw it in): records the group read that the log no
	// longer holds.
	DivergedRecords int64
	// Headroom: timestamp(record at committed) + retention.ms - now (on a
	// CommittedEpochDiverged partition, of the record at the epoch's end,
	// where the consumer rewinds to: RewindTimestamp); HasHeadroom is
	// false when it cannot be computed (infinite/compact retention or
	// unknown timestamps).
	Headroom    time.Duration
	HasHeadroom bool
	// TombstoneHeadroom, on a compacting topic with the group lagging
	// (committed < logEnd; the cursor with resumeFrom Cursor), is how long
	// until the log cleaner may drop a tombstone the group has not read, a
	// lower bound (tombstone.go): the earliest drop of the tombstones the
	// observer found there (a stamped delete horizon; for a batch never
	// cleaned, the read's time less CleaningAllowance, not before its
	// write, + delete.retention.ms) and, for the records it did not
	// decode, timestamp(record at committed) − the producer's clock skew
	// (message.timestamp.after.max.ms with CreateTime, 0 with
	// LogAppendTime) + delete.retention.ms; − now.
	// HasTombstoneHeadroom is false for a caught-up group (it has read
	// every tombstone written so far), a lagging one the observer read up
	// to log end without a tombstone, a topic that does not compact, an
	// unknown timestamp, or a CreateTime topic whose stamps are not bounded
	// ahead of the broker's clock.
	TombstoneHeadroom    time.Duration
	HasTombstoneHeadroom bool
	// TombstonesUnread: a lagging partition of a compacting topic without
	// a tombstone headroom, not because the observer read to the high
	// watermark and found no tombstone, but because nothing bounded when
	// the tombstones after the position were written
	// (ReasonTombstonesUnread).
	TombstonesUnread bool
	// TombstoneBound says what set TombstoneHeadroom, TombstoneOffset the
	// tombstone found (TombstoneFound, TombstoneStamped) and
	// TombstoneHorizon its batch's delete horizon (TombstoneStamped).
	TombstoneBound   TombstoneBound
	TombstoneOffset  int64
	TombstoneHorizon time.Time
	// TimestampUnread: the partition lags and the record at its committed
	// offset was not dated; its headroom, if any, comes from ListOffsets by
	// timestamp (undated.go): HeadroomAtLeast when that showed the record
	// outlives the window (Headroom is then a lower bound), MayExpireBy
	// when it showed the record may be deleted before that time, which is
	// not after now + window (Headroom 0: how soon is not known).
	TimestampUnread bool
	HeadroomAtLeast bool
	MayExpireBy     time.Time
	// OffsetExpiresAt is the earliest time the committed offset may expire,
	// for offsets that expire per commit and whose commit is dated (exact
	// when OffsetExpiryExact).
	OffsetExpiresAt   time.Time
	HasOffsetExpiry   bool
	OffsetExpiryExact bool
	// Cursor is the business cursor (NoOffset when the partition has no
	// cursor row, or the policy no cursor); CursorUpdatedAt when it was
	// last written, when the query says.
	Cursor          int64
	CursorUpdatedAt time.Time
	// ReplayRecords: committed < cursor, a restart from the group's
	// offsets reads cursor − committed records again (seed 002: expected,
	// harmless with an idempotent inbox). AheadRecords: committed > cursor,
	// a restart from the group's offsets skips committed − cursor records
	// the business never processed. Both only while the cursor is in range.
	ReplayRecords int64
	AheadRecords  int64
	// Verdict and Reason are the partition's outcome over the clauses that
	// decide: with a cursor, the cursor's (and, with resumeFrom
	// GroupOffsets, the group's), loss first (LossRank).
	Verdict Verdict
	Reason  string // the deciding failing reason, empty when in range
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
	// RecoveryHeadroom is the smallest partition headroom, record
	// (Headroom) or tombstone (TombstoneHeadroom): how long the group
	// could go down now without losing a record or a delete.
	RecoveryHeadroom    time.Duration
	HasRecoveryHeadroom bool
	// RecoveryHeadroomExpiresAt is when that headroom runs out: the time
	// of the proof plus RecoveryHeadroom (the timestamp of the record at
	// the committed offset plus retention.ms, or the earliest the cleaner
	// may drop a tombstone after it; a caught-up partition's full
	// retention.ms from the proof on). Set with HasRecoveryHeadroom.
	RecoveryHeadroomExpiresAt time.Time
	// GroupOffsetsExpireIn is how long until the soonest committed offset
	// of the group may expire, when a clock is running (see OffsetExpiry).
	GroupOffsetsExpireIn    time.Duration
	HasGroupOffsetsExpireIn bool
	// OffsetExpiry says on which clock the group's offsets expire and the
	// soonest expiry.
	OffsetExpiry OffsetExpiry
	// Cursor sums the business cursor's position against the group's;
	// nil when the policy has no cursor.
	Cursor *CursorSummary
	// OffsetsTopic says whether exact commit and Empty times were asked of
	// __consumer_offsets and why they were not read (the observation's).
	OffsetsTopic OffsetsTopicRead
}

// CursorSummary is the business cursor against the group's offsets, over
// partitions whose cursor lies in the retained log.
type CursorSummary struct {
	ResumeFrom string
	// ReplayRecords: records a restart from the group's offsets reads
	// again (the group behind the cursor).
	ReplayRecords int64
	// AheadRecords: records a restart from the group's offsets skips (the
	// group ahead of the cursor).
	AheadRecords int64
	// Rows is how many cursor rows were read.
	Rows int
}

// OffsetExpiry is when the broker may delete the group's committed offsets.
type OffsetExpiry struct {
	// Clock is ExpiryClockGroupEmpty or ExpiryClockLastCommit (when any
	// of the group's offsets expire per commit); empty when the group's
	// kind is unknown.
	Clock string
	// Soonest is the earliest time an offset of the group may expire;
	// HasSoonest is false when no clock is running (a classic group with
	// members) or nothing is committed.
	Soonest    time.Time
	HasSoonest bool
	// Exact: Soonest comes from exact times (__consumer_offsets), not a
	// lower bound.
	Exact bool
	// Topic and Partition name the offset that expires soonest; Partition
	// is -1 when the whole group expires at once (GroupEmpty).
	Topic     string
	Partition int32
}
