package kafka

import (
	"context"
	"fmt"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/retentionguard/retention-guard/internal/kafka/kafkatest"
	"github.com/retentionguard/retention-guard/internal/proof"
)

// offsets.retention.minutes is asked of each broker by its ID, never of the
// cluster default resource (which answers only dynamic cluster-level values),
// and the smallest answer governs.
func TestObserveOffsetsRetentionPerBroker(t *testing.T) {
	t.Parallel()
	c := kafkatest.NewCluster(t, kafkatest.WithBrokers(3))
	c.CreateTopic(t, "orders", 6, nil)
	c.Produce(t, "orders", 12)
	c.Commit(t, "billing", "orders", 0, 1)

	// Watch which broker is asked about which broker resource.
	var (
		mu    sync.Mutex
		asked []string // "node:resource"
	)
	c.ControlKey(int16(kmsg.DescribeConfigs), func(req kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		mu.Lock()
		defer mu.Unlock()
		for _, r := range req.(*kmsg.DescribeConfigsRequest).Resources {
			if r.ResourceType == kmsg.ConfigResourceTypeBroker {
				asked = append(asked, fmt.Sprintf("%d:%q", c.CurrentNode(), r.ResourceName))
			}
		}
		return nil, nil, false
	})
	takeAsked := func() []string {
		mu.Lock()
		defer mu.Unlock()
		got := slices.Clone(asked)
		asked = nil
		slices.Sort(got)
		return got
	}

	o, sink := newTestObserver(t)
	conn := Connection{BootstrapServers: c.Addrs}
	target := Target{Group: "billing", Topics: []string{"orders"}}

	obs := observe(t, o, conn, target)[0]
	requireNoFailures(t, obs)
	if obs.OffsetsRetentionMinutes != value("10080") {
		t.Errorf("default: %+v, want 10080 (a default, which the cluster resource would not report)", obs.OffsetsRetentionMinutes)
	}
	if got, want := takeAsked(), []string{`0:"0"`, `1:"1"`, `2:"2"`}; !slices.Equal(got, want) {
		t.Errorf("broker resources asked = %v, want each broker asked for its own ID: %v", got, want)
	}

	// A dynamic per-broker value, set with AlterBrokerConfigs on broker 1
	// (kfake keeps broker configs cluster-wide, so every broker has it).
	c.SetBrokerConfig(t, 1, "offsets.retention.minutes", "1440")
	obs = observe(t, o, conn, target)[0]
	requireNoFailures(t, obs)
	if obs.OffsetsRetentionMinutes != value("1440") {
		t.Errorf("after AlterBrokerConfigs: %+v, want 1440", obs.OffsetsRetentionMinutes)
	}

	// Broker 2 disagrees, as a broker with offsets.retention.minutes=60 in
	// its server.properties would. kfake cannot hold a per-broker value,
	// so broker 2 answers for itself here; brokers 0 and 1 answer as kfake
	// does.
	c.ControlKey(int16(kmsg.DescribeConfigs), func(req kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		r := req.(*kmsg.DescribeConfigsRequest)
		if c.CurrentNode() != 2 || len(r.Resources) != 1 || r.Resources[0].ResourceType != kmsg.ConfigResourceTypeBroker {
			return nil, nil, false
		}
		resp := r.ResponseKind().(*kmsg.DescribeConfigsResponse)
		rr := kmsg.NewDescribeConfigsResponseResource()
		rr.ResourceType, rr.ResourceName = kmsg.ConfigResourceTypeBroker, "2"
		rc := kmsg.NewDescribeConfigsResponseResourceConfig()
		rc.Name, rc.Value = "offsets.retention.minutes", kmsg.StringPtr("60")
		rc.Source, rc.ReadOnly, rc.IsDefault = kmsg.ConfigSourceStaticBrokerConfig, true, true
		rr.Configs = append(rr.Configs, rc)
		resp.Resources = append(resp.Resources, rr)
		return resp, nil, true
	})
	obs = observe(t, o, conn, target)[0]
	requireNoFailures(t, obs)
	if obs.OffsetsRetentionMinutes != value("60") {
		t.Errorf("brokers 1440, 1440, 60: %+v, want the smallest, 60", obs.OffsetsRetentionMinutes)
	}
	if !strings.Contains(sink.String(), "brokers disagree") {
		t.Errorf("disagreement not logged")
	}
}

// scenario builds topics × partitions with records and groups committed
// below the log end on every partition, group i on its own slice of the
// topics.
func scenario(t testing.TB, c *kafkatest.Cluster, prefix string, topics, partitions, groups int) []Target {
	t.Helper()
	names := make([]string, topics)
	for i := range names {
		names[i] = fmt.Sprintf("%s-%03d", prefix, i)
		c.CreateTopic(t, names[i], int32(partitions), nil)
	}
	for _, name := range names {
		c.Produce(t, name, 3*partitions) // 3 records per partition
	}
	targets := make([]Target, groups)
	for g := range targets {
		targets[g].Group = prefix + "-group-" + strconv.Itoa(g)
	}
	for i, name := range names {
		g := i * groups / topics
		targets[g].Topics = append(targets[g].Topics, name)
		offsets := make(map[int32]int64, partitions)
		for p := range partitions {
			offsets[int32(p)] = 1
		}
		c.CommitOffsets(t, targets[g].Group, name, offsets)
	}
	return targets
}

