package oracle

import (
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/retentionguard/retention-guard/internal/kafka/apachekafka"
)

// A diverged log (issue 33 item 1), set up on the line's three-node
// cluster as test/realkafka/faults does it, on every partition of the
// trial's topic: each on two replicas (neither the group coordinator, which
// keeps the group's offsets through the fault), the first its leader. The
// first Records − Truncated records reach both; the follower stops
// (controlled shutdown: out of the ISR at once); the last Truncated are on
// the leader alone (acks=all of an ISR of one), and the group commits into
// them. Before the verdict the leader crashes (SIGKILL), the follower comes
// back and is elected uncleanly (its log ends where it stopped: the
// truncation), and Truncated + 1 records are written: the log grows back
// past the commit. The old leader comes back when the trial ends. A group
// with a member keeps it through the fault (down from then on): the
// fault's tens of seconds are not an Empty spell the drawn clocks did not
// ask for; a simple group's commit ages through it.
//
// What the restarted consumer had to read: the group read the records
// below its commit, and those from the truncation on were replaced by
// records it never read; every record of the log from min(commit,
// truncation) on (records the truncation took are gone for every reader,
// not the group's to read).

// divergence is a diverged trial's two replicas.
type divergence struct {
	topic            string
	partitions       int32
	leader, follower int32
}

// createTopic creates the trial's topic: on the two replicas a diverged
// trial's fault takes down, or with kafkatest's defaults (one replica).
// It returns the divergence to set up (nil: none).
func createTopic(t *testing.T, b *apachekafka.Broker, s Scenario) *divergence {
	t.Helper()
	if !s.Diverged {
		b.CreateTopic(t, s.Topic(), s.Partitions, s.TopicConfigs())
		return nil
	}
	coord := coordinator(t, b, s.GroupID())
	var nodes []int32
	for _, n := range b.Nodes {
		if n.ID != coord {
			nodes = append(nodes, n.ID)
		}
	}
	d := &divergence{topic: s.Topic(), partitions: s.Partitions, leader: nodes[0], follower: nodes[1]}
	req := kmsg.NewPtrCreateTopicsRequest()
	req.TimeoutMillis = 60000
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = d.topic, -1, -1
	for p := range s.Partitions {
		a := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
		a.Partition, a.Replicas = p, []int32{d.leader, d.follower}
		rt.ReplicaAssignment = append(rt.ReplicaAssignment, a)
	}
	for k, v := range s.TopicConfigs() {
		c := kmsg.NewCreateTopicsRequestTopicConfig()
		c.Name, c.Value = k, kmsg.StringPtr(v)
		rt.Configs = append(rt.Configs, c)
	}
	req.Topics = append(req.Topics, rt)
	ctx, cancel := setupContext()
	defer cancel()
	resp, err := req.RequestWith(ctx, b.Client(t))
	if err == nil {
		err = kerr.ErrorForCode(resp.Topics[0].ErrorCode)
	}
	if err != nil {
		t.Fatalf("creating %s on nodes %d and %d: %v", d.topic, d.leader, d.follower, err)
	}
	d.wait(t, b, "led by its first replica, both in sync", func(p kadm.PartitionDetail) bool {
		return p.Leader == d.leader && len(p.ISR) == 2
	})
	return d
}

