package proof

import (
	"strings"
	"testing"
)

// Issue 33 item 4, seed 000 (a missing committed offset is not told apart
// from a fresh start): a partition added to the topic while the group was
// down, written to before it came back, has no committed offset on a log
// that starts at 0. The Java consumer starts it at auto.offset.reset,
// latest by default, a share group at share.auto.offset.reset, latest by
// default: every record there is skipped. Before the fix the proof called
// it a fresh group reading from 0 (Proven). A group that never read the
// topic still is one: nothing of its own can be skipped.
func TestUnreadPartitionOfAReadTopic(t *testing.T) {
	// orders[0] committed, orders[1] added while down and written to.
	added := func() Observation {
		return observation(topic("orders", part(0, 0, 40, 40), part(1, 0, 5, NoOffset)))
	}
	share := func(reset ConfigValue, problem string) Observation {
		obs := added()
		obs.Group.Protocol, obs.Group.ProtocolType, obs.Group.State = ProtocolShare, "", GroupStateEmpty
		obs.Group.ShareAutoOffsetReset, obs.Group.ShareAutoOffsetResetProblem = reset, problem
		return obs
	}
	held := policy("orders")
	held.ResetFailsLoudly = true

	cases := []struct {
		name    string
		obs     Observation
		policy  Policy
		verdict Verdict
		reason  string // of orders[1]; "" when proven
		// in the violation's message: the partition, and the way out that
		// changes the verdict.
		says []string
	}{
		{
			name: "consumer group without the consumer clause: its reset is unknown, latest (Java's default) skips 5 records",
			obs:  added(), policy: policy("orders"), verdict: Unknown, reason: ReasonOffsetResetMaySkipRecords,
			says: []string{"orders[1]", "1 other partition of orders", "5 records", "latest, the Java client's default",
				"kafka-consumer-groups --group ledger-settle-consumer --topic orders:1 --reset-offsets --to-earliest --execute", "spec.consumer"},
		},
		{
			// none throws NoOffsetForPartitionException there: nothing is
			// skipped, the seek warning asks for a commit (TestSeekRequired…).
			name: "consumer clause (none): the client stops there instead of skipping",
			obs:  added(), policy: held, verdict: Proven,
		},
		{
			name: "a commit for the added partition: in range", obs: observation(topic("orders", part(0, 0, 40, 40), part(1, 0, 5, 0))),
			policy: policy("orders"), verdict: Proven,
		},
		{
			name: "the added partition is still empty: nothing to skip",
			obs:  observation(topic("orders", part(0, 0, 40, 40), part(1, 0, 0, NoOffset))), policy: policy("orders"), verdict: Proven,
		},
		{
			name: "a new group on a topic it never read: nothing of its own can be skipped",
			obs:  observation(topic("orders", part(0, 0, 40, NoOffset), part(1, 0, 5, NoOffset))), policy: policy("orders"), verdict: Proven,
		},
		{
			name: "commits on another topic only: this topic was never read",
			obs: observation(topic("orders", part(0, 0, 40, NoOffset), part(1, 0, 5, NoOffset)),
				topic("payments", part(0, 0, 9, 9))),
			policy: policy("orders", "payments"), verdict: Proven,
		},
		{
			// Kafka 4.1–4.3 (share.auto.offset.reset decides).
			name: "share group, share.auto.offset.reset latest (the default): the 5 records are skipped",
			obs:  share(cfg("latest"), ""), policy: policy("orders"), verdict: Violated, reason: ReasonResetToLatestSkipsRecords,
			says: []string{"orders[1]", "no share-partition start offset", "share.auto.offset.reset is latest", "skips all 5 records",
				"--add-config share.auto.offset.reset=earliest", "kafka-share-groups --group ledger-settle-consumer --topic orders:1"},
		},
		{
			// KAFKA-20742: the coordinator starts new partitions of a topic
			// the group knows at 0, whatever the reset says.
			name: "share group on Kafka 4.4+, latest: a known topic's new partition starts at 0",
			obs: func() Observation {
				obs := share(cfg("latest"), "")
				obs.Group.ShareNewPartitionsStartAtZero = true
				return obs
			}(),
			policy: policy("orders"), verdict: Proven,
		},
		{
			name: "share group, share.auto.offset.reset earliest: starts at 0", obs: share(cfg("earliest"), ""),
			policy: policy("orders"), verdict: Proven,
		},
		{
			name: "share group, upper case as kafka-configs accepts it", obs: share(cfg("LATEST"), ""),
			policy: policy("orders"), verdict: Violated, reason: ReasonResetToLatestSkipsRecords,
		},
		{
			name: "share group, share.auto.offset.reset not read: unknown, says why",
			obs:  share(ConfigValue{}, "DescribeConfigs on group g denied (GROUP_AUTHORIZATION_FAILED)"), policy: policy("orders"),
			verdict: Unknown, reason: ReasonOffsetResetMaySkipRecords,
			says: []string{"GROUP_AUTHORIZATION_FAILED", "latest, the default", "share.auto.offset.reset=earliest"},
		},
		{
			name: "share group, by_duration: which records are older is not known", obs: share(cfg("by_duration:PT1H"), ""),
			policy: policy("orders"), verdict: Unknown, reason: ReasonOffsetResetMaySkipRecords,
			says: []string{"by_duration:pt1h"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := Evaluate(tc.obs, tc.policy, tc.obs.ObservedAt)
			if r.Verdict != tc.verdict {
				t.Fatalf("verdict %s, want %s: %+v", r.Verdict, tc.verdict, r.Violations)
			}
			var pr *PartitionResult
			for i := range r.Partitions {
				if r.Partitions[i].Topic == "orders" && r.Partitions[i].Partition == 1 {
					pr = &r.Partitions[i]
				}
			}
			if pr == nil {
				t.Fatalf("no result for orders[1]: %+v", r.Partitions)
			}
			if pr.Reason != tc.reason {
				t.Fatalf("orders[1] reason %q, want %q", pr.Reason, tc.reason)
			}
			if tc.reason == "" {
				if len(r.Violations) != 0 {
					t.Errorf("violations %+v, want none", r.Violations)
				}
				return
			}
			if len(r.Violations) != 1 {
				t.Fatalf("violations %+v, want one for orders[1]", r.Violations)
			}
			v := r.Violations[0]
			if v.Reason != tc.reason || v.Clause != ClauseOffsetsInRange || v.Partition != 1 ||
				v.SkippedRecords != 5 || v.LogStart != 0 || v.LogEnd != 5 || v.Committed != NoOffset || v.ExpiredRecords != 0 {
				t.Errorf("violation %+v: want %s on orders[1] with skippedRecords 5 as data", v, tc.reason)
			}
			for _, s := range tc.says {
				if !strings.Contains(v.Message, s) {
					t.Errorf("message %q lacks %q", v.Message, s)
				}
			}
			if r.Summary.Missing != 1 {
				t.Errorf("summary %+v: orders[1] has no committed offset", r.Summary)
			}
			ready := r.Conditions[len(r.Conditions)-1]
			if ready.Type != ClauseReady || ready.Reason != tc.reason {
				t.Errorf("Ready %+v, want reason %s", ready, tc.reason)
			}
		})
	}
}

