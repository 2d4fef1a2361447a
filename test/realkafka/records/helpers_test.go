package records

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/retentionguard/retention-guard/internal/cli"
	"github.com/retentionguard/retention-guard/internal/kafka"
	"github.com/retentionguard/retention-guard/internal/kafka/apachekafka"
	"github.com/retentionguard/retention-guard/internal/kafka/kafkatest"
	"github.com/retentionguard/retention-guard/internal/proof"
)

// Brokers shared by the tests of a kind (their topics and groups are each
// test's own), started on first use and stopped when the package's tests
// end.
var (
	sharedMu sync.Mutex
	shared   = map[string]*sharedBroker{}
	startMu  sync.Mutex
)

type sharedBroker struct {
	once sync.Once
	b    *apachekafka.Broker
	dir  string
	err  error
}

func TestMain(m *testing.M) {
	code := m.Run()
	sharedMu.Lock()
	for _, s := range shared {
		if s.b != nil {
			s.b.Close()
		}
		if s.dir != "" {
			os.RemoveAll(s.dir)
		}
	}
	sharedMu.Unlock()
	os.Exit(code)
}

// sharedCluster returns the broker of kind for d, starting it with opts on
// first use, and kafkatest's helpers dialed to it (as the SASL admin when
// it has SASL).
func sharedCluster(t *testing.T, d apachekafka.Dist, kind string, opts ...apachekafka.Option) (*apachekafka.Broker, *kafkatest.Cluster) {
	t.Helper()
	sharedMu.Lock()
	s := shared[kind+"/"+d.Version]
	if s == nil {
		s = &sharedBroker{}
		shared[kind+"/"+d.Version] = s
	}
	sharedMu.Unlock()
	s.once.Do(func() {
		// One cluster starts at a time: JVMs starting side by side on two
		// loaded cores time each other out.
		startMu.Lock()
		defer startMu.Unlock()
		s.dir, s.err = os.MkdirTemp("", "realkafka-records-")
		if s.err == nil {
			s.b, s.err = apachekafka.StartCluster(d, s.dir, opts...)
		}
	})
	if s.err != nil {
		t.Fatalf("starting the %s broker of Apache Kafka %s: %v", kind, d.Version, s.err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("Apache Kafka %s (%s) log (last 40 lines of each node):\n%s", d.Version, kind, s.b.LogTail(40))
		}
	})
	c := kafkatest.Dial(t, s.b.Addrs(), s.b.ClientOpts()...)
	// Tests here observe groups that never committed: on a new broker the
	// first FindCoordinator creates __consumer_offsets, and its coordinator
	// is not available for a second (CI saw TestCompactionKeepsLogStart
	// Unknown on COORDINATOR_NOT_AVAILABLE). Wait it out once per test.
	c.WaitCoordinatorReady(t)
	return s.b, c
}

// plainBroker is the one-node broker of the records tests.
func plainBroker(t *testing.T, d apachekafka.Dist) (*apachekafka.Broker, *kafkatest.Cluster) {
	return sharedCluster(t, d, "plain")
}

// eachLine runs f for every broker line, in parallel.
func eachLine(t *testing.T, f func(t *testing.T, d apachekafka.Dist)) {
	t.Helper()
	for _, d := range apachekafka.Dists(t) {
		t.Run(d.Line(), func(t *testing.T) {
			t.Parallel()
			f(t, d)
		})
	}
}

// observer is the product's observer, with timeouts for a loaded machine.
func observer(t *testing.T) *kafka.Observer {
	t.Helper()
	o := kafka.NewObserver(kafka.WithTimeouts(10*time.Second, 15*time.Second, 20*time.Second))
	t.Cleanup(o.Close)
	return o
}

func observeCluster(t *testing.T, o *kafka.Observer, conn kafka.Connection, req kafka.ClusterRequest) kafka.ClusterObservation {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	return o.ObserveCluster(ctx, conn, req)
}

func observe(t *testing.T, o *kafka.Observer, conn kafka.Connection, target kafka.Target) proof.Observation {
	t.Helper()
	return observeCluster(t, o, conn, kafka.ClusterRequest{Targets: []kafka.Target{target}}).Observations[0]
}

func conn(c *kafkatest.Cluster) kafka.Connection {
	return kafka.Connection{BootstrapServers: c.Addrs}
}

func requireNoFailures(t *testing.T, obs proof.Observation) {
	t.Helper()
	if len(obs.Failures) > 0 {
		t.Fatalf("the observer failed on the real broker: %s", describeFailures(obs.Failures))
	}
}

