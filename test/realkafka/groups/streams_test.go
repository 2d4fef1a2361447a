package groups

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// streamsLine: lines whose brokers serve streams groups without being
// asked (GA and on by default from 4.2, KIP-1071).
func streamsLine(v variant) bool { return v.Dist.AtLeast(4, 2) }

// streamsMember is a streams group member driven by raw
// StreamsGroupHeartbeat requests, as Kafka Streams' client would send them
// (no kafka-streams here: the broker keeps the group).
type streamsMember struct {
	br    *kgo.Broker
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
	m := &streamsMember{br: e.coordinator(t, cl, group), cl: cl, group: group, id: newMemberID()}
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
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := m.br.Request(ctx, r)
	if err != nil {
		t.Fatalf("StreamsGroupHeartbeat: %v", err)
	}
	return resp.(*kmsg.StreamsGroupHeartbeatResponse)
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
