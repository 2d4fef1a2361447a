package kafka

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/retentionguard/retention-guard/internal/kafka/kafkatest"
	"github.com/retentionguard/retention-guard/internal/proof"
)

// A healthy group: records really produced, offsets really committed; every
// number is exact.
func TestObserveHealthyGroup(t *testing.T) {
	t.Parallel()
	c := kafkatest.NewCluster(t)
	c.CreateTopic(t, "orders", 3, nil)
	c.CreateTopic(t, "refunds", 1, map[string]string{"retention.ms": "86400000", "retention.bytes": "1048576"})
	c.Produce(t, "orders", 30) // 10 per partition
	c.Produce(t, "refunds", 5)
	c.Commit(t, "billing", "orders", 0, 4)
	c.Commit(t, "billing", "orders", 1, 10)
	c.Commit(t, "billing", "orders", 2, 7)

	o, _ := newTestObserver(t)
	before := time.Now()
	// Topics are asked unsorted and one twice: the observation sorts them.
	obs := observe(t, o, Connection{BootstrapServers: c.Addrs},
		Target{Group: "billing", Topics: []string{"refunds", "orders", "orders"}})[0]

	requireNoFailures(t, obs)
	if obs.ObservedAt.Before(before) || obs.ObservedAt.After(time.Now()) {
		t.Errorf("ObservedAt %v not within the call", obs.ObservedAt)
	}
	if obs.Group.ID != "billing" || obs.Group.State != proof.GroupStateEmpty || obs.Group.Protocol != proof.ProtocolClassic {
		t.Errorf("group = %+v, want billing Empty classic", obs.Group)
	}
	if !obs.Group.EmptySince.IsZero() {
		t.Errorf("EmptySince = %v on a first observation, want zero (unknown)", obs.Group.EmptySince)
	}
	if obs.OffsetsRetentionMinutes != value("10080") {
		t.Errorf("offsets.retention.minutes = %+v, want 10080 (the broker default)", obs.OffsetsRetentionMinutes)
	}
	if len(obs.Topics) != 2 || obs.Topics[0].Name != "orders" || obs.Topics[1].Name != "refunds" {
		t.Fatalf("topics = %+v, want orders, refunds", obs.Topics)
	}
	orders := obs.Topics[0]
	if !is(orders.RetentionMs, "604800000") || !is(orders.RetentionBytes, "-1") || !is(orders.CleanupPolicy, "delete") ||
		!is(orders.DeleteRetentionMs, "86400000") || !is(orders.TimestampType, "CreateTime") {
		t.Errorf("orders configs = %+v %+v %+v %+v %+v, want defaults", orders.RetentionMs, orders.RetentionBytes,
			orders.CleanupPolicy, orders.DeleteRetentionMs, orders.TimestampType)
	}
	// No override: the value is the brokers' default, and says so.
	if orders.RetentionMs.Source != "broker default log.retention.ms" {
		t.Errorf("orders retention.ms source = %q, want the broker default it comes from", orders.RetentionMs.Source)
	}
	refunds := obs.Topics[1]
	if refunds.RetentionMs != value("86400000") || refunds.RetentionBytes != value("1048576") { // the topic's own: no source
		t.Errorf("refunds configs = %+v %+v, want the topic's own", refunds.RetentionMs, refunds.RetentionBytes)
	}
	want := []proof.PartitionObservation{
		{Partition: 0, LogStart: 0, LogEnd: 10, Committed: 4},
		{Partition: 1, LogStart: 0, LogEnd: 10, Committed: 10},
		{Partition: 2, LogStart: 0, LogEnd: 10, Committed: 7},
	}
	if len(orders.Partitions) != len(want) {
		t.Fatalf("orders partitions = %+v", orders.Partitions)
	}
	for i, w := range want {
		got := orders.Partitions[i]
		if got.Partition != w.Partition || got.LogStart != w.LogStart || got.LogEnd != w.LogEnd || got.Committed != w.Committed {
			t.Errorf("orders/%d = %+v, want %+v", i, got, w)
		}
	}
	// Lagging partitions have the timestamp of their committed record; a
	// caught-up one needs none.
	if orders.Partitions[0].CommittedTimestamp.IsZero() || orders.Partitions[2].CommittedTimestamp.IsZero() {
		t.Errorf("lagging partitions lack CommittedTimestamp: %+v", orders.Partitions)
	}
	if !orders.Partitions[1].CommittedTimestamp.IsZero() {
		t.Errorf("caught-up partition has CommittedTimestamp %v", orders.Partitions[1].CommittedTimestamp)
	}
	if p := partition(t, obs, "refunds", 0); p.Committed != proof.NoOffset || p.LogEnd != 5 {
		t.Errorf("refunds/0 = %+v, want no committed offset, log end 5", p)
	}
}