// coordinator is the node coordinating group (FindCoordinator creates
// __consumer_offsets on first use).
func coordinator(t *testing.T, b *apachekafka.Broker, group string) int32 {
	t.Helper()
	ctx, cancel := setupContext()
	defer cancel()
	for {
		r, ok := b.Admin(t).FindGroupCoordinators(ctx, group)[group]
		if ok && r.Err == nil {
			return r.NodeID
		}
		select {
		case <-ctx.Done():
			t.Fatalf("no coordinator for group %s: %v", group, r.Err)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// wait waits until every partition of the topic is as ok says.
func (d *divergence) wait(t *testing.T, b *apachekafka.Broker, what string, ok func(kadm.PartitionDetail) bool) kadm.PartitionDetails {
	t.Helper()
	ctx, cancel := setupContext()
	defer cancel()
	var last kadm.PartitionDetails
	for {
		md, err := b.Admin(t).Metadata(ctx, d.topic)
		if err == nil {
			if td, found := md.Topics[d.topic]; found && td.Err == nil && len(td.Partitions) == int(d.partitions) {
				last = td.Partitions
				all := true
				for _, p := range td.Partitions {
					all = all && ok(p)
				}
				if all {
					return last
				}
			}
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%s: not %s within %s: %+v", d.topic, what, setupTimeout, last)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// isolate stops the follower: the leader is the ISR alone.
func (d *divergence) isolate(t *testing.T, b *apachekafka.Broker) {
	t.Helper()
	b.Stop(d.follower)
	d.wait(t, b, "in sync on its leader alone", func(p kadm.PartitionDetail) bool {
		return p.Leader == d.leader && len(p.ISR) == 1
	})
}

// commitEpochs are the leader epochs a KIP-320 client commits with: the
// partitions' epochs the records it read were written in (nil: the commit
// carries none).
func (d *divergence) commitEpochs(t *testing.T, b *apachekafka.Broker, s Scenario) map[int32]int32 {
	t.Helper()
	if d == nil || s.EpochLess {
		return nil
	}
	out := map[int32]int32{}
	for p, pd := range d.wait(t, b, "led by its leader", func(p kadm.PartitionDetail) bool { return p.Leader == d.leader }) {
		out[p] = pd.LeaderEpoch
	}
	return out
}

// electUncleanly crashes the leader and brings the stale follower back to
// be elected uncleanly (its log ends where it stopped: the truncation),
// and returns each partition's log end then. The old leader stays down
// until the trial ends (a broker that has not come back; it truncates to
// the new leader when it does): its restart would only lengthen the
// commit's age. It is listed last in b, which the check and the
// restarted consumer's gate bootstrap from.
func (d *divergence) electUncleanly(t *testing.T, b *apachekafka.Broker) map[int32]int64 {
	t.Helper()
	b.Kill(d.leader)
	b.Restart(t, d.follower)
	d.wait(t, b, "led by the stale follower", func(p kadm.PartitionDetail) bool { return p.Leader == d.follower })
	nodes := slices.Clone(b.Nodes)
	i := slices.IndexFunc(nodes, func(n *apachekafka.Node) bool { return n.ID == d.leader })
	b.Nodes = append(append(nodes[:i:i], nodes[i+1:]...), nodes[i])
	ctx, cancel := setupContext()
	defer cancel()
	for {
		ends, err := b.Admin(t).ListEndOffsets(ctx, d.topic)
		if err == nil {
			err = ends.Error()
		}
		if err == nil && len(ends[d.topic]) == int(d.partitions) {
			out := map[int32]int64{}
			for p, o := range ends[d.topic] {
				out[p] = o.Offset
			}
			return out
		}
		select {
		case <-ctx.Done():
			t.Fatalf("listing the log ends of %s after the unclean election: %v", d.topic, err)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// regrown checks that the records written after the unclean election
// (the last n of each partition's log) start where the truncation left
// the log: the log ends read then were the new leader's, not a high
// watermark still behind it.
func regrown(t *testing.T, log map[int32][]produced, ends map[int32]int64, n int) {
	t.Helper()
	for p, end := range ends {
		l := log[p]
		if len(l) < n || l[len(l)-n].offset != end {
			t.Fatalf("partition %d: the records written after the unclean election do not start at the log end read then (%d): %v", p, end, l[max(0, len(l)-n):])
		}
	}
}

// truncate drops from log the records the truncation took (at or past
// end): they are gone for every reader.
func truncate(log []produced, end int64) []produced {
	return slices.DeleteFunc(log, func(r produced) bool { return r.offset >= end })
}

// epochOf is the leader epoch to commit partition p's offset with (-1:
// none).
func epochOf(epochs map[int32]int32, p int32) int32 {
	if e, ok := epochs[p]; ok {
		return e
	}
	return -1
}
