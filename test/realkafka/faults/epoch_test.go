package faults

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/retentionguard/retention-guard/internal/kafka/apachekafka"
	"github.com/retentionguard/retention-guard/internal/proof"
)

// TestUncleanElectionGrowsBackPastCommitted (issue 33 item 1) goes on
// where TestUncleanElectionTruncatesBelowCommitted stops: the log
// truncated below the committed offset grows back past it. The offset is
// in range again (before this change: Proven, the truncation forgotten),
// but the records the group read at 5–7 are gone and 5–7 now hold others.
// Two groups committed 8 before the fault: "settle-kip320" with the
// leader epoch it read in (a KIP-320 client), "settle-reset" without one
// (kafka-consumer-groups --reset-offsets). The guard, one observer for
// each, watched both through the fault:
//
//   - the commit with an epoch: the new leader says that epoch ends at 5
//     (OffsetsForLeaderEpoch): CommittedEpochDiverged, 3 records, a risk
//     (issue 32: the consumer validates the epoch and rewinds to 5); the
//     group's next commit, 5 in that epoch, is Proven;
//   - the commit without: no consumer validates it; the guard saw the log
//     end fall from 10 to 5: CommittedOffsetOnDivergedLog (Unknown);
//   - the same commit, watched by a guard that reads __consumer_offsets and
//     did not look while the log end was down: it first saw offset 8 in
//     the epoch the records 5-9 were written in, and the new leader says
//     that epoch ends at 5 (its floor): CommittedOffsetDiverged, 3 records,
//     the commit dated before that sighting. Before this, Proven.
//
// Unclean elections allowed on the topic (default false), min ISR 1 (the
// default, stated), and a message.timestamp.after.max.ms of an hour (4.x's
// default, set for 3.x: see TestUncleanElectionTruncatesBelowCommitted).
func TestUncleanElectionGrowsBackPastCommitted(t *testing.T) {
	for _, d := range apachekafka.Dists(t) {
		t.Run(d.Line(), func(t *testing.T) {
			f := cluster(t, d)
			const topic = "settle-task-regrown"
			kip320, reset := "settle-kip320", "settle-reset"
			coord := f.coordinator(t, kip320)
			if f.coordinator(t, reset) != coord {
				t.Fatalf("the two groups have different coordinators: the test keeps one node alive for both")
			}
			nodes := f.others(coord)
			leader, follower := nodes[0], nodes[1]
			f.createTopic(t, topic, []int32{leader, follower}, map[string]string{
				"unclean.leader.election.enable": "true", "min.insync.replicas": "1",
				"message.timestamp.after.max.ms": "3600000",
			})
			if err := f.produce(t, topic, 5, kgo.AllISRAcks()); err != nil {
				t.Fatal(err)
			}
			f.b.Stop(follower)
			p := f.waitPartition(t, topic, "in sync on its leader alone", func(p kadm.PartitionDetail) bool {
				return p.Leader == leader && len(p.ISR) == 1
			})
			if err := f.produce(t, topic, 5, kgo.LeaderAck()); err != nil {
				t.Fatal(err)
			}
			epoch := p.LeaderEpoch // the epoch the records 5-9 were written in
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			var os kadm.Offsets
			os.Add(kadm.Offset{Topic: topic, Partition: 0, At: 8, LeaderEpoch: epoch})
			if err := f.Admin(t).CommitAllOffsets(ctx, kip320, os); err != nil {
				t.Fatalf("committing 8 in epoch %d: %v", epoch, err)
			}
			f.Commit(t, reset, topic, 0, 8) // without an epoch
			g320, greset := newGuard(t, f, kip320, topic), newGuard(t, f, reset, topic)
			g320.untilProven("before the fault", truth{committed: 8, logStart: 0, logEnd: 10})
			greset.untilProven("before the fault", truth{committed: 8, logStart: 0, logEnd: 10})
			// A third guard of the reset group, reading __consumer_offsets,
			// that does not look while the log end is down: the fault and
			// the regrowth fall between two of its passes (a manager's
			// interval), so it sees no fall, only the epoch it first saw
			// the commit in.
			gunseen := newGuard(t, f, reset, topic)
			gunseen.target.ReadOffsetsTopic = true
			gunseen.untilProven("before the fault", truth{committed: 8, logStart: 0, logEnd: 10})

			f.b.Kill(leader)
			f.b.Restart(t, follower)
			f.waitPartition(t, topic, "led by the stale follower", func(p kadm.PartitionDetail) bool { return p.Leader == follower })
			g320.untilViolated("after the unclean election")
			greset.untilViolated("after the unclean election")
			f.b.Restart(t, leader)
			f.waitPartition(t, topic, "in sync on both replicas", func(p kadm.PartitionDetail) bool { return len(p.ISR) == 2 })

			// The log grows back past the committed offset.
			if err := f.produce(t, topic, 5, kgo.AllISRAcks()); err != nil {
				t.Fatal(err)
			}
			if end := f.endOffset(t, topic); end != 10 {
				t.Fatalf("log end %d after the regrowth, want 10", end)
			}

			obs, res := g320.pass()
			po := obs.Topics[0].Partitions[0]
			t.Logf("Apache Kafka %s: commit 8 in epoch %d, the leader answers %+v: %s", d.Version, epoch, po.CommitEpoch, describe(res))
			if res.Verdict != proof.Violated || len(res.Violations) != 1 || res.Violations[0].Reason != proof.ReasonCommittedEpochDiverged ||
				res.Violations[0].DivergedRecords != 3 {
				t.Fatalf("commit 8 in epoch %d on a log regrown past it: %s %+v, want Violated, %s, 3 records",
					epoch, res.Verdict, res.Violations, proof.ReasonCommittedEpochDiverged)
			}
			// The group's next commit ends it (issue 32): its consumer,
			// rewound to 5, commits 5 in the epoch the leader answered
			// (SubscriptionState.maybeCompleteValidation seeks with it).
			var next kadm.Offsets
			next.Add(kadm.Offset{Topic: topic, Partition: 0, At: 5, LeaderEpoch: po.CommitEpoch.EndEpoch})
			nctx, ncancel := context.WithTimeout(context.Background(), time.Minute)
			defer ncancel()
			if err := f.Admin(t).CommitAllOffsets(nctx, kip320, next); err != nil {
				t.Fatalf("committing 5 in epoch %d: %v", po.CommitEpoch.EndEpoch, err)
			}
			g320.untilProven("after the group's next commit, 5 where the log diverged", truth{committed: 5, logStart: 0, logEnd: 10})
			obs, res = gunseen.pass()
			po = obs.Topics[0].Partitions[0]
			t.Logf("Apache Kafka %s: commit 8 without an epoch, first seen in epoch %d, the leader answers %+v, no fall seen: %s",
				d.Version, po.CommitWitness.Epoch, po.CommitWitness, describe(res))
			if res.Verdict != proof.Violated || len(res.Violations) != 1 || res.Violations[0].Reason != proof.ReasonCommittedOffsetDiverged ||
				res.Violations[0].DivergedRecords != 3 || po.LogDiverged {
				t.Fatalf("commit 8 without an epoch, first seen in epoch %d, on a log regrown between two passes: %s %+v (witness %+v, fall seen %v), want Violated, %s, 3 records",
					po.CommitWitness.Epoch, res.Verdict, res.Violations, po.CommitWitness, po.LogDiverged, proof.ReasonCommittedOffsetDiverged)
			}
			obs, res = greset.pass()
			po = obs.Topics[0].Partitions[0]
			t.Logf("Apache Kafka %s: commit 8 without an epoch, the log end seen to fall %d → %d: %s", d.Version, po.DivergedFrom, po.DivergedTo, describe(res))
			if res.Verdict != proof.Unknown || len(res.Violations) != 1 || res.Violations[0].Reason != proof.ReasonCommittedOffsetOnDivergedLog ||
				po.DivergedFrom != 10 || po.DivergedTo != 5 {
				t.Fatalf("commit 8 without an epoch on a log seen to fall from 10 to 5: %s %+v (fall %d → %d), want Unknown, %s",
					res.Verdict, res.Violations, po.DivergedFrom, po.DivergedTo, proof.ReasonCommittedOffsetOnDivergedLog)
			}
		})
	}
}
