package proof

import (
	"cmp"
	"math"
	"slices"
	"strings"
	"time"
)

// facts is the observation arranged for the clauses: the topics the proof
// covers, each topic's retention configuration read once, and which facts
// the observer's failures made untrustworthy.
type facts struct {
	obs    *Observation
	policy Policy
	now    time.Time
	topics []topicFacts // sorted by name

	offsetsRetentionMinutes int64
	offsetsRetentionProblem string
	// offsetsRetentionMissingBecause names the failure that explains why
	// offsets.retention.minutes is absent from the observation; empty when
	// it is present or no failure explains it.
	offsetsRetentionMissingBecause string

	// expiry is how the group's committed offsets expire (gatherExpiry).
	expiry expiryFacts
}

// topicFacts is one topic the proof covers.
type topicFacts struct {
	name string
	// obs is nil when the topic is not in the observation.
	obs       *TopicObservation
	retention retentionConfig
	// offsetFailures are the failures whose facts include this topic's
	// offsets (watermarks or committed offsets): the partitions they name
	// are not evaluated.
	offsetFailures []Failure
	// missingBecause is the reason of the failure that explains why a
	// topic is not in the observation; empty when none does.
	missingBecause string
	// configsMissingBecause names the failure that explains why a config
	// of this topic is absent from the observation; empty when none does.
	configsMissingBecause string
}

// gatherFacts decides which topics the proof covers: every topic the policy
// names and every topic in the observation (the observer fetched it for
// this group, and ignoring a fact is never safer than checking it).
func gatherFacts(obs *Observation, p Policy, now time.Time) *facts {
	f := &facts{obs: obs, policy: p, now: now}
	f.offsetsRetentionMinutes, f.offsetsRetentionProblem = readOffsetsRetention(obs.OffsetsRetentionMinutes)
	if !obs.OffsetsRetentionMinutes.Present {
		f.offsetsRetentionMissingBecause = explainingFailure(obs.Failures, explainsBrokerConfig)
	}

	observed := make(map[string]bool, len(obs.Topics))
	f.topics = make([]topicFacts, 0, len(obs.Topics)+len(p.Topics))
	for i := range obs.Topics {
		t := &obs.Topics[i]
		observed[t.Name] = true
		f.topics = append(f.topics, topicFacts{
			name:           t.Name,
			obs:            t,
			retention:      readRetentionConfig(t),
			offsetFailures: offsetFailures(obs.Failures, t.Name),
			configsMissingBecause: explainingFailure(obs.Failures, func(f Failure) bool {
				return explainsTopicConfigs(f, t.Name)
			}),
		})
	}
	for _, name := range p.Topics {
		if observed[name] {
			continue
		}
		observed[name] = true
		f.topics = append(f.topics, topicFacts{
			name:           name,
			missingBecause: missingBecause(obs.Failures, name),
		})
	}
	// Stable: an observer that reports a topic twice gets both entries
	// evaluated, in the order it gave them.
	slices.SortStableFunc(f.topics, func(a, b topicFacts) int { return strings.Compare(a.name, b.name) })
	f.expiry = gatherExpiry(f)
	return f
}

// Kafka APIs whose failure leaves some facts untouched (the API* names the
// observer reports, matched case-insensitively). An API not listed here (or
// none) is assumed to have cost every fact it could have.
var (
	// groupAPIs read a group's state: never topics, watermarks or offsets.
	groupAPIs = []string{APIDescribeGroups, APIConsumerGroupDescribe, APIStreamsGroupDescribe, APIShareGroupDescribe}
	// configAPIs read configurations: never watermarks or offsets.
	configAPIs = []string{APIDescribeConfigs}
)

func apiIn(api string, apis []string) bool {
	for _, a := range apis {
		if strings.EqualFold(api, a) {
			return true
		}
	}
	return false
}

// touchesOffsets reports whether a failure may have cost watermarks or
// committed offsets.
func touchesOffsets(f Failure) bool {
	return !apiIn(f.API, groupAPIs) && !apiIn(f.API, configAPIs)
}

// explainsMissingTopic reports whether a failure explains why a topic is
// absent from the observation: it names the topic, or it cost every fact
// of the cluster. A failure about the group, one topic's offsets or only
// configurations (a broker-config DescribeConfigs names no topic) does not.
func explainsMissingTopic(f Failure, topic string) bool {
	return f.Topic == topic || clusterWide(f)
}

// Kafka APIs that read the facts of one topic or one group: a failure of
// one that names no topic is still not cluster-wide.
var topicOrGroupAPIs = []string{APIOffsetFetch, APIListOffsets, APIFetch, APIDescribeShareGroupOffsets}

// clusterWide reports whether a failure cost every fact the observer reads
// from the cluster: it names no topic, and its API (if any) reads neither
// one topic's or group's facts nor only configurations.
func clusterWide(f Failure) bool {
	return f.Topic == "" && !apiIn(f.API, groupAPIs) && !apiIn(f.API, topicOrGroupAPIs) && !apiIn(f.API, configAPIs)
}

// explainsTopicConfigs reports whether a failure explains why a config of
// the topic is absent: a cluster-wide failure, or a configuration request
// about this topic.
func explainsTopicConfigs(f Failure, topic string) bool {
	return clusterWide(f) || (f.Topic == topic && apiIn(f.API, configAPIs))
}

// explainsBrokerConfig reports whether a failure explains why
// offsets.retention.minutes is absent: a cluster-wide failure, or a
// configuration request that names no topic (the brokers' configs).
func explainsBrokerConfig(f Failure) bool {
	return clusterWide(f) || (f.Topic == "" && apiIn(f.API, configAPIs))
}

