package groups

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// createTopic creates a topic and waits until metadata gives every
// partition a leader (a real broker serves a new topic a moment after
// CreateTopics answers).
func (e *env) createTopic(t *testing.T, topic string, partitions int32) {
	t.Helper()
	e.CreateTopic(t, topic, partitions, nil)
	e.waitServed(t, topic, partitions)
}

// waitServed waits until metadata gives every partition of topic a leader.
func (e *env) waitServed(t *testing.T, topic string, partitions int32) {
	t.Helper()
	pollUntil(t, 30*time.Second, 100*time.Millisecond, "topic "+topic+" is served", func() (bool, string) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		tds, err := e.Admin(t).ListTopics(ctx, topic)
		if err != nil {
			return false, err.Error()
		}
		td := tds[topic]
		if td.Err != nil || len(td.Partitions) != int(partitions) {
			return false, "not in metadata"
		}
		for _, p := range td.Partitions {
			if p.Err != nil || p.Leader < 0 {
				return false, "partition without a leader"
			}
		}
		return true, ""
	})
}

// coordinator is the node coordinating group (FindCoordinator).
func (e *env) coordinator(t *testing.T, cl *kgo.Client, group string) int32 {
	t.Helper()
	r := kmsg.NewPtrFindCoordinatorRequest()
	r.CoordinatorKeys = []string{group}
	var node int32 = -1
	pollUntil(t, 30*time.Second, 200*time.Millisecond, "a coordinator for "+group, func() (bool, string) {
		resp := req[*kmsg.FindCoordinatorResponse](t, cl, r)
		if len(resp.Coordinators) != 1 || resp.Coordinators[0].ErrorCode != 0 {
			return false, "not yet"
		}
		node = resp.Coordinators[0].NodeID
		return true, ""
	})
	return node
}

// retriable: the coordinator is loading or moved; ask again.
func retriable(code int16) bool {
	switch code {
	case kerr.NotCoordinator.Code, kerr.CoordinatorNotAvailable.Code, kerr.CoordinatorLoadInProgress.Code:
		return true
	}
	return false
}

// consumerMember is a KIP-848 group member driven by raw
// ConsumerGroupHeartbeat requests (kgo joins a 3.9 broker with the classic
// protocol even when asked for KIP-848: it needs ConsumerGroupHeartbeat v1,
// from 4.0), heartbeating in the background until it leaves.
type consumerMember struct {
	cl    *kgo.Client
	group string

	mu    sync.Mutex
	id    string
	epoch int32
	err   error

	stop chan struct{}
	done chan struct{}
}

// joinConsumerGroup joins group subscribed to topics and waits until it
// owns partitions.
func joinConsumerGroup(t *testing.T, e *env, group string, topics ...string) *consumerMember {
	t.Helper()
	m := &consumerMember{cl: e.Client(t), group: group, stop: make(chan struct{}), done: make(chan struct{})}
	r := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	r.Group, r.MemberID, r.MemberEpoch = group, newMemberID(), 0
	r.RebalanceTimeoutMillis = 30000
	r.SubscribedTopicNames = topics
	r.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
	resp := sendHeartbeat(t, m.cl, r)
	if resp.ErrorCode != 0 {
		t.Fatalf("ConsumerGroupHeartbeat joining %s: %v (%s)", group, kerr.ErrorForCode(resp.ErrorCode), str(resp.ErrorMessage))
	}
	m.id, m.epoch = r.MemberID, resp.MemberEpoch
	if resp.MemberID != nil && *resp.MemberID != "" {
		m.id = *resp.MemberID
	}
	owned := resp.Assignment != nil && len(resp.Assignment.Topics) > 0
	deadline := time.Now().Add(30 * time.Second)
	for !owned {
		if time.Now().After(deadline) {
			t.Fatalf("KIP-848 member of %s owns no partition after 30s", group)
		}
		time.Sleep(300 * time.Millisecond)
		resp := m.heartbeat(t)
		owned = resp.Assignment != nil && len(resp.Assignment.Topics) > 0
		if owned {
			// Acknowledge the assignment: the member owns what it was given.
			ack := kmsg.NewPtrConsumerGroupHeartbeatRequest()
			ack.Group, ack.MemberID, ack.MemberEpoch = group, m.id, m.epoch
			for _, at := range resp.Assignment.Topics {
				rt := kmsg.NewConsumerGroupHeartbeatRequestTopic()
				rt.TopicID, rt.Partitions = at.TopicID, at.Partitions
				ack.Topics = append(ack.Topics, rt)
			}
			m.send(t, ack)
		}
	}
	go m.loop()
	t.Cleanup(func() { m.leave(t) })
	return m
}

func (m *consumerMember) heartbeat(t *testing.T) *kmsg.ConsumerGroupHeartbeatResponse {
	t.Helper()
	m.mu.Lock()
	r := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	r.Group, r.MemberID, r.MemberEpoch = m.group, m.id, m.epoch
	m.mu.Unlock()
	return m.send(t, r)
}

