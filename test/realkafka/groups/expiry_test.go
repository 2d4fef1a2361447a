package groups

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/retentionguard/retention-guard/internal/kafka"
	"github.com/retentionguard/retention-guard/internal/kafka/kafkatest"
	"github.com/retentionguard/retention-guard/internal/proof"
)

// Offset expiry on the coordinator's own clocks: offsets.retention.minutes
// is 1 (Kafka's floor), the cleanup runs every second, nothing is driven by
// a hook. Each test reads __consumer_offsets itself (kmsg) to date what the
// broker did — the commit records and the tombstones the cleanup writes —
// and checks the product's observation and proof against it.

// retention is the shared brokers' offsets.retention.minutes.
const retention = time.Minute

// window is the recovery window of the policies here: within one minute
// of offsets retention, so that the clause turns on the clocks alone.
const window = 30 * time.Second

func policy(group string, topics ...string) proof.Policy {
	return proof.Policy{GroupID: group, Topics: topics, RecoveryWindow: window}
}

// waitExpired observes target until topic/partition has no committed
// offset and the broker's log holds the tombstone of its expiry; check
// runs on every observation before that (the offset still there).
func waitExpired(t *testing.T, e *env, o *kafka.Observer, target kafka.Target, topic string, p int32,
	check func(obs proof.Observation)) (proof.Observation, *offsetsRecord) {
	t.Helper()
	var (
		obs   proof.Observation
		grave *offsetsRecord
	)
	pollUntil(t, expiryWait, time.Second, fmt.Sprintf("the committed offset of %s on %s/%d expires", target.Group, topic, p), func() (bool, string) {
		obs = observeOne(t, o, e.conn(reader), target)
		if po := partition(t, obs, topic, p); po.Committed != proof.NoOffset {
			if check != nil {
				check(obs)
			}
			return false, fmt.Sprintf("committed %d", po.Committed)
		}
		grave = tombstone(readOffsetsLog(t, e, target.Group), topic, p)
		return grave != nil, "no tombstone in __consumer_offsets"
	})
	if po := partition(t, obs, topic, p); !po.LastCommit.IsZero() {
		t.Errorf("%s/%d expired, yet the observer still dates a commit at %v (the tombstone was not applied)", topic, p, po.LastCommit)
	}
	return obs, grave
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

// requireDeleted checks that the broker deleted the group (its metadata
// tombstone) and that every describe call, and the observer, answer it as
// unknown.
func requireDeleted(t *testing.T, e *env, o *kafka.Observer, target kafka.Target) {
	t.Helper()
	pollUntil(t, time.Minute, time.Second, "the group is deleted once its offsets expired", func() (bool, string) {
		recs := readOffsetsLog(t, e, target.Group)
		if g := lastGroupRecord(recs); g != nil && !g.Tombstone {
			return false, "its metadata record is not a tombstone"
		}
		st := describeAll(t, e, target.Group)
		return !st.found(), st.String()
	})
	obs := observeOne(t, o, e.conn(reader), target)
	if g := obs.Group; g.State != proof.GroupStateDead || g.Protocol != "" {
		t.Errorf("deleted group observed as %+v, want Dead with no protocol", g)
	}
}

// Seed 003 (Kafka 3.5.1): a batch consumer commits as a member of a
// classic group and leaves; its offsets expire offsets.retention.minutes
// after the group became Empty — counted from Empty, not from the last
// commit: an offset committed (an admin reset) while the group is Empty
// goes with the others. The product reads the Empty time exactly
// (GroupMetadataValue.currentStateTimestamp) and predicts the expiry the
// broker then carries out; the group is deleted once its offsets are gone.
// Where the brokers may convert the group to a consumer group (3.9 with
// KIP-848 on, 4.x: MigrationPossible) the proof also dates every commit and
// reports the LastCommit clock at the earlier of commit + 1m and Empty + 1m:
// never after the broker's real expiry.
func TestEmptyClassicGroupOffsetsExpireFromEmpty(t *testing.T) {
	t.Parallel()
	forEach(t, nil, func(t *testing.T, e *env) {
		const topic, group = "batch-orders", "batch-settle"
		e.createTopic(t, topic, 2)
		e.Produce(t, topic, 20)
		e.CommitAsMember(t, group, topic, map[int32]int64{0: 6, 1: 4})

		o := newObserver(t)
		target := kafka.Target{Group: group, Topics: []string{topic}, ReadOffsetsTopic: true}
		first := observeOne(t, o, e.conn(reader), target)
		g := first.Group
		if g.Protocol != proof.ProtocolClassic || g.ProtocolType != proof.ProtocolTypeConsumer || g.State != proof.GroupStateEmpty {
			t.Fatalf("group = %+v, want an Empty classic consumer group", g)
		}
		if !g.EmptySinceExact || g.EmptySince.IsZero() {
			t.Fatalf("EmptySince %v (exact %v): want the exact Empty time from __consumer_offsets (problem %q)", g.EmptySince, g.EmptySinceExact, first.OffsetsTopic.Problem)
		}
		meta := lastGroupRecord(readOffsetsLog(t, e, group))
		if meta == nil || meta.Tombstone || meta.Members != 0 || !g.EmptySince.Equal(time.UnixMilli(meta.CurrentStateTimestamp)) {
			t.Fatalf("EmptySince %v, but the broker's last group metadata record is %+v", g.EmptySince, meta)
		}

		// Half the retention later, an admin commits partition 1 again
		// (the same offset, as a reset to where it was would).
		time.Sleep(time.Until(g.EmptySince.Add(retention / 2)))
		e.Commit(t, group, topic, 1, 4)
		obs := observeOne(t, o, e.conn(reader), target)
		recommit := partition(t, obs, topic, 1).LastCommit
		if !recommit.After(g.EmptySince.Add(retention / 3)) {
			t.Fatalf("the commit made while Empty is dated %v, Empty since %v: not the new commit", recommit, g.EmptySince)
		}
		if !obs.Group.EmptySince.Equal(g.EmptySince) {
			t.Fatalf("a commit while Empty moved EmptySince from %v to %v", g.EmptySince, obs.Group.EmptySince)
		}
		r := proof.Evaluate(obs, policy(group, topic), obs.ObservedAt)
		x := r.OffsetExpiry
		emptyExpiry := g.EmptySince.Add(retention)
		if obs.Group.MigrationPossible != e.V.KIP848 {
			t.Fatalf("MigrationPossible = %v on %s, want %v (group.coordinator.rebalance.protocols includes consumer: %v)",
				obs.Group.MigrationPossible, e.V.Name, e.V.KIP848, e.V.KIP848)
		}
		if !e.V.KIP848 {
			// Classic groups only (seed 003's 3.5.1): the Empty clock, exactly.
			if x.Clock != proof.ExpiryClockGroupEmpty || !x.HasSoonest || !x.Exact || !x.Soonest.Equal(emptyExpiry) {
				t.Fatalf("offset expiry = %+v, want the GroupEmpty clock, exactly at %v (Empty + 1m)", x, emptyExpiry)
			}
		} else {
			// The brokers may convert the group to a consumer group (KIP-848
			// migration), after which its offsets expire per commit: the
			// proof dates every commit (the broker's own commitTimestamp)
			// and takes the earlier of commit + 1m and Empty + 1m, never
			// later than the Empty clock the broker runs now.
			recs := readOffsetsLog(t, e, group)
			want := emptyExpiry
			for _, p := range []int32{0, 1} {
				rec := lastCommitRecord(recs, topic, p)
				if rec == nil {
					t.Fatalf("no commit record of %s/%d in %s", topic, p, kafkatest.OffsetsTopic)
				}
				if po := partition(t, obs, topic, p); !po.LastCommit.Equal(rec.CommitTimestamp) {
					t.Fatalf("%s/%d last commit %v, want the broker's record's %v", topic, p, po.LastCommit, rec.CommitTimestamp)
				}
				want = minTime(want, rec.CommitTimestamp.Add(retention))
			}
			if x.Clock != proof.ExpiryClockLastCommit || !x.HasSoonest || !x.Exact || !x.Soonest.Equal(want) || x.Soonest.After(emptyExpiry) {
				t.Fatalf("offset expiry = %+v, want the LastCommit clock, exactly at %v (the earliest of each commit + 1m and Empty + 1m = %v)", x, want, emptyExpiry)
			}
		}

		for _, p := range []int32{0, 1} {
			_, grave := waitExpired(t, e, o, target, topic, p, nil)
			if grave.At.Before(x.Soonest) {
				t.Errorf("%s/%d expired at %v, before the %v the proof predicted", topic, p, grave.At, x.Soonest)
			}
			if p == 1 && !grave.At.Before(recommit.Add(retention)) {
				t.Errorf("%s/1 expired at %v, not before its last commit + 1m (%v): the clock was the commit's, not Empty's", topic, grave.At, recommit.Add(retention))
			}
		}
		requireDeleted(t, e, o, target)
	})
}

// A classic consumer group that is not Empty keeps its offsets, except
// (KIP-496) in a Stable group the offsets of topics no member subscribes
// to, which expire per commit. The subscriptions are read from the
// members' protocol metadata in DescribeGroups. Where migration to a
// consumer group is possible (3.9 with KIP-848 on, 4.x) the subscribed
// topic's commit is dated too and the soonest is the earliest commit + 1m,
// never after the unsubscribed topic's real expiry.
func TestStableClassicGroupExpiresOnlyUnsubscribedTopics(t *testing.T) {
	t.Parallel()
	forEach(t, nil, func(t *testing.T, e *env) {
		const orders, refunds, group = "kip496-orders", "kip496-refunds", "kip496-billing"
		e.createTopic(t, orders, 1)
		e.createTopic(t, refunds, 1)
		e.Produce(t, orders, 10)
		e.Produce(t, refunds, 10)
		member := e.JoinGroup(t, group, kafkatest.Classic, orders)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		// The member commits both topics, refunds without subscribing to it.
		for _, topic := range []string{orders, refunds} {
			if err := kafkatest.CommitSync(ctx, member, topic, map[int32]int64{0: 5}); err != nil {
				t.Fatal(err)
			}
		}

		// The broker's own answer: the member's subscription in its
		// protocol metadata.
		dg := req[*kmsg.DescribeGroupsResponse](t, e.Client(t), &kmsg.DescribeGroupsRequest{Groups: []string{group}})
		if len(dg.Groups) != 1 || len(dg.Groups[0].Members) != 1 {
			t.Fatalf("DescribeGroups = %+v, want one member", dg.Groups)
		}
		var meta kmsg.ConsumerMemberMetadata
		if err := meta.ReadFrom(dg.Groups[0].Members[0].ProtocolMetadata); err != nil || !slices.Equal(meta.Topics, []string{orders}) {
			t.Fatalf("member metadata %+v (%v), want a subscription to %s", meta, err, orders)
		}

		o := newObserver(t)
		target := kafka.Target{Group: group, Topics: []string{orders, refunds}, ReadOffsetsTopic: true}
		obs := observeOne(t, o, e.conn(reader), target)
		g := obs.Group
		if g.Protocol != proof.ProtocolClassic || g.ProtocolType != proof.ProtocolTypeConsumer || g.State != proof.GroupStateStable ||
			!g.SubscriptionKnown || !slices.Equal(g.Subscribed, []string{orders}) {
			t.Fatalf("group = %+v, want a Stable classic consumer group subscribed to %s", g, orders)
		}
		r := proof.Evaluate(obs, policy(group, orders, refunds), obs.ObservedAt)
		x := r.OffsetExpiry
		refundsCommit := partition(t, obs, refunds, 0).LastCommit
		ordersCommit := partition(t, obs, orders, 0).LastCommit
		recs := readOffsetsLog(t, e, group)
		if rec := lastCommitRecord(recs, refunds, 0); rec == nil || !refundsCommit.Equal(rec.CommitTimestamp) {
			t.Fatalf("%s/0 last commit %v, want the broker's record's (%+v)", refunds, refundsCommit, rec)
		}
		if obs.Group.MigrationPossible != e.V.KIP848 {
			t.Fatalf("MigrationPossible = %v on %s, want %v (group.coordinator.rebalance.protocols includes consumer: %v)",
				obs.Group.MigrationPossible, e.V.Name, e.V.KIP848, e.V.KIP848)
		}
		if !e.V.KIP848 {
			// Classic groups only: the subscribed topic is not dated; the
			// unsubscribed one expires per commit (KIP-496).
			if x.Clock != proof.ExpiryClockLastCommit || x.Topic != refunds || !x.Exact || refundsCommit.IsZero() || !x.Soonest.Equal(refundsCommit.Add(retention)) {
				t.Fatalf("offset expiry = %+v, want %s/0 per commit, exactly at %v + 1m", x, refunds, refundsCommit)
			}
		} else {
			// Migration possible: every commit is dated (the subscribed
			// topic's too, which would expire per commit once the group is
			// converted), and the soonest is the earliest commit + 1m:
			// never later than the unsubscribed topic's, which the broker
			// deletes per commit now.
			rec := lastCommitRecord(recs, orders, 0)
			if rec == nil || !ordersCommit.Equal(rec.CommitTimestamp) {
				t.Fatalf("%s/0 last commit %v, want the broker's record's (%+v)", orders, ordersCommit, rec)
			}
			want, wantTopic := refundsCommit.Add(retention), refunds
			if o := ordersCommit.Add(retention); o.Before(want) {
				want, wantTopic = o, orders
			}
			// Both commits in the same millisecond (a loaded machine): either
			// topic is the soonest.
			tie := ordersCommit.Equal(refundsCommit) && (x.Topic == orders || x.Topic == refunds)
			if x.Clock != proof.ExpiryClockLastCommit || (x.Topic != wantTopic && !tie) || !x.Exact || refundsCommit.IsZero() ||
				!x.Soonest.Equal(want) || x.Soonest.After(refundsCommit.Add(retention)) {
				t.Fatalf("offset expiry = %+v, want the LastCommit clock, exactly at %v (%s/0: the earlier commit + 1m)", x, want, wantTopic)
			}
		}

		stillThere := func(obs proof.Observation) {
			if po := partition(t, obs, orders, 0); po.Committed != 5 || obs.Group.State != proof.GroupStateStable {
				t.Fatalf("%s/0 committed %d, group %s: a Stable group's subscribed topic must keep its offset", orders, po.Committed, obs.Group.State)
			}
		}
		gone, grave := waitExpired(t, e, o, target, refunds, 0, stillThere)
		stillThere(gone)
		if grave.At.Before(x.Soonest) {
			t.Errorf("%s/0 expired at %v, before the %v the proof predicted", refunds, grave.At, x.Soonest)
		}
		// The subscribed topic's offset outlives its own commit's retention
		// by a margin of checks while the member stays.
		pollUntil(t, expiryWait, time.Second, "the subscribed offset outlives its commit by 15s", func() (bool, string) {
			stillThere(observeOne(t, o, e.conn(reader), target))
			return time.Now().After(ordersCommit.Add(retention + 15*time.Second)), "waiting"
		})
		if grave := tombstone(readOffsetsLog(t, e, group), orders, 0); grave != nil {
			t.Errorf("the broker wrote a tombstone for %s/0 at %v while the group was Stable", orders, grave.At)
		}
	})
}

// A simple group (commits without joining: Flink, Spark, assign()) expires
// each offset per commit; committing the same offset again writes a new
// record with a new commitTimestamp, which restarts that offset's clock.
// Once every offset is gone the group is deleted.
func TestSimpleGroupOffsetsExpirePerCommit(t *testing.T) {
	t.Parallel()
	forEach(t, nil, func(t *testing.T, e *env) {
		const topic, group = "simple-clicks", "flink-clicks"
		e.createTopic(t, topic, 2)
		e.Produce(t, topic, 20)
		e.CommitOffsets(t, group, topic, map[int32]int64{0: 4, 1: 2})

		o := newObserver(t)
		target := kafka.Target{Group: group, Topics: []string{topic}, ReadOffsetsTopic: true}
		obs := observeOne(t, o, e.conn(reader), target)
		if g := obs.Group; g.Protocol != proof.ProtocolClassic || g.ProtocolType != "" || g.State != proof.GroupStateEmpty {
			t.Fatalf("group = %+v, want a simple group (classic, no protocol type, Empty)", g)
		}
		first := partition(t, obs, topic, 1).LastCommit

		// Partition 1 is committed again, at the same offset.
		time.Sleep(time.Until(first.Add(retention / 2)))
		e.Commit(t, group, topic, 1, 2)
		recs := commitRecords(readOffsetsLog(t, e, group), topic, 1)
		if len(recs) != 2 || recs[1].Committed != 2 || !recs[1].CommitTimestamp.After(recs[0].CommitTimestamp) {
			t.Fatalf("commit records of %s/1 = %+v, want two, the second with a later commitTimestamp", topic, recs)
		}
		obs = observeOne(t, o, e.conn(reader), target)
		if got := partition(t, obs, topic, 1).LastCommit; !got.Equal(recs[1].CommitTimestamp) {
			t.Fatalf("%s/1 last commit %v, want the new record's %v", topic, got, recs[1].CommitTimestamp)
		}
		r := proof.Evaluate(obs, policy(group, topic), obs.ObservedAt)
		byPartition := map[int32]proof.PartitionResult{}
		for _, pr := range r.Partitions {
			byPartition[pr.Partition] = pr
		}
		for p, rec := range map[int32]offsetsRecord{0: commitRecords(readOffsetsLog(t, e, group), topic, 0)[0], 1: recs[1]} {
			if pr := byPartition[p]; !pr.HasOffsetExpiry || !pr.OffsetExpiryExact || !pr.OffsetExpiresAt.Equal(rec.CommitTimestamp.Add(retention)) {
				t.Fatalf("%s/%d expiry %+v, want exactly its last commit %v + 1m", topic, p, pr, rec.CommitTimestamp)
			}
		}

		gone, grave0 := waitExpired(t, e, o, target, topic, 0, nil)
		if po := partition(t, gone, topic, 1); po.Committed != 2 {
			t.Fatalf("%s/1 committed %d when %s/0 expired: the re-commit did not restart its clock", topic, po.Committed, topic)
		}
		_, grave1 := waitExpired(t, e, o, target, topic, 1, nil)
		for p, grave := range map[int32]*offsetsRecord{0: grave0, 1: grave1} {
			if want := byPartition[p].OffsetExpiresAt; grave.At.Before(want) {
				t.Errorf("%s/%d expired at %v, before the %v the proof predicted", topic, p, grave.At, want)
			}
		}
		requireDeleted(t, e, o, target)
	})
}

// A KIP-848 ("consumer" protocol) group expires each offset per commit for
// the topics no member subscribes to: while Stable, a topic a member
// committed without subscribing; once Empty, all of them — an idle
// partition committed long ago goes at the first cleanup after the last
// member leaves, not offsets.retention.minutes after.
func TestConsumerGroupOffsetsExpirePerCommit(t *testing.T) {
	t.Parallel()
	forEach(t, kip848, func(t *testing.T, e *env) {
		const jobs, other, group = "kip848-jobs", "kip848-other", "kip848-workers"
		e.createTopic(t, jobs, 2)
		e.createTopic(t, other, 1)
		e.Produce(t, jobs, 10)
		e.Produce(t, other, 10)
		member := joinConsumerGroup(t, e, group, jobs)
		member.commit(t, jobs, map[int32]int64{0: 3, 1: 3})
		member.commit(t, other, map[int32]int64{0: 3})

		o := newObserver(t)
		target := kafka.Target{Group: group, Topics: []string{jobs, other}, ReadOffsetsTopic: true}
		obs := observeOne(t, o, e.conn(reader), target)
		if g := obs.Group; g.Protocol != proof.ProtocolConsumer || g.State != proof.GroupStateStable {
			t.Fatalf("group = %+v, want a Stable KIP-848 group", g)
		}
		r := proof.Evaluate(obs, policy(group, jobs, other), obs.ObservedAt)
		if r.OffsetExpiry.Clock != proof.ExpiryClockLastCommit {
			t.Fatalf("offset expiry %+v, want the per-commit clock", r.OffsetExpiry)
		}
		predicted := map[string]time.Time{}
		for _, pr := range r.Partitions {
			po := partition(t, obs, pr.Topic, pr.Partition)
			if !pr.HasOffsetExpiry || !pr.OffsetExpiryExact || po.LastCommit.IsZero() || !pr.OffsetExpiresAt.Equal(po.LastCommit.Add(retention)) {
				t.Fatalf("%s/%d expiry %+v, want exactly its last commit %v + 1m", pr.Topic, pr.Partition, pr, po.LastCommit)
			}
			predicted[fmt.Sprintf("%s/%d", pr.Topic, pr.Partition)] = pr.OffsetExpiresAt
		}

		stable := func(obs proof.Observation) {
			for _, p := range []int32{0, 1} {
				if po := partition(t, obs, jobs, p); po.Committed != 3 {
					t.Fatalf("%s/%d committed %d while the group is %s: a subscribed topic keeps its offset", jobs, p, po.Committed, obs.Group.State)
				}
			}
		}
		_, grave := waitExpired(t, e, o, target, other, 0, stable)
		if grave.At.Before(predicted[other+"/0"]) {
			t.Errorf("%s/0 expired at %v, before the %v the proof predicted", other, grave.At, predicted[other+"/0"])
		}
		// The subscribed topic is kept while the member stays (its
		// commit is as old as the other topic's).
		stable(observeOne(t, o, e.conn(reader), target))

		member.leave(t) // the group is Empty, its commits over a minute old
		left := time.Now()
		for _, p := range []int32{0, 1} {
			_, grave := waitExpired(t, e, o, target, jobs, p, nil)
			if want := predicted[fmt.Sprintf("%s/%d", jobs, p)]; grave.At.Before(want) {
				t.Errorf("%s/%d expired at %v, before the %v the proof predicted", jobs, p, grave.At, want)
			}
			if !grave.At.Before(left.Add(retention)) {
				t.Errorf("%s/%d expired at %v, a minute after the group became Empty (%v): not per commit", jobs, p, grave.At, left)
			}
		}
		requireDeleted(t, e, o, target)
	})
}

// Streams groups (KIP-1071; GA in 4.2): a StreamsGroupHeartbeat creates
// one, no kafka-streams needed. Their offsets expire per commit; once Empty
// no topic is subscribed.
func TestStreamsGroupOffsetsExpirePerCommit(t *testing.T) {
	t.Parallel()
	forEach(t, streamsLine, func(t *testing.T, e *env) {
		const topic, group = "streams-orders", "orders-app"
		e.createTopic(t, topic, 1)
		e.Produce(t, topic, 10)
		m := joinStreamsGroup(t, e, group, topic)
		m.commit(t, topic, 0, 7)
		m.leave(t)

		o := newObserver(t)
		target := kafka.Target{Group: group, Topics: []string{topic}, ReadOffsetsTopic: true}
		obs := observeOne(t, o, e.conn(reader), target)
		if g := obs.Group; g.Protocol != proof.ProtocolStreams || g.State != proof.GroupStateEmpty {
			t.Fatalf("group = %+v, want an Empty streams group", g)
		}
		r := proof.Evaluate(obs, policy(group, topic), obs.ObservedAt)
		po := partition(t, obs, topic, 0)
		x := r.OffsetExpiry
		if x.Clock != proof.ExpiryClockLastCommit || !x.Exact || po.LastCommit.IsZero() || !x.Soonest.Equal(po.LastCommit.Add(retention)) {
			t.Fatalf("offset expiry %+v, want exactly the last commit %v + 1m", x, po.LastCommit)
		}
		_, grave := waitExpired(t, e, o, target, topic, 0, nil)
		if grave.At.Before(x.Soonest) {
			t.Errorf("%s/0 expired at %v, before the %v the proof predicted", topic, grave.At, x.Soonest)
		}
		requireDeleted(t, e, o, target)
	})
}

// describeAnswer is what the three describe calls say of a group, from the
// broker (raw kmsg, as the admin).
type describeAnswer struct {
	classicCode int16
	classic     string // state; protocol type after a slash
	consumer    int16  // ConsumerGroupDescribe error code; -2: not served
	consumerSt  string
	streams     int16 // StreamsGroupDescribe error code; -2: not served
	streamsSt   string
}

func (d describeAnswer) found() bool {
	return d.classicCode == 0 && d.classic != "" && !strings.HasPrefix(d.classic, "Dead") ||
		d.consumer == 0 || d.streams == 0
}

func (d describeAnswer) String() string {
	name := func(code int16) string {
		switch code {
		case 0:
			return "ok"
		case -2:
			return "not served"
		}
		return kerr.ErrorForCode(code).Error()
	}
	return fmt.Sprintf("DescribeGroups %s %q; ConsumerGroupDescribe %s %q; StreamsGroupDescribe %s %q",
		name(d.classicCode), d.classic, name(d.consumer), d.consumerSt, name(d.streams), d.streamsSt)
}

func describeAll(t *testing.T, e *env, group string) describeAnswer {
	t.Helper()
	cl := e.Client(t)
	var d describeAnswer
	dg := req[*kmsg.DescribeGroupsResponse](t, cl, &kmsg.DescribeGroupsRequest{Groups: []string{group}})
	if len(dg.Groups) != 1 {
		t.Fatalf("DescribeGroups answered %d groups", len(dg.Groups))
	}
	d.classicCode, d.classic = dg.Groups[0].ErrorCode, dg.Groups[0].State+"/"+dg.Groups[0].ProtocolType
	d.consumer, d.streams = -2, -2
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if resp, err := cl.Request(ctx, &kmsg.ConsumerGroupDescribeRequest{Groups: []string{group}}); err == nil {
		g := resp.(*kmsg.ConsumerGroupDescribeResponse).Groups[0]
		d.consumer, d.consumerSt = g.ErrorCode, g.State
	} else if !tooOld(err) {
		t.Fatalf("ConsumerGroupDescribe: %v", err)
	}
	if resp, err := cl.Request(ctx, &kmsg.StreamsGroupDescribeRequest{Groups: []string{group}}); err == nil {
		g := resp.(*kmsg.StreamsGroupDescribeResponse).Groups[0]
		d.streams, d.streamsSt = g.ErrorCode, g.State
	} else if !tooOld(err) {
		t.Fatalf("StreamsGroupDescribe: %v", err)
	}
	return d
}

// tooOld is kgo's refusal to send a request the broker does not advertise.
func tooOld(err error) bool {
	return strings.Contains(err.Error(), "broker is too old")
}