// Real retention: a topic whose retention.ms has passed, enforced by the
// broker, moves the log start past the committed offset. The committed
// offset is reported raw, below the log start (lag helpers would clamp it).
func TestObserveRetentionExpiredCommittedOffset(t *testing.T) {
	t.Parallel()
	c := kafkatest.NewCluster(t)
	c.CreateTopic(t, "events", 1, map[string]string{"retention.ms": "20"})
	c.ProduceTo(t, "events", 0, 10)
	c.Commit(t, "audit", "events", 0, 3)
	time.Sleep(60 * time.Millisecond) // the 10 records are now older than retention.ms
	c.ApplyRetention()
	c.ProduceTo(t, "events", 0, 5) // fresh records after the expiry

	o, _ := newTestObserver(t)
	obs := observe(t, o, Connection{BootstrapServers: c.Addrs}, Target{Group: "audit", Topics: []string{"events"}})[0]
	requireNoFailures(t, obs)
	p := partition(t, obs, "events", 0)
	if p.LogStart != 10 || p.LogEnd != 15 || p.Committed != 3 {
		t.Fatalf("events/0 = %+v, want logStart 10, logEnd 15, committed 3 (raw, below the log start)", p)
	}
	if !p.CommittedTimestamp.IsZero() {
		t.Errorf("an expired offset has no record, yet CommittedTimestamp = %v", p.CommittedTimestamp)
	}
	if got := topicObs(t, obs, "events").RetentionMs; got != value("20") {
		t.Errorf("retention.ms = %+v, want 20", got)
	}
}

// DeleteRecords (an operator truncating a topic) moves the log start.
func TestObserveDeleteRecordsMovesLogStart(t *testing.T) {
	t.Parallel()
	c := kafkatest.NewCluster(t)
	c.CreateTopic(t, "ledger", 2, nil)
	c.Produce(t, "ledger", 40) // 20 per partition
	c.Commit(t, "settle", "ledger", 0, 5)
	c.Commit(t, "settle", "ledger", 1, 15)
	c.DeleteRecords(t, "ledger", 0, 12)

	o, _ := newTestObserver(t)
	obs := observe(t, o, Connection{BootstrapServers: c.Addrs}, Target{Group: "settle", Topics: []string{"ledger"}})[0]
	requireNoFailures(t, obs)
	if p := partition(t, obs, "ledger", 0); p.LogStart != 12 || p.LogEnd != 20 || p.Committed != 5 {
		t.Errorf("ledger/0 = %+v, want logStart 12, logEnd 20, committed 5", p)
	}
	if p := partition(t, obs, "ledger", 1); p.LogStart != 0 || p.Committed != 15 {
		t.Errorf("ledger/1 = %+v, want logStart 0, committed 15", p)
	}
}

// Group offsets expire (kfake's offset.retention.ms knob): the committed
// offset disappears and is reported as none, the group as Dead. The broker
// still reports offsets.retention.minutes, which is what real brokers have.
func TestObserveGroupOffsetExpiry(t *testing.T) {
	t.Parallel()
	c := kafkatest.NewCluster(t, kafkatest.WithOffsetExpiry(200*time.Millisecond, 20*time.Millisecond))
	c.CreateTopic(t, "payments", 1, nil)
	c.ProduceTo(t, "payments", 0, 10)
	c.Commit(t, "ledger", "payments", 0, 6)

	o, _ := newTestObserver(t)
	conn := Connection{BootstrapServers: c.Addrs}
	target := Target{Group: "ledger", Topics: []string{"payments"}}
	obs := observe(t, o, conn, target)[0]
	requireNoFailures(t, obs)
	if p := partition(t, obs, "payments", 0); p.Committed != 6 {
		t.Fatalf("before expiry: committed = %d, want 6", p.Committed)
	}

	deadline := time.Now().Add(5 * time.Second)
	for {
		obs = observe(t, o, conn, target)[0]
		requireNoFailures(t, obs)
		if partition(t, obs, "payments", 0).Committed == proof.NoOffset {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("committed offset did not expire: %+v", partition(t, obs, "payments", 0))
		}
		time.Sleep(50 * time.Millisecond)
	}
	if obs.Group.State != proof.GroupStateDead {
		t.Errorf("group state after all offsets expired = %q, want Dead", obs.Group.State)
	}
	if obs.OffsetsRetentionMinutes != value("10080") {
		t.Errorf("offsets.retention.minutes = %+v, want 10080", obs.OffsetsRetentionMinutes)
	}
	if p := partition(t, obs, "payments", 0); p.LogEnd != 10 || !p.LastCommit.IsZero() {
		t.Errorf("payments/0 = %+v, want logEnd 10 and no LastCommit", p)
	}
}