func describeFailures(fs []proof.Failure) string {
	var b strings.Builder
	for _, f := range fs {
		fmt.Fprintf(&b, "\n  %s api=%s topic=%s partition=%d: %s", f.Reason, f.API, f.Topic, f.Partition, f.Message)
	}
	if b.Len() == 0 {
		return "(none)"
	}
	return b.String()
}

func requireFailure(t *testing.T, obs proof.Observation, reason, api, topic string) proof.Failure {
	t.Helper()
	for _, f := range obs.Failures {
		if f.Reason == reason && f.API == api && (topic == "" || f.Topic == topic) {
			return f
		}
	}
	t.Fatalf("no failure %s/%s/%q among %s", reason, api, topic, describeFailures(obs.Failures))
	return proof.Failure{}
}

func partitionObs(t *testing.T, obs proof.Observation, topic string, p int32) proof.PartitionObservation {
	t.Helper()
	for _, to := range obs.Topics {
		if to.Name != topic {
			continue
		}
		for _, po := range to.Partitions {
			if po.Partition == p {
				return po
			}
		}
	}
	t.Fatalf("no partition %s/%d in the observation %+v", topic, p, obs.Topics)
	return proof.PartitionObservation{}
}

func topicObs(t *testing.T, obs proof.Observation, topic string) proof.TopicObservation {
	t.Helper()
	for _, to := range obs.Topics {
		if to.Name == topic {
			return to
		}
	}
	t.Fatalf("no topic %s in the observation", topic)
	return proof.TopicObservation{}
}

// is reports whether a config value read is v.
func is(cv proof.ConfigValue, v string) bool { return cv.Present && !cv.Null && cv.Value == v }

// violation returns the proof's violation with reason on topic/partition
// (partition -1: any), or fails.
func violation(t *testing.T, res proof.Result, reason, topic string, partition int32) proof.Violation {
	t.Helper()
	for _, v := range res.Violations {
		if v.Reason == reason && (topic == "" || v.Topic == topic) && (partition < 0 || v.Partition == partition) {
			return v
		}
	}
	t.Fatalf("the proof has no %s on %s/%d: verdict %s, violations %s", reason, topic, partition, res.Verdict, describeViolations(res))
	return proof.Violation{}
}

func hasViolation(res proof.Result, reason string) bool {
	for _, v := range res.Violations {
		if v.Reason == reason {
			return true
		}
	}
	return false
}

func describeViolations(res proof.Result) string {
	var b strings.Builder
	for _, v := range res.Violations {
		fmt.Fprintf(&b, "\n  %s %s/%d: %s", v.Reason, v.Topic, v.Partition, v.Message)
	}
	return b.String()
}

// offsets are the broker's own log start and end of one partition.
func offsets(t *testing.T, c *kafkatest.Cluster, topic string, p int32) (start, end int64) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	adm := c.Admin(t)
	s, err := adm.ListStartOffsets(ctx, topic)
	if err == nil {
		err = s.Error()
	}
	if err != nil {
		t.Fatalf("ListOffsets EARLIEST of %s: %v", topic, err)
	}
	e, err := adm.ListEndOffsets(ctx, topic)
	if err == nil {
		err = e.Error()
	}
	if err != nil {
		t.Fatalf("ListOffsets LATEST of %s: %v", topic, err)
	}
	so, _ := s.Lookup(topic, p)
	eo, _ := e.Lookup(topic, p)
	return so.Offset, eo.Offset
}

// waitFor polls cond every 200 ms until it holds, failing after limit
// (generous: the machine is loaded; this is no timing assertion).
func waitFor(t *testing.T, limit time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not within %s: %s", limit, what)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// readAll reads every record of topic/p from the log start to the end,
// as the broker holds them now.
func readAll(t *testing.T, c *kafkatest.Cluster, topic string, p int32) []*kgo.Record {
	t.Helper()
	_, end := offsets(t, c, topic, p)
	cl := c.Client(t, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {p: kgo.NewOffset().AtStart()}}),
		kgo.FetchMaxWait(200*time.Millisecond))
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var out []*kgo.Record
	for ctx.Err() == nil {
		fs := cl.PollFetches(ctx)
		done := false
		fs.EachRecord(func(r *kgo.Record) {
			out = append(out, r)
			if r.Offset >= end-1 {
				done = true
			}
		})
		if done || end == 0 {
			return out
		}
	}
	t.Fatalf("reading %s/%d to %d: %v (read %d)", topic, p, end, ctx.Err(), len(out))
	return nil
}