func (m *consumerMember) send(t *testing.T, r *kmsg.ConsumerGroupHeartbeatRequest) *kmsg.ConsumerGroupHeartbeatResponse {
	t.Helper()
	resp := sendHeartbeat(t, m.cl, r)
	if resp.ErrorCode != 0 {
		t.Fatalf("ConsumerGroupHeartbeat of %s: %v (%s)", m.group, kerr.ErrorForCode(resp.ErrorCode), str(resp.ErrorMessage))
	}
	m.mu.Lock()
	m.epoch = resp.MemberEpoch
	m.mu.Unlock()
	return resp
}

// sendHeartbeat sends r, again while the coordinator is not ready (for
// 30 s).
func sendHeartbeat(t *testing.T, cl *kgo.Client, r *kmsg.ConsumerGroupHeartbeatRequest) *kmsg.ConsumerGroupHeartbeatResponse {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		resp, err := r.RequestWith(ctx, cl)
		cancel()
		var code int16
		switch {
		case err == nil:
			code = resp.ErrorCode
		case errors.As(err, new(*kerr.Error)):
			// The coordinator lookup failed (kgo answers with its error).
			var ke *kerr.Error
			errors.As(err, &ke)
			code = ke.Code
		default:
			t.Fatalf("ConsumerGroupHeartbeat of %s: %v", r.Group, err)
		}
		if !retriable(code) || time.Now().After(deadline) {
			if err != nil {
				t.Fatalf("ConsumerGroupHeartbeat of %s: %v", r.Group, err)
			}
			return resp
		}
		time.Sleep(300 * time.Millisecond)
	}
}

// loop heartbeats every 500 ms (the harness's heartbeat interval).
func (m *consumerMember) loop() {
	defer close(m.done)
	tick := time.NewTicker(500 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-m.stop:
			return
		case <-tick.C:
		}
		m.mu.Lock()
		r := kmsg.NewPtrConsumerGroupHeartbeatRequest()
		r.Group, r.MemberID, r.MemberEpoch = m.group, m.id, m.epoch
		m.mu.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		resp, err := r.RequestWith(ctx, m.cl)
		cancel()
		m.mu.Lock()
		switch {
		case err != nil:
			m.err = err
		case resp.ErrorCode != 0:
			m.err = kerr.ErrorForCode(resp.ErrorCode)
		default:
			m.epoch = resp.MemberEpoch
		}
		m.mu.Unlock()
	}
}

// commit commits as the member (its ID and epoch), as a KIP-848 consumer
// does.
func (m *consumerMember) commit(t *testing.T, topic string, offsets map[int32]int64) {
	t.Helper()
	m.mu.Lock()
	id, epoch, herr := m.id, m.epoch, m.err
	m.mu.Unlock()
	if herr != nil {
		t.Fatalf("the KIP-848 member of %s stopped heartbeating: %v", m.group, herr)
	}
	commitAsMember(t, m.cl, m.group, id, epoch, topic, offsets)
}

// leave stops heartbeating and leaves (epoch -1): the group is Empty once
// it was the last member. Safe to call twice.
func (m *consumerMember) leave(t *testing.T) {
	t.Helper()
	select {
	case <-m.stop:
		return
	default:
	}
	close(m.stop)
	<-m.done
	m.mu.Lock()
	r := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	r.Group, r.MemberID, r.MemberEpoch = m.group, m.id, -1
	m.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if resp, err := r.RequestWith(ctx, m.cl); err != nil || resp.ErrorCode != 0 {
		t.Errorf("leaving %s: %v %v", m.group, err, resp)
	}
}

// commitAsMember sends an OffsetCommit with a member's ID and epoch (or
// generation).
func commitAsMember(t *testing.T, cl *kgo.Client, group, member string, epoch int32, topic string, offsets map[int32]int64) {
	t.Helper()
	r := kmsg.NewPtrOffsetCommitRequest()
	r.Group, r.MemberID, r.Generation = group, member, epoch
	rt := kmsg.NewOffsetCommitRequestTopic()
	rt.Topic = topic
	for p, at := range offsets {
		rp := kmsg.NewOffsetCommitRequestTopicPartition()
		rp.Partition, rp.Offset, rp.LeaderEpoch = p, at, -1
		rt.Partitions = append(rt.Partitions, rp)
	}
	// OffsetCommit v10 (4.x) names topics by ID.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	tds, err := kadm.NewClient(cl).ListTopics(ctx, topic)
	if err != nil || tds[topic].Err != nil {
		t.Fatalf("metadata of %s: %v %v", topic, err, tds[topic].Err)
	}
	rt.TopicID = tds[topic].ID
	r.Topics = []kmsg.OffsetCommitRequestTopic{rt}
	resp := req[*kmsg.OffsetCommitResponse](t, cl, r)
	for _, rt := range resp.Topics {
		for _, rp := range rt.Partitions {
			if rp.ErrorCode != 0 {
				t.Fatalf("member commit of %s on %s/%d: %v", group, rt.Topic, rp.Partition, kerr.ErrorForCode(rp.ErrorCode))
			}
		}
	}
}

func str(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