// A topic that does not exist is TopicNotFound, named; the other topic of
// the same target is still observed.
func TestObserveUnknownTopic(t *testing.T) {
	t.Parallel()
	c := kafkatest.NewCluster(t)
	c.CreateTopic(t, "orders", 1, nil)
	c.ProduceTo(t, "orders", 0, 3)
	c.Commit(t, "billing", "orders", 0, 2)

	o, _ := newTestObserver(t)
	obs := observe(t, o, Connection{BootstrapServers: c.Addrs},
		Target{Group: "billing", Topics: []string{"orders", "no-such-topic"}})[0]
	f := requireFailure(t, obs, proof.ReasonTopicNotFound, "Metadata", "no-such-topic")
	if f.Partition != -1 {
		t.Errorf("partition = %d, want -1", f.Partition)
	}
	if len(obs.Failures) != 1 {
		t.Errorf("want only the TopicNotFound failure, got %s", describeFailures(obs.Failures))
	}
	if p := partition(t, obs, "orders", 0); p.Committed != 2 || p.LogEnd != 3 {
		t.Errorf("orders/0 = %+v, want committed 2, logEnd 3", p)
	}
	// The topic did not get auto-created by asking for it.
	tds, err := c.Admin(t).ListTopics(context.Background(), "no-such-topic")
	if err != nil {
		t.Fatal(err)
	}
	if td, ok := tds["no-such-topic"]; ok && td.Err == nil {
		t.Errorf("observing created the topic")
	}
}