// The number of requests of a pass depends on brokers and coordinators,
// not on partitions: 1 topic × 1 partition and 20 topics × 12 partitions
// with 5 groups stay within the same per-broker bound.
func TestObserveRequestCountIndependentOfPartitions(t *testing.T) {
	t.Parallel()
	const brokers = 3
	c := kafkatest.NewCluster(t, kafkatest.WithBrokers(brokers))
	small := scenario(t, c, "small", 1, 1, 1)
	large := scenario(t, c, "large", 20, 12, 5)

	count := func(targets []Target) map[string]int {
		var rc requestCounter
		o, _ := newTestObserver(t, WithRequestHook(rc.hook))
		conn := Connection{BootstrapServers: c.Addrs}
		observe(t, o, conn, targets...) // connections, coordinators, versions
		observe(t, o, conn, targets...)
		rc.reset()
		obs := observe(t, o, conn, targets...)
		for _, ob := range obs {
			requireNoFailures(t, ob)
			for _, to := range ob.Topics {
				for _, p := range to.Partitions {
					if p.Committed != 1 || p.LogEnd != 3 || p.CommittedTimestamp.IsZero() {
						t.Fatalf("%s %s/%d = %+v", ob.Group.ID, to.Name, p.Partition, p)
					}
				}
			}
		}
		return rc.reset()
	}
	smallCount, largeCount := count(small), count(large)
	t.Logf("requests per pass: 1 partition, 1 group: %d %v", total(smallCount), smallCount)
	t.Logf("requests per pass: 240 partitions, 5 groups: %d %v", total(largeCount), largeCount)

	// What Kafka's batching requires, per API, for B brokers (each may
	// lead partitions and coordinate groups).
	bound := map[string]int{
		"Metadata":              1,
		"DescribeConfigs":       brokers + 1, // each broker's own config, plus the topics
		"ListOffsets":           2 * brokers, // log start and log end, per leader
		"OffsetFetch":           brokers,     // per coordinator, groups batched
		"DescribeGroups":        brokers,
		"ConsumerGroupDescribe": brokers,
		"Fetch":                 brokers, // per leader: one offset per partition
		// The client may reopen a connection (idle timeout) or reload a
		// coordinator; neither depends on partitions. Plus the pass's own,
		// one per broker (its group.version feature).
		"ApiVersions":     2*brokers + 1,
		"FindCoordinator": 1,
	}
	for name, m := range map[string]map[string]int{"small": smallCount, "large": largeCount} {
		for api, n := range m {
			limit, ok := bound[api]
			if !ok {
				t.Errorf("%s: unexpected %d %s requests in a steady pass", name, n, api)
				continue
			}
			if n > limit {
				t.Errorf("%s: %d %s requests, want at most %d", name, n, api, limit)
			}
		}
	}
	if total(largeCount) > total(smallCount)+3*(brokers-1)+2*brokers {
		t.Errorf("240 partitions took %d requests, 1 partition %d: growth beyond brokers", total(largeCount), total(smallCount))
	}
}

// Observe serves concurrent callers on one pooled client, and Forget and
// Close are safe while they run.
func TestObserverConcurrentUse(t *testing.T) {
	t.Parallel()
	c := kafkatest.NewCluster(t)
	c.CreateTopic(t, "orders", 3, nil)
	c.Produce(t, "orders", 9)
	c.Commit(t, "billing", "orders", 0, 1)

	o, _ := newTestObserver(t, WithIdleTimeout(50*time.Millisecond))
	conn := Connection{BootstrapServers: c.Addrs}
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			for range 5 {
				obs := o.Observe(ctx, conn, []Target{{Group: "billing", Topics: []string{"orders"}}})
				if len(obs[0].Failures) > 0 {
					t.Errorf("failures: %s", describeFailures(obs[0].Failures))
					return
				}
				if obs[0].Topics[0].Partitions[0].Committed != 1 {
					t.Errorf("committed = %d", obs[0].Topics[0].Partitions[0].Committed)
				}
				if i == 0 {
					o.Forget(conn)
				}
			}
		}()
	}
	wg.Wait()

	// The idle client is closed and a later Observe opens a new one.
	time.Sleep(150 * time.Millisecond)
	o.mu.Lock()
	pooled := len(o.clients)
	o.mu.Unlock()
	if pooled != 0 {
		t.Errorf("%d clients pooled after the idle timeout, want 0", pooled)
	}
	requireNoFailures(t, observe(t, o, conn, Target{Group: "billing", Topics: []string{"orders"}})[0])

	o.Close()
	obs := o.Observe(context.Background(), conn, []Target{{Group: "billing", Topics: []string{"orders"}}})
	requireFailure(t, obs[0], proof.ReasonBrokerUnreachable, "", "")
}