// explainingFailure describes the most fundamental failure that explains
// a missing fact ("BrokerUnreachable (Metadata)"), the same whatever the
// observer's order; empty when no failure explains it.
func explainingFailure(failures []Failure, explains func(Failure) bool) string {
	var best *Failure
	for i := range failures {
		f := &failures[i]
		if !explains(*f) {
			continue
		}
		if best == nil || cmp.Or(
			cmp.Compare(reasonRank(failureReason(*f)), reasonRank(failureReason(*best))),
			strings.Compare(failureReason(*f), failureReason(*best)),
			strings.Compare(f.API, best.API),
			strings.Compare(f.Topic, best.Topic),
			strings.Compare(f.Message, best.Message),
		) < 0 {
			best = f
		}
	}
	if best == nil {
		return ""
	}
	s := failureReason(*best)
	if best.API != "" {
		s += " (" + best.API + ")"
	}
	return s
}

// offsetFailures returns the failures that may have cost the topic's
// offsets, most fundamental first (see failurePriority), so a partition
// named by several shows the same one whatever the observer's order.
func offsetFailures(failures []Failure, topic string) []Failure {
	var out []Failure
	for _, f := range failures {
		if (f.Topic == "" || f.Topic == topic) && touchesOffsets(f) {
			out = append(out, f)
		}
	}
	slices.SortFunc(out, func(a, b Failure) int {
		return cmp.Or(
			cmp.Compare(reasonRank(failureReason(a)), reasonRank(failureReason(b))),
			strings.Compare(failureReason(a), failureReason(b)),
			strings.Compare(a.Topic, b.Topic),
			cmp.Compare(a.Partition, b.Partition),
			strings.Compare(a.API, b.API),
			strings.Compare(a.Message, b.Message),
		)
	})
	return out
}

// missingBecause returns the reason of the most telling failure that
// explains why the topic is not in the observation; empty when none does.
func missingBecause(failures []Failure, topic string) string {
	best := ""
	for _, f := range failures {
		if !explainsMissingTopic(f, topic) {
			continue
		}
		r := failureReason(f)
		if best == "" || cmp.Or(cmp.Compare(reasonRank(r), reasonRank(best)), strings.Compare(r, best)) < 0 {
			best = r
		}
	}
	return best
}

// partitionFailure returns the failure that makes a partition's offsets
// untrustworthy, if any.
func (t *topicFacts) partitionFailure(partition int32) (Failure, bool) {
	for _, f := range t.offsetFailures {
		if f.Topic == "" || f.Partition < 0 || f.Partition == partition {
			return f, true
		}
	}
	return Failure{}, false
}

// offsetsRetention returns offsets.retention.minutes as a duration, when
// readable.
func (f *facts) offsetsRetention() (time.Duration, bool) {
	if f.offsetsRetentionProblem != "" {
		return 0, false
	}
	return minutesToDuration(f.offsetsRetentionMinutes), true
}

// failureReason is the failure's reason; an observer that left it empty
// still reported a request that was not answered.
func failureReason(f Failure) string {
	if f.Reason == "" {
		return ReasonBrokerUnreachable
	}
	return f.Reason
}

// failurePriority orders the KafkaReachable reasons: the condition shows
// the most fundamental one (nothing else can be read without it).
var failurePriority = []string{
	ReasonBootstrapServerNotAllowed,
	ReasonAuthenticationFailed,
	ReasonBrokerUnreachable,
	ReasonAuthorizationFailed,
	ReasonTopicNotFound,
}

func reasonRank(reason string) int {
	if i := slices.Index(failurePriority, reason); i >= 0 {
		return i
	}
	return len(failurePriority)
}

// clauseRank is a clause's position in ClauseTypes.
func clauseRank(clause string) int {
	if i := slices.Index(ClauseTypes, clause); i >= 0 {
		return i
	}
	return len(ClauseTypes)
}

// compareViolations orders violations by clause (ClauseTypes order), topic,
// partition and reason; the message and numbers break remaining ties so the
// order never depends on the input's.
func compareViolations(a, b Violation) int {
	if a.Clause != b.Clause {
		return cmp.Compare(clauseRank(a.Clause), clauseRank(b.Clause))
	}
	if a.Topic != b.Topic {
		return strings.Compare(a.Topic, b.Topic)
	}
	if a.Partition != b.Partition {
		return cmp.Compare(a.Partition, b.Partition)
	}
	if a.Reason != b.Reason {
		return strings.Compare(a.Reason, b.Reason)
	}
	return cmp.Or(
		strings.Compare(a.Message, b.Message),
		cmp.Compare(a.Committed, b.Committed),
		cmp.Compare(a.LogStart, b.LogStart),
		cmp.Compare(a.LogEnd, b.LogEnd),
		cmp.Compare(a.ExpiredRecords, b.ExpiredRecords),
		cmp.Compare(a.Cursor, b.Cursor),
		a.ExpiresAt.Compare(b.ExpiresAt),
	)
}

func sortViolations(vs []Violation) {
	slices.SortFunc(vs, compareViolations)
}

// topicViolation is a violation about a topic as a whole.
func topicViolation(clause, reason, topic, message string) Violation {
	return Violation{
		Clause: clause, Reason: reason, Topic: topic, Partition: -1, Message: message,
		Committed: NoOffset, LogStart: -1, LogEnd: -1, Cursor: NoOffset,
	}
}

// addSaturating adds non-negative counts without wrapping around.
func addSaturating(a, b int64) int64 {
	if b > 0 && a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}
