package proof

import (
	"strings"
	"testing"
	"time"
)

// Issue 33 item 5 and its false alarm, seed 000 (the fanout consumes its
// Outbox on statically assigned partitions, a simple group, and publishes
// what it read transactionally): a transactional commit carries the time
// it was sent and shows when its transaction ends, up to
// transaction.max.timeout.ms (and the abort check) later; a transaction
// marker before the committed offset dates the commit by the leader's
// clock. test/realkafka/proof/txncommit_test.go pins both on real brokers.
func TestTransactionalCommitDating(t *testing.T) {
	const retention = 7 * day
	const window3d = 72 * time.Hour
	simple := GroupObservation{ID: "fanout", State: GroupStateEmpty, Protocol: ProtocolClassic}
	// An offset the observer saw change 4 days less 10 minutes ago: on the
	// observation alone it lives 3 days and 10 minutes more, past the
	// window; a transactional commit may carry a time 15m10s earlier.
	seen := func(p PartitionObservation) PartitionObservation {
		p.CommittedAfter = now.Add(-(4*day - 10*time.Minute))
		return p
	}
	unbounded := func(tp TopicObservation) TopicObservation {
		tp.TimestampAfterMaxMs = cfg("9223372036854775807") // 3.9's default: the record dates nothing
		return tp
	}
	cases := []struct {
		name        string
		txn         TransactionConfig
		partition   PartitionObservation
		topic       func(TopicObservation) TopicObservation
		verdict     Verdict
		reason      string
		message     string
		noMessage   string
		soonestIn   time.Duration
		soonestKnow bool
	}{
		{
			// Before the fix: Proven, an expiry 15m10s later than the
			// coordinator's for a transactional commit.
			name:      "a change seen, Kafka's defaults (absent from the answer): dated 15m10s before the observation",
			partition: seen(part(0, 0, 500, 400)), verdict: Unknown, reason: ReasonOffsetsMayExpireBeforeWindow,
			message:   "less 15m10s: a transactional commit carries the time it was sent",
			soonestIn: 3*day + 10*time.Minute - 15*time.Minute - 10*time.Second, soonestKnow: true,
		},
		{
			name:      "a change seen, transaction.max.timeout.ms 1 minute read from the brokers",
			txn:       TransactionConfig{MaxTimeoutMs: cfg("60000"), AbortCheckIntervalMs: cfg("10000"), TwoPhaseCommitEnable: cfg("false")},
			partition: seen(part(0, 0, 500, 400)), verdict: Proven,
			message:   "less 1m10s",
			soonestIn: 3*day + 10*time.Minute - time.Minute - 10*time.Second, soonestKnow: true,
		},
		{
			name:      "two-phase commit on a broker: a change seen dates nothing",
			txn:       TransactionConfig{MaxTimeoutMs: cfg("60000"), TwoPhaseCommitEnable: cfg("true")},
			partition: seen(part(0, 0, 500, 400)), verdict: Unknown, reason: ReasonOffsetsMayExpireBeforeWindow,
			message:   "transaction.two.phase.commit.enable is \"true\" on a broker",
			noMessage: "while the manager watches",
		},
		{
			name:      "transaction.max.timeout.ms that does not parse: a change seen dates nothing",
			txn:       TransactionConfig{MaxTimeoutMs: cfg("15m")},
			partition: seen(part(0, 0, 500, 400)), verdict: Unknown, reason: ReasonOffsetsMayExpireBeforeWindow,
			message: "transaction.max.timeout.ms is \"15m\"",
		},
		{
			// The false alarm: a caught-up group on a topic exactly-once
			// producers write; the record before the marker dates nothing
			// on 3.9 (CreateTime, unbounded), the marker does.
			name: "a transaction marker before the offset dates the commit, no producer skew",
			partition: func() PartitionObservation {
				p := part(0, 0, 500, 500)
				p.PrecedingTimestamp = now.Add(-2 * time.Minute)
				p.PrecedingMarkerTimestamp = now.Add(-time.Minute)
				return p
			}(),
			topic:   unbounded,
			verdict: Proven, message: "bounded by the timestamp of the transaction marker before it",
			soonestIn: retention - time.Minute, soonestKnow: true,
		},
		{
			name: "the marker, later than the record less an hour of producer skew, is the bound",
			partition: func() PartitionObservation {
				p := part(0, 0, 500, 500)
				p.PrecedingTimestamp = now.Add(-time.Minute) // less an hour of skew (4.x)
				p.PrecedingMarkerTimestamp = now.Add(-30 * time.Minute)
				return p
			}(),
			verdict: Proven, message: "bounded by the timestamp of the transaction marker before it",
			soonestIn: retention - 30*time.Minute, soonestKnow: true,
		},
		{
			name: "neither record nor marker nor change: undated, and the message says why",
			partition: func() PartitionObservation {
				p := part(0, 0, 500, 500)
				p.PrecedingTimestamp = now.Add(-time.Minute)
				return p
			}(),
			topic:   unbounded,
			verdict: Unknown, reason: ReasonOffsetsMayExpireBeforeWindow,
			message: "does not bound how far ahead of the broker's clock",
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tp := topic("outbox", c.partition)
			if c.topic != nil {
				tp = c.topic(tp)
			}
			o := observation(tp)
			o.OffsetsRetentionMinutes = minutes(retention)
			o.Group = simple
			o.Transactions = c.txn
			p := policy("outbox")
			p.GroupID, p.RecoveryWindow = "fanout", window3d
			r := Evaluate(o, p, now)
			if r.Verdict != c.verdict {
				t.Fatalf("verdict %s, want %s: %+v", r.Verdict, c.verdict, r.Violations)
			}
			text := conditionOf(t, r, ClauseGroupOffsetsRetained).Message
			if c.reason != "" {
				if len(r.Violations) != 1 || r.Violations[0].Reason != c.reason {
					t.Fatalf("violations %+v, want one %s", r.Violations, c.reason)
				}
				text = r.Violations[0].Message
			}
			if !strings.Contains(text, c.message) {
				t.Errorf("message %q\nwant it to contain %q", text, c.message)
			}
			if c.noMessage != "" && strings.Contains(text, c.noMessage) {
				t.Errorf("message %q offers %q, a way out that changes no verdict", text, c.noMessage)
			}
			if e := r.OffsetExpiry; e.HasSoonest != c.soonestKnow || (c.soonestKnow && r.GroupOffsetsExpireIn != c.soonestIn) {
				t.Errorf("soonest expiry %+v in %v, want in %v (known %v)", e, r.GroupOffsetsExpireIn, c.soonestIn, c.soonestKnow)
			}
		})
	}
}

