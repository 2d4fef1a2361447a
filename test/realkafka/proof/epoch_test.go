package proof

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/retentionguard/retention-guard/internal/kafka"
	"github.com/retentionguard/retention-guard/internal/kafka/apachekafka"
	"github.com/retentionguard/retention-guard/internal/proof"
)

// Issue 33 item 1, seed 000's loss by another road: a log that diverged
// below a group's position and grew back. OffsetFetch v5+ returns the
// leader epoch a commit carries, and the Java consumer validates it
// before it fetches (SubscriptionState.maybeCompleteValidation): it asks
// the partition's leader where that epoch ends (OffsetsForLeaderEpoch) and
// rewinds there when the end is below its position (throws under
// auto.offset.reset=none); an epoch the leader does not know stalls or
// resets it. Before this change the observer read the offset only: both
// groups below were Proven (run on 3.9.2 and 4.4.0 before the fix).
//
// On one broker the leader epoch moves on a restart (KRaft combined mode:
// the controlled shutdown takes the only replica's leadership away, the
// broker's return gives it back in a new epoch;
// LeaderEpochFileCache.assign at the new leader's log end). Five records
// are written in the first epoch E0, the broker restarts, ten more are
// written in the new epoch E1. So E0 ends at offset 5
// (LeaderEpochFileCache.endOffsetFor: the start of the next epoch it
// knows), the log end is 15. A group whose commit says "offset 10, read in
// epoch E0" claims records at 5–9 of E0 that the log never had in that
// epoch: exactly what an unclean election leaves behind (the group read
// 5–9 on the old leader, the new one truncated them and wrote others).
// Committed with OffsetCommit's CommittedLeaderEpoch (v6+), as a client
// that read those records does. A real truncation (an unclean election
// on three nodes) that grows back: test/realkafka/faults
// TestUncleanElectionGrowsBackPastCommitted.
//
// Every setting is Kafka's default but the topic's retention.ms (30 days,
// so that the 72 h window holds on both lines and only the epoch decides).
func TestCommitPastItsLeaderEpochIsADivergence(t *testing.T) {
	for _, d := range apachekafka.Dists(t) {
		t.Run(d.Line(), func(t *testing.T) {
			t.Parallel()
			b := apachekafka.Start(t, d)
			const topic = "ledger"
			b.CreateTopic(t, topic, 1, map[string]string{"retention.ms": "2592000000"})
			b.ProduceTo(t, topic, 0, 5)
			e0 := leaderEpoch(t, b, topic)
			b.Restart(t, b.Nodes[0].ID)
			e1 := waitEpochAbove(t, b, topic, e0)
			// Offsets 5-14 stamped two days ago, a minute apart: the
			// record at 5, where a diverged consumer rewinds to, dates
			// its headroom (28 days of the 30, above the window).
			written := time.UnixMilli(time.Now().Add(-48 * time.Hour).UnixMilli())
			stamp := func(offset int64) time.Time { return written.Add(time.Duration(offset-5) * time.Minute) }
			var recs []*kgo.Record
			for offset := int64(5); offset < 15; offset++ {
				recs = append(recs, &kgo.Record{Topic: topic, Partition: 0, Timestamp: stamp(offset), Value: []byte("l")})
			}
			b.ProduceRecords(t, recs...)
			t.Logf("Apache Kafka %s: leader epoch %d for offsets 0-4, %d after the restart (offsets 5-14)", d.Version, e0, e1)

			policy := func(group string) proof.Policy {
				return proof.Policy{GroupID: group, Topics: []string{topic}, RecoveryWindow: 72 * time.Hour}
			}
			judge := func(group string) (proof.PartitionObservation, proof.Result) {
				t.Helper()
				target := kafka.Target{Group: group, Topics: []string{topic}, ReadOffsetsTopic: true}
				obs := observeUntil(t, b, target, func(po proof.PartitionObservation) bool {
					return !po.LastCommit.IsZero() && po.LogEnd == 15 && po.CommitEpoch.EndKnown
				})
				if len(obs.Topics) != 1 || len(obs.Topics[0].Partitions) != 1 {
					t.Fatalf("%s: observed %+v", group, obs.Topics)
				}
				return obs.Topics[0].Partitions[0], proof.Evaluate(obs, policy(group), obs.ObservedAt)
			}

			// The control: offset 10 read in the current epoch.
			commitInEpoch(t, b, "ledger-current", topic, 10, e1)
			po, r := judge("ledger-current")
			if r.Verdict != proof.Proven || po.CommitEpoch.EndOffset != 15 {
				t.Fatalf("commit 10 in the current epoch %d: %s %v (epoch end %+v), want Proven (the leader answers its log end 15)",
					e1, r.Verdict, reasons(r), po.CommitEpoch)
			}

			// Offset 10 read in E0, which ends at 5: 5 records diverged,
			// a risk (issue 32: the consumer validates the epoch and
			// rewinds to 5, test/realkafka/clients).
			commitInEpoch(t, b, "ledger-diverged", topic, 10, e0)
			po, r = judge("ledger-diverged")
			if po.CommitEpoch != (proof.CommitEpoch{HasEpoch: true, Epoch: e0, EndKnown: true, EndEpoch: e0, EndOffset: 5}) {
				t.Fatalf("commit 10 in epoch %d: the leader answered %+v, want epoch %d ending at 5", e0, po.CommitEpoch, e0)
			}
			v := only(t, r, proof.ReasonCommittedEpochDiverged)
			if r.Verdict != proof.Violated || v.DivergedRecords != 5 || v.Committed != 10 || !proof.IsRisk(v.Reason) {
				t.Fatalf("commit 10 in epoch %d ending at 5: %s %v (diverged records %d), want Violated, %s (a risk), 5 records",
					e0, r.Verdict, reasons(r), v.DivergedRecords, proof.ReasonCommittedEpochDiverged)
			}
			// The consumer rewinds to 5: the headroom is the record at 5's
			// (its timestamp + retention.ms − now), not the record at 10's.
			if !po.RewindTimestamp.Equal(stamp(5)) || !po.CommittedTimestamp.Equal(stamp(10)) {
				t.Fatalf("rewind timestamp %v, committed %v; want the records at 5 (%v) and 10 (%v)",
					po.RewindTimestamp, po.CommittedTimestamp, stamp(5), stamp(10))
			}
			if want := stamp(5).Add(30 * 24 * time.Hour); !r.HasRecoveryHeadroom || !r.RecoveryHeadroomExpiresAt.Equal(want) ||
				!r.Partitions[0].HasHeadroom || r.Partitions[0].Headroom != r.RecoveryHeadroom {
				t.Fatalf("recovery headroom %v (%v, expires %v), partition %v; want it to expire at %v, from the record at 5",
					r.RecoveryHeadroom, r.HasRecoveryHeadroom, r.RecoveryHeadroomExpiresAt, r.Partitions[0].Headroom, want)
			}
			if until := stamp(5).Add(30 * 24 * time.Hour).UTC().Format(time.RFC3339); !strings.Contains(v.Message, "from 5 on, until "+until) {
				t.Errorf("message %q does not say the records from 5 on are kept until %s", v.Message, until)
			}

			// The group's next commit ends it: the consumer, rewound to 5,
			// commits 5 in the epoch the leader gave it (E0, which ends
			// there; SubscriptionState.maybeCompleteValidation seeks to
			// the end with that epoch).
			commitInEpoch(t, b, "ledger-rewound", topic, 5, e0)
			target := kafka.Target{Group: "ledger-rewound", Topics: []string{topic}, ReadOffsetsTopic: true}
			obs := observeUntil(t, b, target, func(po proof.PartitionObservation) bool { return po.Committed == 5 && po.CommitEpoch.EndKnown })
			if r = proof.Evaluate(obs, policy("ledger-rewound"), obs.ObservedAt); r.Verdict != proof.Proven {
				t.Fatalf("the group's next commit, 5 in epoch %d: %s %v, want Proven", e0, r.Verdict, reasons(r))
			}

			// The way out: reset the group to where the log diverged
			// (kafka-consumer-groups --reset-offsets --to-offset 5 commits
			// without an epoch): Proven.
			commitInEpoch(t, b, "ledger-diverged", topic, 5, -1)
			po, r = judgeNoEpoch(t, b, topic, "ledger-diverged", policy("ledger-diverged"))
			if r.Verdict != proof.Proven || po.CommitEpoch.HasEpoch {
				t.Fatalf("after the reset to 5: %s %v (epoch %+v), want Proven", r.Verdict, reasons(r), po.CommitEpoch)
			}

			// An epoch above the leader's: undefined, the consumer stalls.
			future := e1 + 5
			commitInEpoch(t, b, "ledger-future", topic, 10, future)
			po, r = judge("ledger-future")
			if po.CommitEpoch.EndOffset != -1 || po.CommitEpoch.EndEpoch != -1 {
				t.Fatalf("commit in epoch %d above the leader's %d: the leader answered %+v, want undefined (-1, -1)", future, e1, po.CommitEpoch)
			}
			only(t, r, proof.ReasonCommittedLeaderEpochUnknown)
			if r.Verdict != proof.Unknown {
				t.Fatalf("commit in epoch %d above the leader's %d: %s %v, want Unknown", future, e1, r.Verdict, reasons(r))
			}
		})
	}
}

