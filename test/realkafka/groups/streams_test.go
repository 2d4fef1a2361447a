package groups

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/retentionguard/retention-guard/internal/kafka"
	"github.com/retentionguard/retention-guard/internal/kafka/apachekafka"
	"github.com/retentionguard/retention-guard/internal/proof"
)

// streamsLine: lines whose brokers serve streams groups without being
// asked (GA and on by default from 4.2, KIP-1071).
func streamsLine(v variant) bool { return v.Dist.AtLeast(4, 2) }

// streamsMember is a streams group member driven by raw
// StreamsGroupHeartbeat requests, as Kafka Streams' client would send them
// (no kafka-streams here: the broker keeps the group).
type streamsMember struct {
	e     *env
	cl    *kgo.Client
	group string
	id    string
	epoch int32
}

// joinStreamsGroup joins group with a topology of one subtopology reading
// topic, and heartbeats until the member owns a task.
func joinStreamsGroup(t *testing.T, e *env, group, topic string) *streamsMember {
	t.Helper()
	cl := e.Client(t)
	// kgo does not route streams requests (it knows no StreamsGroup
	// API): they go to the coordinator directly.
	m := &streamsMember{e: e, cl: cl, group: group, id: newMemberID()}
	pid := "process-" + m.id
	sub := kmsg.NewStreamsGroupHeartbeatRequestTopologySubtopology()
	sub.SubtopologyID, sub.SourceTopics = "0", []string{topic}
	topo := kmsg.NewStreamsGroupHeartbeatRequestTopology()
	topo.Subtopologies = []kmsg.StreamsGroupHeartbeatRequestTopologySubtopology{sub}
	deadline := time.Now().Add(kafkatestTimeout)
	first := true
	for {
		r := kmsg.NewPtrStreamsGroupHeartbeatRequest()
		r.Group, r.MemberID, r.MemberEpoch = group, m.id, m.epoch
		if first {
			r.RebalanceTimeoutMillis = 30000
			r.Topology = &topo
			r.ProcessID = &pid
			r.ActiveTasks, r.StandbyTasks, r.WarmupTasks = []kmsg.TaskIDs{}, []kmsg.TaskIDs{}, []kmsg.TaskIDs{}
		}
		resp := m.heartbeat(t, r)
		if resp.ErrorCode != 0 {
			msg := ""
			if resp.ErrorMessage != nil {
				msg = *resp.ErrorMessage
			}
			t.Fatalf("StreamsGroupHeartbeat for %s: %v (%s)", group, kerr.ErrorForCode(resp.ErrorCode), msg)
		}
		first = false
		m.epoch = resp.MemberEpoch
		if len(resp.ActiveTasks) > 0 {
			return m
		}
		if time.Now().After(deadline) {
			t.Fatalf("streams member of %s owns no task after %s (epoch %d, status %+v)", group, kafkatestTimeout, m.epoch, resp.Status)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

const kafkatestTimeout = 30 * time.Second

// commit commits as the member (its ID and epoch), as Kafka Streams does.
func (m *streamsMember) commit(t *testing.T, topic string, p int32, offset int64) {
	t.Helper()
	commitAsMember(t, m.cl, m.group, m.id, m.epoch, topic, map[int32]int64{p: offset})
}

func (m *streamsMember) heartbeat(t *testing.T, r *kmsg.StreamsGroupHeartbeatRequest) *kmsg.StreamsGroupHeartbeatResponse {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		resp, err := m.cl.Broker(int(m.e.coordinator(t, m.cl, m.group))).Request(ctx, r)
		cancel()
		if err != nil {
			t.Fatalf("StreamsGroupHeartbeat: %v", err)
		}
		hr := resp.(*kmsg.StreamsGroupHeartbeatResponse)
		if !retriable(hr.ErrorCode) || time.Now().After(deadline) {
			return hr
		}
		time.Sleep(300 * time.Millisecond)
	}
}

// newMemberID is a member ID as a KIP-848 client makes one (v1+: the
// client's; a random UUID, base64).
func newMemberID() string {
	id := make([]byte, 16)
	_, _ = rand.Read(id)
	return base64.RawURLEncoding.EncodeToString(id)
}

// leave leaves the group (epoch -1): the group is Empty.
func (m *streamsMember) leave(t *testing.T) {
	t.Helper()
	r := kmsg.NewPtrStreamsGroupHeartbeatRequest()
	r.Group, r.MemberID, r.MemberEpoch = m.group, m.id, -1
	if resp := m.heartbeat(t, r); resp.ErrorCode != 0 {
		t.Fatalf("leaving streams group %s: %v", m.group, kerr.ErrorForCode(resp.ErrorCode))
	}
}

// advertises reports whether the broker lists the API in ApiVersions.
func advertises(t *testing.T, e *env, key int16) bool {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := kmsg.NewPtrApiVersionsRequest().RequestWith(ctx, e.Client(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range resp.ApiKeys {
		if k.ApiKey == key {
			return true
		}
	}
	return false
}

// On a cluster of several brokers each streams group is described by its
// own coordinator (franz-go sends StreamsGroupDescribe to any broker, which
// answers NOT_COORDINATOR for the groups it does not coordinate). Two nodes,
// the groups' coordinators spread over both; every group is read as the
// Empty streams group it is, in one pass. Not parallel: its two nodes start
// before the shared brokers (five JVMs starting at once on two cores can
// miss the harness's start timeout).
func TestStreamsGroupsDescribedAtTheirCoordinators(t *testing.T) {
	d := apachekafka.Newest(t)
	if !d.AtLeast(4, 2) {
		t.Fatalf("the newest line, %s, has no streams groups on by default", d.Version)
	}
	b := apachekafka.Start(t, d, apachekafka.WithNodes(2), apachekafka.WithBrokerConfig("offsets.topic.num.partitions", "4"))
	e := &env{Cluster: b.Cluster, V: variant{Name: d.Line(), Dist: d, KIP848: true}, B: b}
	const topic = "spread-orders"
	e.createTopic(t, topic, 1)
	e.Produce(t, topic, 5)
	cl := e.Client(t)
	nodes := map[int32]bool{}
	var targets []kafka.Target
	for i := range 6 {
		g := fmt.Sprintf("spread-app-%d", i)
		m := joinStreamsGroup(t, e, g, topic)
		m.commit(t, topic, 0, 2)
		m.leave(t)
		nodes[e.coordinator(t, cl, g)] = true
		targets = append(targets, kafka.Target{Group: g, Topics: []string{topic}})
	}
	if len(nodes) != 2 {
		t.Fatalf("the groups' coordinators are %v: the test needs both nodes", nodes)
	}
	o := newObserver(t)
	for _, obs := range observe(t, o, kafka.Connection{BootstrapServers: b.Addrs()}, targets...) {
		requireNoFailures(t, obs)
		if g := obs.Group; g.Protocol != proof.ProtocolStreams || g.State != proof.GroupStateEmpty {
			t.Errorf("%s = %+v, want an Empty streams group", g.ID, g)
		}
	}
}