// A sharded request whose shard to one broker fails (here the broker is
// down: nothing can dial it) fails exactly the partitions that shard
// carried; the partitions other brokers lead are observed, and the down
// broker's own offsets.retention.minutes is unreadable.
func TestObserveShardFailureNamesItsPartitions(t *testing.T) {
	t.Parallel()
	c := kafkatest.NewCluster(t, kafkatest.WithBrokers(3))
	c.CreateTopic(t, "orders", 6, nil)
	c.Produce(t, "orders", 12)
	c.CommitOffsets(t, "billing", "orders", map[int32]int64{0: 1, 1: 1, 2: 1, 3: 1, 4: 1, 5: 1})

	// The down broker leads partitions but does not coordinate the group.
	down := int32(-1)
	for p := range int32(6) {
		if l := c.LeaderFor("orders", p); l != c.CoordinatorFor("billing") {
			down = l
			break
		}
	}
	if down < 0 {
		t.Fatal("the coordinator leads every partition")
	}
	downAddr := c.Addrs[down]
	var seeds []string
	for _, a := range c.Addrs {
		if a != downAddr {
			seeds = append(seeds, a)
		}
	}
	var d net.Dialer
	dial := kgo.Dialer(func(ctx context.Context, network, host string) (net.Conn, error) {
		if host == downAddr {
			// What a dial to a stopped broker returns: a syscall error,
			// which the client retries elsewhere when any broker will do
			// (FindCoordinator), and which fails the shards pinned to it.
			return nil, &net.OpError{Op: "dial", Net: network, Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}
		}
		return d.DialContext(ctx, network, host)
	})

	o, _ := newTestObserver(t, WithTimeouts(time.Second, time.Second, 500*time.Millisecond), WithClientOpts(dial))
	obs := observe(t, o, Connection{BootstrapServers: seeds}, Target{Group: "billing", Topics: []string{"orders"}})[0]
	t.Logf("broker %d down: %s", down, describeFailures(obs.Failures))
	failed := make(map[int32]int)
	for _, f := range obs.Failures {
		switch {
		case f.API == "ListOffsets" && f.Reason == proof.ReasonBrokerUnreachable && f.Topic == "orders":
			failed[f.Partition]++
		case f.API == "DescribeConfigs" && f.Reason == proof.ReasonBrokerUnreachable && f.Topic == "" &&
			strings.Contains(f.Message, fmt.Sprintf("broker %d", down)):
		default:
			t.Errorf("unexpected failure %+v", f)
		}
	}
	for p := range int32(6) {
		po := partition(t, obs, "orders", p)
		ledByDown := c.LeaderFor("orders", p) == down
		switch {
		case ledByDown && (failed[p] != 2 || po.LogStart != -1 || po.LogEnd != -1):
			t.Errorf("orders/%d (led by the down broker): %d failures, %+v; want log start and end failed and unknown", p, failed[p], po)
		case !ledByDown && (failed[p] != 0 || po.LogEnd != 2 || po.CommittedTimestamp.IsZero()):
			t.Errorf("orders/%d: %d failures, %+v; want it observed", p, failed[p], po)
		}
		if po.Committed != 1 {
			t.Errorf("orders/%d committed = %d, want 1 (offsets live on the coordinator)", p, po.Committed)
		}
	}
	if obs.OffsetsRetentionMinutes.Present {
		t.Errorf("offsets.retention.minutes = %+v with a broker unread", obs.OffsetsRetentionMinutes)
	}
}

// Topic defaults that differ between brokers are judged by the strictest
// (the broker the topic's leader moves to may be that one); a value that
// does not parse wins, whichever side it is on, so the proof reports it
// unreadable instead of trusting the other broker.
func TestStricterBrokerDefault(t *testing.T) {
	v := func(s string) brokerValue { return brokerValue{value: s, source: "broker " + s} }
	for _, c := range []struct {
		key  string
		a, b string
		want string
	}{
		{configRetentionMs, "604800000", "86400000", "86400000"},
		{configRetentionMs, "-1", "86400000", "86400000"}, // infinite is the loosest
		{configRetentionMs, "86400000", "-1", "86400000"},
		{configRetentionMs, "week", "86400000", "week"},
		{configRetentionMs, "86400000", "day", "day"},
		{configDeleteRetentionMs, "-1", "86400000", "-1"}, // no infinite here: the smallest
		{configTimestampBeforeMaxMs, "3600000", "7200000", "7200000"},
		{configTimestampBeforeMaxMs, "x", "7200000", "x"},
		{configTimestampBeforeMaxMs, "3600000", "y", "y"},
	} {
		if got := stricter(c.key, v(c.a), v(c.b)); got != v(c.want) {
			t.Errorf("stricter(%s, %s, %s) = %+v, want %s", c.key, c.a, c.b, got, c.want)
		}
	}
}
