package faults

import (
	"context"
	"fmt"
	"os"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/retentionguard/retention-guard/internal/kafka/apachekafka"
	"github.com/retentionguard/retention-guard/internal/kafka/kafkatest"
)

// The faults run on one three-node KRaft cluster per broker line, started
// on first use and shared by the tests of this package (three JVMs cost
// ten seconds and most of two cores to start): each test uses its own
// topics and groups and brings back every node it stopped before it ends.
// TestMain stops the clusters.

// waitLimit bounds every wait for the cluster to settle (ISR changes,
// elections, a coordinator loading its groups): generous, this machine is
// loaded.
const waitLimit = 90 * time.Second

// brokerConfig makes failures visible in seconds: a follower that stops
// fetching leaves the ISR after 5 s (30 s by default), an offline partition
// of a topic that allows it gets an unclean leader within a second (5 min),
// and leadership never moves back on its own (the tests choose leaders). A
// crashed broker is fenced after Kafka's 9 s without heartbeats: shorter
// sessions fence live brokers on a loaded machine.
var brokerConfig = map[string]string{
	"replica.lag.time.max.ms":             "5000",
	"unclean.leader.election.interval.ms": "1000",
	"auto.leader.rebalance.enable":        "false",
}

var (
	clustersMu sync.Mutex
	clusters   = map[string]*apachekafka.Broker{}
	clusterDir string
)

func TestMain(m *testing.M) {
	ctrl.SetLogger(logr.Discard()) // the manager test's controller-runtime
	code := m.Run()
	clustersMu.Lock()
	for _, b := range clusters {
		b.Close()
	}
	clustersMu.Unlock()
	if clusterDir != "" {
		os.RemoveAll(clusterDir)
	}
	os.Exit(code)
}

// fixture is the line's shared cluster, with kafkatest's helpers dialed to
// it for this test.
type fixture struct {
	*kafkatest.Cluster
	b *apachekafka.Broker
	d apachekafka.Dist
}

func cluster(t *testing.T, d apachekafka.Dist) *fixture {
	t.Helper()
	clustersMu.Lock()
	defer clustersMu.Unlock()
	b := clusters[d.Version]
	if b == nil {
		if clusterDir == "" {
			dir, err := os.MkdirTemp("", "faults-")
			if err != nil {
				t.Fatal(err)
			}
			clusterDir = dir
		}
		opts := []apachekafka.Option{apachekafka.WithNodes(3)}
		for k, v := range brokerConfig {
			opts = append(opts, apachekafka.WithBrokerConfig(k, v))
		}
		// A folder of its own per start: a start that failed leaves its
		// data behind.
		dir, err := os.MkdirTemp(clusterDir, d.Version+"-")
		if err != nil {
			t.Fatal(err)
		}
		b, err = apachekafka.StartCluster(d, dir, opts...)
		if err != nil {
			t.Fatal(err)
		}
		clusters[d.Version] = b
	}
	f := &fixture{Cluster: kafkatest.Dial(t, b.Addrs()), b: b, d: d}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("Apache Kafka %s log (last 40 lines of each node):\n%s", d.Version, b.LogTail(40))
		}
		// Bring back what the test stopped, for the next test.
		for _, n := range b.Nodes {
			if !n.Running() {
				b.Restart(t, n.ID)
			}
		}
	})
	return f
}

func bounded() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), 15*time.Second)
}