// judgeNoEpoch observes a group whose last commit carries no epoch.
func judgeNoEpoch(t *testing.T, b *apachekafka.Broker, topic, group string, p proof.Policy) (proof.PartitionObservation, proof.Result) {
	t.Helper()
	target := kafka.Target{Group: group, Topics: []string{topic}, ReadOffsetsTopic: true}
	obs := observeUntil(t, b, target, func(po proof.PartitionObservation) bool { return po.Committed == 5 && !po.LastCommit.IsZero() })
	return obs.Topics[0].Partitions[0], proof.Evaluate(obs, p, obs.ObservedAt)
}

// only returns the proof's one violation, which must have reason.
func only(t *testing.T, r proof.Result, reason string) proof.Violation {
	t.Helper()
	if len(r.Violations) != 1 || r.Violations[0].Reason != reason {
		t.Fatalf("%s %v, want exactly one violation %s", r.Verdict, reasons(r), reason)
	}
	return r.Violations[0]
}

// leaderEpoch reads the leader epoch of topic/0 from Metadata.
func leaderEpoch(t *testing.T, b *apachekafka.Broker, topic string) int32 {
	t.Helper()
	epoch, _ := topicMetadata(t, b, topic)
	return epoch
}

// topicMetadata reads the leader epoch of topic/0 and the topic's ID.
func topicMetadata(t *testing.T, b *apachekafka.Broker, topic string) (int32, [16]byte) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	req := kmsg.NewPtrMetadataRequest()
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr(topic)
	req.Topics = []kmsg.MetadataRequestTopic{rt}
	resp, err := req.RequestWith(ctx, b.Client(t))
	if err != nil {
		t.Fatalf("Metadata: %v", err)
	}
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 || resp.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("Metadata of %s: %+v", topic, resp.Topics)
	}
	return resp.Topics[0].Partitions[0].LeaderEpoch, resp.Topics[0].TopicID
}