// A skip under latest is loss at the next start, not a risk the rollout
// can wait out: the rollout is the start. Its Unknown twin says a fact is
// missing.
func TestResetToLatestRanksAsLoss(t *testing.T) {
	if !IsLoss(ReasonResetToLatestSkipsRecords) || IsRisk(ReasonResetToLatestSkipsRecords) {
		t.Errorf("%s: IsLoss %v IsRisk %v, want a loss", ReasonResetToLatestSkipsRecords,
			IsLoss(ReasonResetToLatestSkipsRecords), IsRisk(ReasonResetToLatestSkipsRecords))
	}
	if !missingFact(ReasonOffsetResetMaySkipRecords) || IsRisk(ReasonOffsetResetMaySkipRecords) {
		t.Errorf("%s must be a missing fact (Unknown), not a risk", ReasonOffsetResetMaySkipRecords)
	}
	// A share group under latest: the skip leads Ready.
	obs := observation(topic("orders", part(0, 0, 40, 40), part(1, 0, 5, NoOffset)))
	obs.Group.Protocol, obs.Group.ShareAutoOffsetReset = ProtocolShare, cfg("latest")
	r := Evaluate(obs, policy("orders"), now)
	if ready := r.Conditions[len(r.Conditions)-1]; ready.Reason != ReasonResetToLatestSkipsRecords {
		t.Errorf("Ready reason %s", ready.Reason)
	}
}
