package proof

import (
	"strings"
	"testing"
	"time"
)

// Issue 22: Kafka 4.x semantics the proof had wrong (share groups, explicit
// expiry, tiered topics with an empty cleanup.policy, producer clocks,
// headroom below the window, recreated topics). Each case failed on the
// proof before the change.
func TestKafka4Semantics(t *testing.T) {
	lagging := func(committedTs time.Time) TopicObservation {
		p := part(0, 0, 1000, 400)
		p.CommittedTimestamp = committedTs
		return topic("settle-task", p)
	}
	shareGroup := GroupObservation{ID: "ledger-settle-consumer", State: GroupStateEmpty, Protocol: ProtocolShare}
	cases := []struct {
		name   string
		obs    Observation
		policy Policy
		want   want
		also   func(t *testing.T, r Result)
	}{
		{
			// Item 6, seed 000: the record the lagging group reads next was
			// written 25 days ago under 30 days of retention: down for its
			// 10-day window from now, the group loses it on day 5.
			name: "lagging group whose oldest unconsumed record expires before the window ends",
			obs:  observation(lagging(now.Add(-25 * day))),
			want: want{verdict: Violated, violations: []violationWant{
				{ClauseRetentionCoversWindow, ReasonRecoveryHeadroomShorterThanWindow, "settle-task", 0},
			}},
			also: func(t *testing.T, r Result) {
				ready := conditionOf(t, r, ClauseReady)
				if strings.Contains(ready.Message, "can be down for") && !strings.Contains(ready.Message, "cannot be down") {
					t.Errorf("Ready %q promises the window the headroom does not cover", ready.Message)
				}
				// The proofID must not move while the consumer catches up
				// (the committed offset advances, the gap stays): that is
				// what lets a faster consumer ship with the override.
				o := observation(lagging(now.Add(-24 * day)))
				o.Topics[0].Partitions[0].Committed = 700
				if again := Evaluate(o, policy("settle-task"), now); again.ProofID != r.ProofID {
					t.Errorf("proofID moved with the committed offset: %s then %s", r.ProofID, again.ProofID)
				}
			},
		},
		{
			name: "healthy twin: the oldest unconsumed record outlives the window",
			obs:  observation(lagging(now.Add(-19 * day))),
			want: proven(),
		},
		{
			// Item 4: Kafka 4.2+ lets a tiered topic have an empty
			// cleanup.policy; the remote log still deletes by retention.ms.
			name: "tiered topic with an empty cleanup.policy is judged like delete",
			obs: func() Observation {
				tp := topic("settle-task", part(0, 0, 10, 10))
				tp.CleanupPolicy, tp.RemoteStorageEnable, tp.RetentionMs = cfg(""), cfg("true"), millis(3*day)
				return observation(tp)
			}(),
			want: want{verdict: Violated, violations: []violationWant{
				{ClauseRetentionCoversWindow, ReasonRetentionShorterThanWindow, "settle-task", -1},
			}},
		},
		{
			name: "empty cleanup.policy without tiered storage keeps records forever",
			obs: func() Observation {
				tp := topic("settle-task", part(0, 0, 10, 10))
				tp.CleanupPolicy, tp.RemoteStorageEnable, tp.RetentionMs = cfg(""), cfg("false"), millis(3*day)
				return observation(tp)
			}(),
			want: want{verdict: Violated, violations: []violationWant{
				{ClauseRetentionCoversWindow, ReasonInfiniteRetentionNotAllowed, "settle-task", -1},
			}},
		},
		{
			// Item 1: a share group's progress is its SPSO. Retention moved
			// the log start to 500; the SPSO is 600: nothing was lost. The
			// consumer-group clauses (no committed offset while log start >
			// 0, offsets.retention.minutes) do not apply.
			name: "share group whose share-partition start offset is above log start is proven",
			obs: func() Observation {
				o := observation(topic("settle-task", part(0, 500, 1000, 600)))
				o.Group = shareGroup
				o.OffsetsRetentionMinutes = minutes(time.Hour)
				return o
			}(),
			want: want{verdict: Proven, conditions: map[string]condWant{
				ClauseGroupOffsetsRetained: {ConditionTrue, ReasonShareGroupOffsetsRetained},
			}},
			also: func(t *testing.T, r Result) {
				if r.OffsetExpiry.Clock != "" || r.HasGroupOffsetsExpireIn {
					t.Errorf("a share group has no offset expiry clock: %+v", r.OffsetExpiry)
				}
			},
		},
		{
			name: "share group without share state while log start is past 0",
			obs: func() Observation {
				o := observation(topic("settle-task", part(0, 500, 1000, NoOffset)))
				o.Group = shareGroup
				return o
			}(),
			want: want{verdict: Violated, violations: []violationWant{
				{ClauseOffsetsInRange, ReasonNoShareStartOffset, "settle-task", 0},
			}},
		},
		{
			// Kafka 4.4 keeps the persisted SPSO at the first batch after
			// every record was acknowledged (test/realkafka/proof): below
			// log start with nothing unacknowledged, nothing was lost.
			name: "share group with its SPSO below log start and nothing unacknowledged",
			obs: func() Observation {
				p := part(0, 8, 10, 0)
				p.ShareLag, p.ShareLagKnown = 0, true
				o := observation(topic("settle-task", p))
				o.Group = shareGroup
				return o
			}(),
			want: want{verdict: Proven, conditions: map[string]condWant{
				ClauseGroupOffsetsRetained: {ConditionTrue, ReasonShareGroupOffsetsRetained},
			}},
		},
		{
			// Seed 000 on a share group: 10 records unacknowledged, 2 left
			// in the log: 8 expired unacknowledged, and Kafka moves the
			// SPSO past them silently.
			name: "share group with more unacknowledged records than the log holds",
			obs: func() Observation {
				p := part(0, 8, 10, 0)
				p.ShareLag, p.ShareLagKnown = 10, true
				o := observation(topic("settle-task", p))
				o.Group = shareGroup
				return o
			}(),
			want: want{verdict: Violated, violations: []violationWant{
				{ClauseOffsetsInRange, ReasonShareRecordsExpired, "settle-task", 0},
			}},
			also: func(t *testing.T, r Result) {
				if r.ExpiredRecords != 8 || r.Summary.Expired != 1 {
					t.Errorf("expired records %d (summary %+v), want 8 in 1 partition", r.ExpiredRecords, r.Summary)
				}
			},
		},
		{
			name: "share group below log start whose unacknowledged records may all be retained",
			obs: func() Observation {
				p := part(0, 8, 10, 0)
				p.ShareLag, p.ShareLagKnown = 2, true
				o := observation(topic("settle-task", p))
				o.Group = shareGroup
				return o
			}(),
			want: want{verdict: Unknown, violations: []violationWant{
				{ClauseOffsetsInRange, ReasonShareStartOffsetBelowLogStart, "settle-task", 0},
			}},
		},
		{
			// Items 1 and 6: the record at the SPSO was written 25 days ago
			// under 30 days of retention: the broker will move the SPSO past
			// it silently within 5 days.
			name: "share group whose SPSO record expires before the window ends",
			obs: func() Observation {
				o := observation(lagging(now.Add(-25 * day)))
				o.Group = shareGroup
				return o
			}(),
			want: want{verdict: Violated, violations: []violationWant{
				{ClauseRetentionCoversWindow, ReasonRecoveryHeadroomShorterThanWindow, "settle-task", 0},
			}},
		},
		{
			// Item 10: the topic was deleted and recreated; the group's
			// offset 400 was committed for the old topic and reads as in
			// range of the new one.
			name: "committed offset of a deleted topic with the same name",
			obs: func() Observation {
				p := part(0, 0, 1000, 400)
				p.CommitTopicID = "0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a"
				tp := topic("settle-task", p)
				tp.TopicID = "0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b"
				return observation(tp)
			}(),
			want: want{verdict: Violated, violations: []violationWant{
				{ClauseOffsetsInRange, ReasonCommittedOffsetOfDeletedTopic, "settle-task", 0},
			}},
		},
		{
			name: "healthy twin: the commit's topic ID is the topic's",
			obs: func() Observation {
				p := part(0, 0, 1000, 400)
				p.CommitTopicID = "0B0B0B0B0B0B0B0B0B0B0B0B0B0B0B0B"
				tp := topic("settle-task", p)
				tp.TopicID = "0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b"
				return observation(tp)
			}(),
			want: proven(),
		},
		{
			// Item 2: the brokers convert a classic group whose members
			// switch to group.protocol=consumer; its idle partition's offset,
			// last committed 6 days ago (exact), then expires a day later
			// under 7 days of offsets.retention.minutes.
			name: "classic group the brokers may migrate: an idle partition's old commit expires before the window",
			obs: func() Observation {
				p := part(0, 0, 90, 90)
				p.LastCommit = now.Add(-6 * day)
				o := observation(topic("settle-task", p))
				o.OffsetsRetentionMinutes = minutes(7 * day)
				o.Group.MigrationPossible = true
				return o
			}(),
			policy: func() Policy { p := policy("settle-task"); p.RecoveryWindow = 72 * time.Hour; return p }(),
			want: want{verdict: Violated, violations: []violationWant{
				{ClauseGroupOffsetsRetained, ReasonOffsetsExpireBeforeWindow, "settle-task", 0},
			}},
			also: func(t *testing.T, r Result) {
				if c := conditionOf(t, r, ClauseGroupOffsetsRetained); !strings.Contains(c.Message, "KIP-848 migration") {
					t.Errorf("GroupOffsetsRetained %q does not name the migration", c.Message)
				}
			},
		},
		{
			name: "healthy twin: a broker that cannot migrate keeps the classic group on its Empty clock",
			obs: func() Observation {
				p := part(0, 0, 90, 90)
				p.LastCommit = now.Add(-6 * day)
				o := observation(topic("settle-task", p))
				o.OffsetsRetentionMinutes = minutes(7 * day)
				return o
			}(),
			policy: func() Policy { p := policy("settle-task"); p.RecoveryWindow = 72 * time.Hour; return p }(),
			want:   proven(),
		},
		{
			// Item 3: without readOffsetsTopic an explicit retention time is
			// invisible: the holding message says so, and why.
			name: "classic group without readOffsetsTopic: explicit expiry named as unseen",
			obs:  observation(topic("settle-task", part(0, 0, 10, 10))),
			want: proven(),
			also: func(t *testing.T, r Result) {
				if c := conditionOf(t, r, ClauseGroupOffsetsRetained); !strings.Contains(c.Message, "visible only in __consumer_offsets, "+
					"which spec.kafka.readOffsetsTopic: false turns off") {
					t.Errorf("GroupOffsetsRetained %q does not say explicit expiries are unseen", c.Message)
				}
			},
		},
		{
			// Issue 32: a principal denied Read on __consumer_offsets gets
			// the bounds, and the condition names the grant.
			name: "classic group whose principal may not read __consumer_offsets: the grant named",
			obs: func() Observation {
				o := observation(topic("settle-task", part(0, 0, 10, 10)))
				o.OffsetsTopic = OffsetsTopicRead{Requested: true, Reason: OffsetsTopicDenied,
					Problem: "Fetch on __consumer_offsets denied (TOPIC_AUTHORIZATION_FAILED)"}
				return o
			}(),
			want: proven(),
			also: func(t *testing.T, r Result) {
				c := conditionOf(t, r, ClauseGroupOffsetsRetained)
				if !strings.Contains(c.Message, "the guard's principal may not read __consumer_offsets") ||
					!strings.Contains(c.Message, GrantOffsetsTopicRead) {
					t.Errorf("GroupOffsetsRetained %q does not name the missing ACL and its grant", c.Message)
				}
				var found bool
				for _, w := range r.Warnings {
					if w.Type == WarningOffsetsTopic && w.Reason == OffsetsTopicDenied && strings.Contains(w.Message, GrantOffsetsTopicRead) {
						found = true
					}
				}
				if !found {
					t.Errorf("warnings %+v: no offsetsTopic warning with reason Denied and the grant", r.Warnings)
				}
			},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := c.policy
			if p.GroupID == "" {
				p = policy("settle-task")
			}
			r := Evaluate(c.obs, p, now)
			c.want.check(t, r)
			if c.also != nil {
				c.also(t, r)
			}
		})
	}
}
