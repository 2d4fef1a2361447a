package proof

import (
	"strings"
	"testing"
	"time"
)

// Offsets that expire per commit: Kafka's group coordinator deletes each
// one offsets.retention.minutes after its own last commit for simple groups
// (any state), KIP-848 and streams groups (topics no member subscribes to:
// all of them once Empty) and a Stable classic consumer group's
// unsubscribed topics (KIP-496). The proof needs every such offset to live
// until now + recoveryWindow.
func TestOffsetsExpirePerCommit(t *testing.T) {
	// Kafka's default offsets retention: 7 days. Window: 3 days.
	const retention = 7 * day
	const window3d = 72 * time.Hour
	simple := GroupObservation{State: GroupStateEmpty, Protocol: ProtocolClassic} // no protocol type: commits without joining
	kip848 := GroupObservation{State: GroupStateStable, Protocol: ProtocolConsumer}
	withCommit := func(p PartitionObservation, exact time.Time) PartitionObservation {
		p.LastCommit = exact
		return p
	}
	withPreceding := func(p PartitionObservation, ts time.Time) PartitionObservation {
		p.PrecedingTimestamp = ts
		return p
	}
	cases := []struct {
		name       string
		group      GroupObservation
		topics     []TopicObservation
		verdict    Verdict
		violations []violationWant
		// message: a substring of the first violation's message, or of the
		// clause's message when it holds.
		message string
		// soonest: the offset expiry reported, when one is known.
		soonestIn  time.Duration
		hasSoonest bool
		exact      bool
	}{
		{
			// The case: a Flink job (a simple group) whose offset
			// was last committed 6 days ago dies within a day under the
			// default 7-day offsets retention, exact time read from
			// __consumer_offsets.
			name:       "simple group committed 6 days ago (exact) expires before a 3-day window",
			group:      simple,
			topics:     []TopicObservation{topic("clicks", withCommit(part(0, 0, 500, 400), now.Add(-6*day)))},
			verdict:    Violated,
			violations: []violationWant{{ClauseGroupOffsetsRetained, ReasonOffsetsExpireBeforeWindow, "clicks", 0}},
			message: "clicks[0]: committed offset 400 was last committed 144h (6d) ago (2026-11-24T03:00:00Z, from __consumer_offsets) " +
				"and expires offsets.retention.minutes 10080 (7d) after its last commit (a simple group: it commits without joining): " +
				"in 24h (1d), before recoveryWindow 72h (3d) ends: commit it again (the offset as it is: the guard reads the new commit's time) or raise offsets.retention.minutes",
			soonestIn: day, hasSoonest: true, exact: true,
		},
		{
			// Without __consumer_offsets the record before the committed
			// offset (written 6 days ago) is the best lower bound: the
			// commit may be that old, so the proof cannot hold.
			name:       "simple group dated only by a 6-day-old record cannot be proven",
			group:      simple,
			topics:     []TopicObservation{topic("clicks", withPreceding(part(0, 0, 500, 400), now.Add(-6*day)))},
			verdict:    Unknown,
			violations: []violationWant{{ClauseGroupOffsetsRetained, ReasonOffsetsMayExpireBeforeWindow, "clicks", 0}},
			message:    "bounded by the timestamp of the record before it",
			// The record's producer may be an hour ahead of the broker
			// (message.timestamp.after.max.ms): the bound is an hour earlier.
			soonestIn: day - time.Hour, hasSoonest: true,
		},
		{
			name:      "healthy twin: simple group committed a minute ago is proven",
			group:     simple,
			topics:    []TopicObservation{topic("clicks", withCommit(part(0, 0, 500, 400), now.Add(-time.Minute)))},
			verdict:   Proven,
			message:   "1 committed offset expires per commit (a simple group: it commits without joining), the soonest, clicks[0], at 2026-12-07T02:59:00Z or later (exact, from __consumer_offsets)",
			soonestIn: retention - time.Minute, hasSoonest: true, exact: true,
		},
		{
			name:      "healthy twin dated by a fresh record is proven",
			group:     simple,
			topics:    []TopicObservation{topic("clicks", withPreceding(part(0, 0, 500, 500), now.Add(-time.Second)))},
			verdict:   Proven,
			soonestIn: retention - time.Hour - time.Second, hasSoonest: true,
		},
		{
			// Issue 22 item 5: Kafka 3.x accepts CreateTime stamps any time
			// ahead (message.timestamp.after.max.ms Long.MAX): the fresh
			// record may be stamped by a clock far ahead, so it does not
			// date the commit.
			name:  "a record stamped by a producer the broker does not bound does not date the commit",
			group: simple,
			topics: []TopicObservation{func() TopicObservation {
				t := topic("clicks", withPreceding(part(0, 0, 500, 500), now.Add(-time.Second)))
				t.TimestampAfterMaxMs = cfg("9223372036854775807")
				return t
			}()},
			verdict:    Unknown,
			violations: []violationWant{{ClauseGroupOffsetsRetained, ReasonOffsetsMayExpireBeforeWindow, "clicks", 0}},
			message:    "does not bound how far ahead of the broker's clock (\"9223372036854775807\")",
		},
		{
			name:  "a topic override of message.timestamp.after.max.ms moves the bound by as much",
			group: simple,
			topics: []TopicObservation{func() TopicObservation {
				t := topic("clicks", withPreceding(part(0, 0, 500, 500), now.Add(-time.Second)))
				t.TimestampAfterMaxMs = millis(5 * day)
				return t
			}()},
			verdict:    Unknown,
			violations: []violationWant{{ClauseGroupOffsetsRetained, ReasonOffsetsMayExpireBeforeWindow, "clicks", 0}},
			soonestIn:  retention - 5*day - time.Second, hasSoonest: true,
		},
		{
			name:  "LogAppendTime: the broker stamped the record, no producer clock to subtract",
			group: simple,
			topics: []TopicObservation{func() TopicObservation {
				t := topic("clicks", withPreceding(part(0, 0, 500, 500), now.Add(-time.Second)))
				t.TimestampType, t.TimestampAfterMaxMs = cfg("LogAppendTime"), ConfigValue{}
				return t
			}()},
			verdict:   Proven,
			soonestIn: retention - time.Second, hasSoonest: true,
		},
		{
			// Issue 22 item 3: an explicit retention time (OffsetCommit
			// v2–v4) replaces the Empty clock of a classic group.
			name:  "classic group offset committed with a retention time expiring in a day",
			group: GroupObservation{State: GroupStateStable, Protocol: ProtocolClassic, ProtocolType: ProtocolTypeConsumer},
			topics: []TopicObservation{topic("orders", func() PartitionObservation {
				p := withCommit(part(0, 0, 900, 900), now.Add(-time.Hour))
				p.ExpireAt = now.Add(day)
				return p
			}())},
			verdict:    Violated,
			violations: []violationWant{{ClauseGroupOffsetsRetained, ReasonExplicitOffsetExpiryBeforeWindow, "orders", 0}},
			message:    "explicit retention time",
		},
		{
			name:  "Empty classic group: the explicit expiry is its soonest",
			group: GroupObservation{State: GroupStateEmpty, Protocol: ProtocolClassic, ProtocolType: ProtocolTypeConsumer, EmptySince: now.Add(-time.Hour)},
			topics: []TopicObservation{topic("orders", func() PartitionObservation {
				p := withCommit(part(0, 0, 900, 900), now.Add(-time.Hour))
				p.ExpireAt = now.Add(4 * day)
				return p
			}())},
			verdict:   Proven,
			soonestIn: 4 * day, hasSoonest: true, exact: true,
		},
		{
			name:    "share group: no offset expiry clock, offsets.retention.minutes does not apply",
			group:   GroupObservation{State: GroupStateEmpty, Protocol: ProtocolShare},
			topics:  []TopicObservation{topic("orders", part(0, 0, 900, 900))},
			verdict: Proven,
			message: "share group",
		},
		{
			// The third case: a KIP-848 group that is running, with
			// an idle partition its client (franz-go) never re-commits: once
			// the group is Empty that offset dies a day later.
			name:  "KIP-848 group with an idle partition committed 6 days ago",
			group: kip848,
			topics: []TopicObservation{topic("orders",
				withPreceding(part(0, 0, 900, 900), now.Add(-time.Minute)),
				withPreceding(part(1, 0, 40, 40), now.Add(-6*day)),
			)},
			verdict:    Unknown,
			violations: []violationWant{{ClauseGroupOffsetsRetained, ReasonOffsetsMayExpireBeforeWindow, "orders", 1}},
			message:    "(a KIP-848 consumer group, once Empty)",
			soonestIn:  day - time.Hour, hasSoonest: true,
		},
		{
			name:       "streams group offsets expire per commit once Empty",
			group:      GroupObservation{State: GroupStateEmpty, Protocol: ProtocolStreams},
			topics:     []TopicObservation{topic("orders", withCommit(part(0, 0, 900, 900), now.Add(-5*day)))},
			verdict:    Violated,
			violations: []violationWant{{ClauseGroupOffsetsRetained, ReasonOffsetsExpireBeforeWindow, "orders", 0}},
			message:    "(a streams group, once Empty)",
			soonestIn:  2 * day, hasSoonest: true, exact: true,
		},
		{
			// KIP-496: a Stable classic consumer group expires the offsets
			// of topics no member subscribes to any more, per commit.
			name: "Stable classic consumer group: an unsubscribed topic expires per commit",
			group: GroupObservation{State: GroupStateStable, Protocol: ProtocolClassic, ProtocolType: ProtocolTypeConsumer,
				SubscriptionKnown: true, Subscribed: []string{"orders"}},
			topics: []TopicObservation{
				topic("orders", withCommit(part(0, 0, 900, 900), now.Add(-6*day))), // subscribed: no clock
				topic("refunds", withCommit(part(0, 0, 90, 90), now.Add(-6*day))),
			},
			verdict:    Violated,
			violations: []violationWant{{ClauseGroupOffsetsRetained, ReasonOffsetsExpireBeforeWindow, "refunds", 0}},
			message:    "no member of the Stable group subscribes to the topic (KIP-496)",
			soonestIn:  day, hasSoonest: true, exact: true,
		},
		{
			name: "Stable classic consumer group whose subscription is unknown: no clock runs",
			group: GroupObservation{State: GroupStateStable, Protocol: ProtocolClassic, ProtocolType: ProtocolTypeConsumer,
				Subscribed: []string{"orders"}},
			topics:  []TopicObservation{topic("refunds", withCommit(part(0, 0, 90, 90), now.Add(-6*day)))},
			verdict: Proven,
			message: "the group's offsets expire that long after it becomes Empty",
		},
		{
			name:    "Kafka Connect group (protocol type connect) keeps the Empty clock",
			group:   GroupObservation{State: GroupStateStable, Protocol: ProtocolClassic, ProtocolType: "connect", SubscriptionKnown: true},
			topics:  []TopicObservation{topic("refunds", withCommit(part(0, 0, 90, 90), now.Add(-6*day)))},
			verdict: Proven,
		},
		{
			// A consumer catching up on a backlog of week-old records: the
			// records are old but the observer saw the offset move an hour
			// ago, so the commit is at least that recent.
			name:  "a commit the observer witnessed beats an old record timestamp",
			group: simple,
			topics: []TopicObservation{topic("clicks", func() PartitionObservation {
				p := withPreceding(part(0, 0, 500, 300), now.Add(-6*day))
				p.CommittedAfter = now.Add(-time.Hour)
				return p
			}())},
			verdict: Proven,
			// Less transaction.max.timeout.ms and the abort check (Kafka's
			// defaults, 15m10s): a transactional commit shows that long
			// after the time it carries (txncommit_test.go).
			message:   "the commit was seen after an observation at 2026-11-30T02:00:00Z, less 15m10s",
			soonestIn: retention - time.Hour - 15*time.Minute - 10*time.Second, hasSoonest: true,
		},
		{
			name:       "offset 0 has no record before it to date the commit",
			group:      simple,
			topics:     []TopicObservation{topic("clicks", part(0, 0, 500, 0))},
			verdict:    Unknown,
			violations: []violationWant{{ClauseGroupOffsetsRetained, ReasonOffsetsMayExpireBeforeWindow, "clicks", 0}},
			message:    "when that was is unknown",
		},
		{
			// A group with committed offsets that neither describe call
			// knows (a Kafka 4.1 streams group on a broker the observer did
			// not ask with StreamsGroupDescribe) is never read as "Dead,
			// nothing expires".
			name:       "committed offsets of a group no describe call knows: kind unknown",
			group:      GroupObservation{State: GroupStateDead},
			topics:     []TopicObservation{topic("orders", part(0, 0, 900, 900))},
			verdict:    Unknown,
			violations: []violationWant{{ClauseGroupOffsetsRetained, ReasonGroupTypeUnknown, "", -1}},
			message:    "the clock its offsets expire on is unknown",
		},
		{
			name:    "a group no call knows and nothing committed: a fresh group",
			group:   GroupObservation{State: GroupStateDead},
			topics:  []TopicObservation{topic("orders", part(0, 0, 900, NoOffset))},
			verdict: Proven,
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			o := observation(c.topics...)
			o.OffsetsRetentionMinutes = minutes(retention)
			c.group.ID = "flink-clicks"
			o.Group = c.group
			p := policy()
			for _, tp := range c.topics {
				p.Topics = append(p.Topics, tp.Name)
			}
			p.RecoveryWindow = window3d
			r := Evaluate(o, p, now)
			w := want{verdict: c.verdict, violations: c.violations}
			w.check(t, r)
			cond := conditionOf(t, r, ClauseGroupOffsetsRetained)
			text := cond.Message
			if len(r.Violations) > 0 {
				text = r.Violations[0].Message
			}
			if !strings.Contains(text, c.message) {
				t.Errorf("message = %q\nwant it to contain %q", text, c.message)
			}
			e := r.OffsetExpiry
			if e.HasSoonest != c.hasSoonest || (c.hasSoonest && (r.GroupOffsetsExpireIn != c.soonestIn || e.Exact != c.exact)) {
				t.Errorf("soonest expiry = %+v (in %v), want in %v (has %v, exact %v)", e, r.GroupOffsetsExpireIn, c.soonestIn, c.hasSoonest, c.exact)
			}
			// The per-commit clause never repeats itself as a warning.
			if findWarning(r, WarningGroupOffsetsExpireIn) != nil && len(c.violations) > 0 {
				t.Errorf("a groupOffsetsExpireIn warning besides the clause's violation: %+v", r.Warnings)
			}
		})
	}
}

