package proof

import (
	"reflect"
	"strconv"
	"testing"
	"time"
)

// now is the moment every test evaluates at.
var now = time.Date(2026, 11, 30, 3, 0, 0, 0, time.UTC)

// window is the recovery window of the seeds: 10 days.
const window = 240 * time.Hour

const day = 24 * time.Hour

func cfg(v string) ConfigValue { return ConfigValue{Present: true, Value: v} }

func millis(d time.Duration) ConfigValue { return cfg(strconv.FormatInt(d.Milliseconds(), 10)) }

func minutes(d time.Duration) ConfigValue { return cfg(strconv.FormatInt(int64(d/time.Minute), 10)) }

// topic is a delete-policy topic with 30 days of time retention and no size
// bound: it covers the 10-day window. It takes CreateTime timestamps at most
// 7 days old (message.timestamp.before.max.ms), well inside retention.ms −
// window, stamped at most an hour ahead of the broker's clock (Kafka 4.x's
// default message.timestamp.after.max.ms), and keeps tombstones Kafka's
// default day (delete.retention.ms: irrelevant until a case makes it
// compact).
func topic(name string, partitions ...PartitionObservation) TopicObservation {
	return TopicObservation{
		Name:                 name,
		RetentionMs:          millis(30 * day),
		RetentionBytes:       cfg("-1"),
		CleanupPolicy:        cfg("delete"),
		DeleteRetentionMs:    millis(day),
		TimestampType:        cfg("CreateTime"),
		TimestampBeforeMaxMs: millis(7 * day),
		TimestampAfterMaxMs:  millis(time.Hour),
		Partitions:           partitions,
	}
}

func part(partition int32, logStart, logEnd, committed int64) PartitionObservation {
	return PartitionObservation{Partition: partition, LogStart: logStart, LogEnd: logEnd, Committed: committed}
}

// observation is a healthy cluster: offsets.retention.minutes of 30 days,
// a Stable classic group, no failures.
func observation(topics ...TopicObservation) Observation {
	return Observation{
		ObservedAt:              now,
		OffsetsRetentionMinutes: minutes(30 * day),
		Group:                   GroupObservation{ID: "ledger-settle-consumer", State: GroupStateStable, Protocol: ProtocolClassic, ProtocolType: ProtocolTypeConsumer},
		Topics:                  topics,
	}
}

func policy(topics ...string) Policy {
	return Policy{
		UID:            "6c1f0e5e-6d2b-4f5e-9a51-5d0c8f3e2a10",
		GroupID:        "ledger-settle-consumer",
		Topics:         topics,
		RecoveryWindow: window,
	}
}

// want describes the parts of a Result a case asserts.
type want struct {
	verdict Verdict
	// conditions: status and reason per clause type, for the clauses the
	// case cares about.
	conditions map[string]condWant
	// violations, in order: clause, reason, topic, partition. nil means
	// "none"; the list must match exactly.
	violations []violationWant
	// cursor: the policy declares a business cursor, so the proof has the
	// clause CursorInRange.
	cursor bool
}

type condWant struct {
	status ConditionStatus
	reason string
}

type violationWant struct {
	clause, reason, topic string
	partition             int32
}

func (w want) check(t *testing.T, r Result) {
	t.Helper()
	if r.Verdict != w.verdict {
		t.Errorf("verdict = %s, want %s; conditions: %+v", r.Verdict, w.verdict, r.Conditions)
	}
	clauses := Clauses(Policy{})
	if w.cursor {
		clauses = Clauses(Policy{Cursor: &CursorPolicy{}})
	}
	if len(r.Conditions) != len(clauses) {
		t.Fatalf("got %d conditions, want %d: %+v", len(r.Conditions), len(clauses), r.Conditions)
	}
	for i, c := range r.Conditions {
		if c.Type != clauses[i] {
			t.Errorf("condition %d has type %s, want %s", i, c.Type, clauses[i])
		}
		if c.Reason == "" || c.Message == "" {
			t.Errorf("condition %s has empty reason or message: %+v", c.Type, c)
		}
		if cw, ok := w.conditions[c.Type]; ok && (c.Status != cw.status || c.Reason != cw.reason) {
			t.Errorf("condition %s = %s/%s (%s), want %s/%s", c.Type, c.Status, c.Reason, c.Message, cw.status, cw.reason)
		}
	}
	if len(r.Violations) != len(w.violations) {
		t.Errorf("got %d violations, want %d:", len(r.Violations), len(w.violations))
		for _, v := range r.Violations {
			t.Logf("  %s/%s %s[%d]: %s", v.Clause, v.Reason, v.Topic, v.Partition, v.Message)
		}
		return
	}
	for i, v := range r.Violations {
		vw := w.violations[i]
		if v.Clause != vw.clause || v.Reason != vw.reason || v.Topic != vw.topic || v.Partition != vw.partition {
			t.Errorf("violation %d = %s/%s %s[%d] (%s), want %s/%s %s[%d]",
				i, v.Clause, v.Reason, v.Topic, v.Partition, v.Message, vw.clause, vw.reason, vw.topic, vw.partition)
		}
		if v.Message == "" {
			t.Errorf("violation %d has no message", i)
		}
	}
	if (r.Verdict == Proven) != (r.ProofID == "") {
		t.Errorf("verdict %s with proofID %q", r.Verdict, r.ProofID)
	}
}

func proven() want {
	return want{
		verdict: Proven,
		conditions: map[string]condWant{
			ClauseKafkaReachable:        {ConditionTrue, ReasonReachable},
			ClauseRetentionCoversWindow: {ConditionTrue, ReasonRetentionCoversWindow},
			ClauseGroupOffsetsRetained:  {ConditionTrue, ReasonGroupOffsetsRetained},
			ClauseOffsetsInRange:        {ConditionTrue, ReasonOffsetsInRange},
			ClauseReady:                 {ConditionTrue, ReasonProven},
		},
	}
}

// conditionOf returns the condition of a clause type.
func conditionOf(t *testing.T, r Result, typ string) Condition {
	t.Helper()
	for _, c := range r.Conditions {
		if c.Type == typ {
			return c
		}
	}
	t.Fatalf("no condition %s in %+v", typ, r.Conditions)
	return Condition{}
}

func resultsEqual(a, b Result) bool { return reflect.DeepEqual(a, b) }