// A closed port: BrokerUnreachable at once, before the context's deadline
// (a refused connection is not waited out).
func TestObserveBrokerUnreachable(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now

	o, _ := newTestObserver(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	obs := o.Observe(ctx, Connection{BootstrapServers: []string{addr}},
		[]Target{{Group: "g1", Topics: []string{"a"}}, {Group: "g2", Topics: []string{"b"}}})
	if ctx.Err() != nil {
		t.Errorf("Observe returned only after its deadline passed (%v): a refused connection must fail at once", ctx.Err())
	}
	for i, ob := range obs {
		f := requireFailure(t, ob, proof.ReasonBrokerUnreachable, "Metadata", "")
		if f.Topic != "" || f.Partition != -1 {
			t.Errorf("target %d: failure %+v should concern the whole connection", i, f)
		}
		if len(ob.Topics) != 1 || len(ob.Topics[0].Partitions) != 0 || ob.Topics[0].RetentionMs.Present {
			t.Errorf("target %d: topics %+v should hold only the name", i, ob.Topics)
		}
		if ob.OffsetsRetentionMinutes.Present || ob.Group.State != "" {
			t.Errorf("target %d: facts reported without an answer: %+v", i, ob)
		}
	}
}

// A broker that accepts connections and never answers: BrokerUnreachable
// when the context's deadline passes, not later.
func TestObserveBrokerSilent(t *testing.T) {
	t.Parallel()
	silent := kafkatest.SilentBroker(t)

	// The observer's own timeouts are far longer than the deadline.
	o := NewObserver(WithTimeouts(time.Minute, time.Minute, time.Minute))
	t.Cleanup(o.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	obs := o.Observe(ctx, Connection{BootstrapServers: []string{silent}}, []Target{{Group: "g", Topics: []string{"a"}}})
	// Cut by the context (its deadline named), not by the observer's own
	// minute-long timeouts.
	f := requireFailure(t, obs[0], proof.ReasonBrokerUnreachable, "Metadata", "")
	if !strings.Contains(f.Message, "deadline") {
		t.Errorf("message %q should say the deadline passed", f.Message)
	}
}

// The record at the committed offset: its timestamp, decoded exactly from
// the batch (offset at the start of a batch and in its middle), for records
// produced with known timestamps.
func TestObserveCommittedTimestamp(t *testing.T) {
	t.Parallel()
	c := kafkatest.NewCluster(t)
	c.CreateTopic(t, "clicks", 2, nil)
	base := time.Now().Add(-time.Hour).Truncate(time.Millisecond)
	at := func(i int) time.Time { return base.Add(time.Duration(i) * time.Minute) }
	var batch []*kgo.Record
	for i := range 10 { // one batch, offsets 0..9
		batch = append(batch, &kgo.Record{Topic: "clicks", Partition: 0, Timestamp: at(i), Value: []byte("x")})
	}
	c.ProduceRecords(t, batch...)
	for i := range 3 { // three batches, offsets 0..2
		c.ProduceRecords(t, &kgo.Record{Topic: "clicks", Partition: 1, Timestamp: at(100 + i), Value: []byte("y")})
	}
	c.Commit(t, "analytics", "clicks", 0, 4) // inside the batch
	c.Commit(t, "analytics", "clicks", 1, 2) // the start of the last batch
	c.Commit(t, "reports", "clicks", 0, 9)   // another group, same partition
	c.Commit(t, "reports", "clicks", 1, 3)   // caught up

	o, _ := newTestObserver(t)
	obs := observe(t, o, Connection{BootstrapServers: c.Addrs},
		Target{Group: "analytics", Topics: []string{"clicks"}},
		Target{Group: "reports", Topics: []string{"clicks"}})
	for _, ob := range obs {
		requireNoFailures(t, ob)
	}
	// Both groups commit without joining (simple groups): their offsets
	// expire per commit, so the record before each committed offset dates
	// the commit too.
	for _, ob := range obs {
		if g := ob.Group; g.Protocol != proof.ProtocolClassic || g.ProtocolType != "" || g.State != proof.GroupStateEmpty {
			t.Errorf("%s = %+v, want a simple group (classic, no protocol type, Empty)", ob.Group.ID, g)
		}
	}
	check := func(ob proof.Observation, p int32, want, preceding time.Time) {
		t.Helper()
		po := partition(t, ob, "clicks", p)
		if !po.CommittedTimestamp.Equal(want) || !po.PrecedingTimestamp.Equal(preceding) {
			t.Errorf("%s clicks/%d timestamps at / before the committed offset = %v / %v, want %v / %v",
				ob.Group.ID, p, po.CommittedTimestamp, po.PrecedingTimestamp, want, preceding)
		}
	}
	check(obs[0], 0, at(4), at(3))
	check(obs[0], 1, at(102), at(101))
	check(obs[1], 0, at(9), at(8))
	check(obs[1], 1, time.Time{}, at(102)) // caught up: nothing at 3, record 2 dates the commit
}

// KIP-848 groups (the "consumer" protocol) next to a classic group: each
// gets its protocol and state right. A KIP-848 group looks Dead or unknown
// to DescribeGroups; ConsumerGroupDescribe knows it.
func TestObserveGroupProtocols(t *testing.T) {
	t.Parallel()
	c := kafkatest.NewCluster(t)
	c.CreateTopic(t, "jobs", 2, nil)
	c.Produce(t, "jobs", 10)

	nextGen := c.JoinGroup(t, "workers-848", kafkatest.Consumer, "jobs")
	classic := c.JoinGroup(t, "workers-classic", kafkatest.Classic, "jobs")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, cl := range []*kgo.Client{nextGen, classic} {
		if err := kafkatest.CommitSync(ctx, cl, "jobs", map[int32]int64{0: 3}); err != nil {
			t.Fatal(err)
		}
	}
	c.WaitGroupState(t, "workers-848", "Stable")
	c.WaitGroupState(t, "workers-classic", "Stable")

	o, _ := newTestObserver(t)
	conn := Connection{BootstrapServers: c.Addrs}
	targets := []Target{{Group: "workers-848", Topics: []string{"jobs"}}, {Group: "workers-classic", Topics: []string{"jobs"}}}
	obs := observe(t, o, conn, targets...)
	for _, ob := range obs {
		requireNoFailures(t, ob)
		if p := partition(t, ob, "jobs", 0); p.Committed != 3 {
			t.Errorf("%s jobs/0 committed = %d, want 3", ob.Group.ID, p.Committed)
		}
	}
	if g := obs[0].Group; g.Protocol != proof.ProtocolConsumer || g.State != proof.GroupStateStable {
		t.Errorf("KIP-848 group = %+v, want consumer Stable", g)
	}
	if g := obs[1].Group; g.Protocol != proof.ProtocolClassic || g.State != proof.GroupStateStable {
		t.Errorf("classic group = %+v, want classic Stable", g)
	}

	// Real Kafka answers DescribeGroups for a KIP-848 group with
	// GROUP_ID_NOT_FOUND (kfake describes it); the observation is the same.
	h := c.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.DescribeGroups}, Group: "workers-848", Err: kerr.GroupIDNotFound, Count: -1})
	obs = observe(t, o, conn, targets[0])
	h.Remove()
	stable := obs[0].ObservedAt
	requireNoFailures(t, obs[0])
	if g := obs[0].Group; g.Protocol != proof.ProtocolConsumer || g.State != proof.GroupStateStable {
		t.Errorf("KIP-848 group unknown to DescribeGroups = %+v, want consumer Stable", g)
	}

	// The KIP-848 consumer leaves: its group becomes Empty, and since this
	// observer saw it Stable before, it knows since when.
	nextGen.Close()
	c.WaitGroupState(t, "workers-848", "Empty")
	obs = observe(t, o, conn, targets...)
	g := obs[0].Group
	if g.Protocol != proof.ProtocolConsumer || g.State != proof.GroupStateEmpty {
		t.Fatalf("KIP-848 group after leaving = %+v, want consumer Empty", g)
	}
	if !g.EmptySince.Equal(stable) {
		t.Errorf("EmptySince = %v, want the last observation that saw it Stable (%v): a lower bound", g.EmptySince, stable)
	}
}