// When offsets.retention.minutes is already shorter than the window, every
// per-commit offset would fail too: one violation says it, not one per
// partition.
func TestShortOffsetsRetentionIsReportedOnce(t *testing.T) {
	o := observation(topic("clicks", part(0, 0, 10, 10), part(1, 0, 10, 10)))
	o.OffsetsRetentionMinutes = minutes(7 * day)
	o.Group = GroupObservation{State: GroupStateEmpty, Protocol: ProtocolClassic}
	r := Evaluate(o, policy("clicks"), now)
	want{verdict: Violated, violations: []violationWant{
		{ClauseGroupOffsetsRetained, ReasonOffsetsRetentionShorterThanWindow, "", -1},
	}}.check(t, r)
}

// A failed group describe call leaves the group's kind unknown: the clause
// is not evaluated and only the failure is listed.
func TestDescribeFailureLeavesTheExpiryClockNotEvaluated(t *testing.T) {
	o := observation(topic("orders", part(0, 0, 900, 900)))
	o.Group = GroupObservation{}
	o.Failures = []Failure{{Reason: ReasonAuthorizationFailed, API: APIDescribeGroups, Partition: -1, Message: "denied"}}
	r := Evaluate(o, policy("orders"), now)
	c := conditionOf(t, r, ClauseGroupOffsetsRetained)
	if c.Status != ConditionUnknown || c.Reason != ReasonNotEvaluated || !strings.Contains(c.Message, "AuthorizationFailed (DescribeGroups)") {
		t.Errorf("GroupOffsetsRetained = %+v", c)
	}
	want{verdict: Unknown, violations: []violationWant{{ClauseKafkaReachable, ReasonAuthorizationFailed, "", -1}}}.check(t, r)
}