// waitEpochAbove waits until topic/0 has a leader in an epoch above e.
func waitEpochAbove(t *testing.T, b *apachekafka.Broker, topic string, e int32) int32 {
	t.Helper()
	deadline := time.Now().Add(wait)
	for {
		if now := leaderEpoch(t, b, topic); now > e {
			return now
		} else if time.Now().After(deadline) {
			t.Fatalf("Apache Kafka %s: the leader epoch of %s/0 stayed %d after the restart", b.Dist.Version, topic, now)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// commitInEpoch commits offset on topic/0 for group as an admin does
// (generation -1), with epoch as CommittedLeaderEpoch (-1: none, what
// kafka-consumer-groups --reset-offsets writes).
func commitInEpoch(t *testing.T, b *apachekafka.Broker, group, topic string, offset int64, epoch int32) {
	t.Helper()
	cl := b.Client(t)
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	req := kmsg.NewPtrOffsetCommitRequest()
	req.Group, req.Generation = group, -1
	rt := kmsg.NewOffsetCommitRequestTopic()
	_, rt.TopicID = topicMetadata(t, b, topic) // OffsetCommit v10+ (4.1+) names topics by ID
	rt.Topic = topic
	rp := kmsg.NewOffsetCommitRequestTopicPartition()
	rp.Partition, rp.Offset, rp.LeaderEpoch = 0, offset, epoch
	rt.Partitions = []kmsg.OffsetCommitRequestTopicPartition{rp}
	req.Topics = []kmsg.OffsetCommitRequestTopic{rt}
	for {
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatalf("OffsetCommit on Apache Kafka %s: %v", b.Dist.Version, err)
		}
		code := resp.Topics[0].Partitions[0].ErrorCode
		if code == 0 {
			return
		}
		if !kerr.IsRetriable(kerr.ErrorForCode(code)) || ctx.Err() != nil {
			t.Fatalf("OffsetCommit on Apache Kafka %s: %v", b.Dist.Version, kerr.ErrorForCode(code))
		}
		time.Sleep(200 * time.Millisecond)
	}
}