// coordinator is the node coordinating group (FindCoordinator creates
// __consumer_offsets on first use).
func (f *fixture) coordinator(t *testing.T, group string) int32 {
	t.Helper()
	var last error
	deadline := time.Now().Add(waitLimit)
	for time.Now().Before(deadline) {
		ctx, cancel := bounded()
		rs := f.Admin(t).FindGroupCoordinators(ctx, group)
		cancel()
		if r, ok := rs[group]; ok && r.Err == nil {
			return r.NodeID
		} else if ok {
			last = r.Err
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("no coordinator for group %s within %s: %v", group, waitLimit, last)
	return -1
}

// others are the nodes not named, in order.
func (f *fixture) others(not ...int32) []int32 {
	var out []int32
	for _, n := range f.b.Nodes {
		if !slices.Contains(not, n.ID) {
			out = append(out, n.ID)
		}
	}
	return out
}

// createTopic creates a one-partition topic on the replicas given, the
// first its leader, and waits until every replica is in sync.
func (f *fixture) createTopic(t *testing.T, name string, replicas []int32, configs map[string]string) {
	t.Helper()
	req := kmsg.NewPtrCreateTopicsRequest()
	req.TimeoutMillis = 15000
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic = name
	rt.NumPartitions, rt.ReplicationFactor = -1, -1
	a := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
	a.Partition, a.Replicas = 0, replicas
	rt.ReplicaAssignment = append(rt.ReplicaAssignment, a)
	for k, v := range configs {
		c := kmsg.NewCreateTopicsRequestTopicConfig()
		c.Name, c.Value = k, kmsg.StringPtr(v)
		rt.Configs = append(rt.Configs, c)
	}
	req.Topics = append(req.Topics, rt)
	ctx, cancel := bounded()
	defer cancel()
	resp, err := req.RequestWith(ctx, f.client(t))
	if err == nil {
		err = kerr.ErrorForCode(resp.Topics[0].ErrorCode)
	}
	if err != nil {
		t.Fatalf("creating topic %s on %v: %v", name, replicas, err)
	}
	f.waitPartition(t, name, "every replica in sync", func(p kadm.PartitionDetail) bool {
		return p.Leader == replicas[0] && len(p.ISR) == len(replicas)
	})
}

func (f *fixture) client(t *testing.T) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(f.ClientOpts()...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// partition is what the cluster's metadata says of partition 0 of topic.
func (f *fixture) partition(t *testing.T, topic string) (kadm.PartitionDetail, error) {
	t.Helper()
	ctx, cancel := bounded()
	defer cancel()
	md, err := f.Admin(t).Metadata(ctx, topic)
	if err != nil {
		return kadm.PartitionDetail{}, err
	}
	td, ok := md.Topics[topic]
	if !ok || td.Err != nil {
		return kadm.PartitionDetail{}, fmt.Errorf("topic %s: %v", topic, td.Err)
	}
	p, ok := td.Partitions[0]
	if !ok {
		return kadm.PartitionDetail{}, fmt.Errorf("topic %s has no partition 0", topic)
	}
	return p, nil
}

// waitPartition waits until partition 0 of topic is as ok says.
func (f *fixture) waitPartition(t *testing.T, topic, what string, ok func(kadm.PartitionDetail) bool) kadm.PartitionDetail {
	t.Helper()
	var p kadm.PartitionDetail
	var err error
	deadline := time.Now().Add(waitLimit)
	for time.Now().Before(deadline) {
		p, err = f.partition(t, topic)
		if err == nil && ok(p) {
			return p
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("%s/0: not %s within %s (leader %d, replicas %v, ISR %v, err %v)", topic, what, waitLimit, p.Leader, p.Replicas, p.ISR, err)
	return p
}

// produce writes n records to partition 0 of topic with the acks given
// (kgo.AllISRAcks or kgo.LeaderAck) and returns the error of the first
// that failed.
func (f *fixture) produce(t *testing.T, topic string, n int, acks kgo.Acks) error {
	t.Helper()
	return f.produceWith(t, topic, n, acks, kgo.RecordDeliveryTimeout(10*time.Second))
}

// refusal is what Kafka answers one produce with acks=all, not retried.
func (f *fixture) refusal(t *testing.T, topic string) error {
	t.Helper()
	return f.produceWith(t, topic, 1, kgo.AllISRAcks(), kgo.RecordRetries(0))
}

func (f *fixture) produceWith(t *testing.T, topic string, n int, acks kgo.Acks, more ...kgo.Opt) error {
	t.Helper()
	opts := append(f.ClientOpts(), kgo.RequiredAcks(acks), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerLinger(0))
	opts = append(opts, more...)
	if acks != kgo.AllISRAcks() {
		opts = append(opts, kgo.DisableIdempotentWrite())
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	recs := make([]*kgo.Record, 0, n)
	for i := range n {
		recs = append(recs, &kgo.Record{Topic: topic, Partition: 0, Value: fmt.Appendf(nil, "record-%d", i)})
	}
	ctx, cancel := bounded()
	defer cancel()
	return cl.ProduceSync(ctx, recs...).FirstErr()
}

// endOffset is the high watermark of partition 0 as its leader answers,
// once it answers.
func (f *fixture) endOffset(t *testing.T, topic string) int64 {
	t.Helper()
	var err error
	deadline := time.Now().Add(waitLimit)
	for time.Now().Before(deadline) {
		ctx, cancel := bounded()
		var ends kadm.ListedOffsets
		ends, err = f.Admin(t).ListEndOffsets(ctx, topic)
		cancel()
		if err == nil {
			o, ok := ends.Lookup(topic, 0)
			if ok && o.Err == nil {
				return o.Offset
			}
			err = fmt.Errorf("%v", o.Err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("listing the end of %s/0: %v", topic, err)
	return -1
}