// The group memory: EmptySince and CommittedAfter come from transitions the
// observer witnessed, never from a first sight, and are lower bounds: the
// last observation that saw the old state or offset.
func TestObserveGroupMemory(t *testing.T) {
	t.Parallel()
	c := kafkatest.NewCluster(t)
	c.CreateTopic(t, "orders", 1, nil)
	c.ProduceTo(t, "orders", 0, 10)
	c.Commit(t, "billing", "orders", 0, 2)

	o, _ := newTestObserver(t)
	conn := Connection{BootstrapServers: c.Addrs}
	target := Target{Group: "billing", Topics: []string{"orders"}}

	first := observe(t, o, conn, target)[0]
	if p := partition(t, first, "orders", 0); !p.CommittedAfter.IsZero() || !first.Group.EmptySince.IsZero() {
		t.Fatalf("first sight: CommittedAfter %v, EmptySince %v; want both unknown", p.CommittedAfter, first.Group.EmptySince)
	}
	c.Commit(t, "billing", "orders", 0, 5)
	second := observe(t, o, conn, target)[0]
	if p := partition(t, second, "orders", 0); !p.CommittedAfter.Equal(first.ObservedAt) {
		t.Errorf("after a new commit: CommittedAfter = %v, want the observation before it, %v", p.CommittedAfter, first.ObservedAt)
	}
	third := observe(t, o, conn, target)[0]
	if p := partition(t, third, "orders", 0); !p.CommittedAfter.Equal(first.ObservedAt) {
		t.Errorf("unchanged offset: CommittedAfter = %v, want it kept at %v", p.CommittedAfter, first.ObservedAt)
	}
	if !third.Group.EmptySince.IsZero() {
		t.Errorf("never seen leaving Empty, yet EmptySince = %v", third.Group.EmptySince)
	}

	// Another observer (a CLI run) knows nothing of this.
	fresh, _ := newTestObserver(t)
	if p := partition(t, observe(t, fresh, conn, target)[0], "orders", 0); !p.CommittedAfter.IsZero() {
		t.Errorf("one-shot observation has CommittedAfter %v", p.CommittedAfter)
	}

	// Credentials do not key the memory: the same cluster through another
	// Connection (the servers in another order) remembers.
	conn2 := Connection{BootstrapServers: append([]string{c.Addrs[0]}, c.Addrs...)}
	if p := partition(t, observe(t, o, conn2, target)[0], "orders", 0); !p.CommittedAfter.Equal(first.ObservedAt) {
		t.Errorf("same cluster, other connection: CommittedAfter = %v, want %v", p.CommittedAfter, first.ObservedAt)
	}
}