func TestTransactionAllowance(t *testing.T) {
	for _, c := range []struct {
		name    string
		txn     TransactionConfig
		want    time.Duration
		problem string
	}{
		{"Kafka's defaults when a broker reports none", TransactionConfig{}, 15*time.Minute + 10*time.Second, ""},
		{"read from the brokers", TransactionConfig{MaxTimeoutMs: cfg("3600000"), AbortCheckIntervalMs: cfg("60000"), TwoPhaseCommitEnable: cfg("false")},
			time.Hour + time.Minute, ""},
		{"two-phase commit on", TransactionConfig{TwoPhaseCommitEnable: cfg("TRUE")}, 0, KeyTransactionTwoPhaseCommit},
		{"two-phase commit null", TransactionConfig{TwoPhaseCommitEnable: ConfigValue{Present: true, Null: true}}, 0, KeyTransactionTwoPhaseCommit},
		{"negative timeout", TransactionConfig{MaxTimeoutMs: cfg("-1")}, 0, KeyTransactionMaxTimeoutMs},
		{"abort check that does not parse", TransactionConfig{AbortCheckIntervalMs: cfg("x")}, 0, KeyTransactionAbortCheckIntervalMs},
	} {
		got, problem := transactionAllowance(c.txn)
		if got != c.want || (c.problem == "") != (problem == "") || !strings.Contains(problem, c.problem) {
			t.Errorf("%s: %v %q, want %v and a problem naming %q", c.name, got, problem, c.want, c.problem)
		}
	}
}