// describeConfigsOn is DescribeConfigs of one resource as one broker
// answers it (the request sent to that broker), by config name.
func describeConfigsOn(t *testing.T, c *kafkatest.Cluster, broker int32, typ kmsg.ConfigResourceType, name string) map[string]kmsg.DescribeConfigsResponseResourceConfig {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cl := c.Client(t)
	req := kmsg.NewPtrDescribeConfigsRequest()
	r := kmsg.NewDescribeConfigsRequestResource()
	r.ResourceType, r.ResourceName = typ, name
	req.Resources = append(req.Resources, r)
	resp, err := req.RequestWith(ctx, cl.Broker(int(broker)))
	if err != nil {
		t.Fatalf("DescribeConfigs %v %q on broker %d: %v", typ, name, broker, err)
	}
	if len(resp.Resources) != 1 {
		t.Fatalf("DescribeConfigs %v %q on broker %d: %d resources answered", typ, name, broker, len(resp.Resources))
	}
	if err := kerr.ErrorForCode(resp.Resources[0].ErrorCode); err != nil {
		t.Fatalf("DescribeConfigs %v %q on broker %d: %v", typ, name, broker, err)
	}
	out := map[string]kmsg.DescribeConfigsResponseResourceConfig{}
	for _, rc := range resp.Resources[0].Configs {
		out[rc.Name] = rc
	}
	return out
}

func contextFor(d time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), d)
}

// check's exit codes (internal/cli).
const (
	exitViolated = 1
	exitUnknown  = 2
)

// checkOut is the part of `check --output json` the tests read.
type checkOut struct {
	Verdict        string `json:"verdict"`
	ExpiredRecords int64  `json:"expiredRecords"`
	Violations     []struct {
		Reason string `json:"reason"`
	} `json:"violations"`
}

// check runs `retention-guard check` against the broker.
func check(t *testing.T, c *kafkatest.Cluster, group, topic, window string, extra ...string) (int, checkOut) {
	t.Helper()
	args := append([]string{"check", "--output", "json", "--bootstrap-server", c.Addrs[0], "--group", group,
		"--topic", topic, "--recovery-window", window}, extra...)
	var stdout, stderr bytes.Buffer
	code := cli.Execute(args, &stdout, &stderr)
	var out checkOut
	if err := json.Unmarshal(stdout.Bytes(), &out); err != nil {
		t.Fatalf("check printed no JSON (%v): %s\nstderr: %s", err, stdout.String(), stderr.String())
	}
	return code, out
}

func checkReasons(o checkOut) []string {
	var out []string
	for _, v := range o.Violations {
		out = append(out, v.Reason)
	}
	return out
}

func hasCheckReason(o checkOut, reason string) bool {
	return slices.Contains(checkReasons(o), reason)
}

// createTopic creates a topic and waits until metadata names a leader for
// every partition (a loaded broker answers Metadata for a new topic late).
func createTopic(t *testing.T, c *kafkatest.Cluster, topic string, partitions int32, configs map[string]string) {
	t.Helper()
	c.CreateTopic(t, topic, partitions, configs)
	waitFor(t, 60*time.Second, topic+" has a leader for each partition", func() bool {
		ctx, cancel := contextFor(10 * time.Second)
		defer cancel()
		md, err := c.Admin(t).Metadata(ctx, topic)
		if err != nil || md.Topics[topic].Err != nil || len(md.Topics[topic].Partitions) != int(partitions) {
			return false
		}
		for _, p := range md.Topics[topic].Partitions {
			if p.Leader < 0 || p.Err != nil {
				return false
			}
		}
		return true
	})
}

// scanOut is the part of `scan --output json` the tests read.
type scanOut struct {
	Groups []struct {
		Group        string   `json:"group"`
		Protocol     string   `json:"protocol"`
		ProtocolType string   `json:"protocolType"`
		Topics       []string `json:"topics"`
		Verdict      string   `json:"verdict"`
	} `json:"groups"`
	Failures []string `json:"failures"`
}

// scan runs `retention-guard scan` against the broker.
func scan(t *testing.T, c *kafkatest.Cluster, window, pattern string) (int, scanOut) {
	t.Helper()
	args := []string{"scan", "--output", "json", "--bootstrap-server", c.Addrs[0], "--recovery-window", window,
		"--group-pattern", pattern, "--timeout", "60s"}
	var stdout, stderr bytes.Buffer
	code := cli.Execute(args, &stdout, &stderr)
	var out scanOut
	if err := json.Unmarshal(stdout.Bytes(), &out); err != nil {
		t.Fatalf("scan printed no JSON (%v): %s\nstderr: %s", err, stdout.String(), stderr.String())
	}
	return code, out
}