// Old CreateTime timestamps let records be deleted sooner than the window
// after they are written: advice in status, never a reason to deny.
func TestRecordTimestampsWarning(t *testing.T) {
	cases := []struct {
		name      string
		typ       ConfigValue
		beforeMax ConfigValue
		want      string // substring; "" means no warning
	}{
		{"Kafka's defaults accept any age", cfg("CreateTime"), cfg("9223372036854775807"), "accepts record timestamps of any age"},
		{"before Kafka 3.6 there is no bound to read", cfg("CreateTime"), ConfigValue{}, "accepts record timestamps of any age"},
		{"a bound beyond retention.ms − window", cfg("CreateTime"), millis(25 * day), "accepts record timestamps up to 600h (25d) old"},
		{"a bound inside retention.ms − window", cfg("CreateTime"), millis(20 * day), ""},
		{"LogAppendTime: the broker stamps records", cfg("LogAppendTime"), cfg("9223372036854775807"), ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tp := topic("settle-task", part(0, 0, 10, 10))
			tp.TimestampType, tp.TimestampBeforeMaxMs = c.typ, c.beforeMax
			r := Evaluate(observation(tp), policy("settle-task"), now)
			w := findWarning(r, WarningRecordTimestamps)
			switch {
			case c.want == "" && w != nil:
				t.Errorf("unexpected warning %q", w.Message)
			case c.want != "" && (w == nil || !strings.Contains(w.Message, c.want) ||
				!strings.Contains(w.Message, "set message.timestamp.before.max.ms to at most 1728000000")):
				t.Errorf("warning = %+v, want it to contain %q and the value to set", w, c.want)
			}
			if r.Verdict != Proven {
				t.Errorf("verdict %s: a warning never denies", r.Verdict)
			}
		})
	}
}
