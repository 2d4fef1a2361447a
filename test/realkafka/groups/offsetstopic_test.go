package groups

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/retentionguard/retention-guard/internal/kafka"
	"github.com/retentionguard/retention-guard/internal/kafka/kafkatest"
	"github.com/retentionguard/retention-guard/internal/proof"
)

// A group's records go to partition Utils.abs(groupId.hashCode()) %
// offsets.topic.num.partitions (10 here). The expected partitions are
// Java's hash codes worked out apart; "polygenelubricants" hashes to
// Integer.MIN_VALUE, which Utils.abs maps to 0 (a plain abs stays
// negative). The observer finds exact commit times only where it computes
// the broker's partition; a principal without Read on the topic gets
// bounds and the missing ACL named.
func TestOffsetsTopicPartitionForAndReadACL(t *testing.T) {
	t.Parallel()
	forEach(t, nil, func(t *testing.T, e *env) {
		const topic = "partition-for"
		e.createTopic(t, topic, 1)
		e.Produce(t, topic, 5)
		want := map[string]int32{
			"hello": 2, "polygenelubricants": 0, "ledger-settle-consumer": 0, "fanout-outbox": 7, "订单-消费者": 8,
		}
		var targets []kafka.Target
		for g := range want {
			e.Commit(t, g, topic, 0, 3)
			targets = append(targets, kafka.Target{Group: g, Topics: []string{topic}, ReadOffsetsTopic: true})
		}
		commitAt := map[string]time.Time{}
		for g, p := range want {
			recs := readOffsetsLog(t, e, g)
			if len(recs) == 0 {
				t.Fatalf("no record of group %s in %s", g, kafkatest.OffsetsTopic)
			}
			for _, r := range recs {
				if r.Partition != p {
					t.Errorf("group %s: a record in partition %d, want %d (Java's partitionFor)", g, r.Partition, p)
				}
			}
			commitAt[g] = lastCommitRecord(recs, topic, 0).CommitTimestamp
		}

		o := newObserver(t)
		for _, obs := range observe(t, o, e.conn(reader), targets...) {
			requireNoFailures(t, obs)
			if obs.OffsetsTopic != (proof.OffsetsTopicRead{Requested: true}) {
				t.Errorf("%s: offsets topic read %+v, want read", obs.Group.ID, obs.OffsetsTopic)
			}
			if po := partition(t, obs, topic, 0); !po.LastCommit.Equal(commitAt[obs.Group.ID]) {
				t.Errorf("%s: last commit %v, want the broker's record's %v", obs.Group.ID, po.LastCommit, commitAt[obs.Group.ID])
			}
		}

		// Without Read on __consumer_offsets: the broker refuses the
		// Fetch, and the observer says which ACL is missing.
		cl := e.userClient(t, noOffsetsTopic)
		fr := kmsg.NewPtrFetchRequest()
		fr.MaxWaitMillis, fr.SessionEpoch = 0, -1
		ft := kmsg.NewFetchRequestTopic()
		ft.Topic, ft.TopicID = kafkatest.OffsetsTopic, offsetsTopicID(t, e)
		fp := kmsg.NewFetchRequestTopicPartition()
		fp.Partition, fp.PartitionMaxBytes = 0, 1<<20
		ft.Partitions = []kmsg.FetchRequestTopicPartition{fp}
		fr.Topics = []kmsg.FetchRequestTopic{ft}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		kresp, err := cl.Broker(int(e.B.Nodes[0].ID)).Request(ctx, fr)
		if err != nil {
			t.Fatal(err)
		}
		resp := kresp.(*kmsg.FetchResponse)
		code := resp.ErrorCode
		for _, rt := range resp.Topics {
			for _, rp := range rt.Partitions {
				code = max(code, rp.ErrorCode)
			}
		}
		if code != kerr.TopicAuthorizationFailed.Code {
			t.Errorf("Fetch of %s without Read: %v, want TOPIC_AUTHORIZATION_FAILED", kafkatest.OffsetsTopic, kerr.ErrorForCode(code))
		}
		denied := observeOne(t, newObserver(t), e.conn(noOffsetsTopic), targets[0])
		if r := denied.OffsetsTopic; r.Reason != proof.OffsetsTopicDenied || !strings.Contains(r.Problem, "denied") ||
			!strings.Contains(r.Problem, "Read on topic __consumer_offsets") {
			t.Errorf("reason %q, problem = %q, want Denied and the missing ACL named", r.Reason, r.Problem)
		}
		if po := partition(t, denied, topic, 0); !po.LastCommit.IsZero() || po.PrecedingTimestamp.IsZero() {
			t.Errorf("denied: %+v, want no exact time and the bound from the record before the offset", po)
		}
	})
}

func offsetsTopicID(t *testing.T, e *env) [16]byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	tds, err := e.Admin(t).ListTopics(ctx, kafkatest.OffsetsTopic)
	if err != nil {
		t.Fatal(err)
	}
	return tds[kafkatest.OffsetsTopic].ID
}

// The records the coordinator writes, per line, and what the observer
// makes of them: OffsetCommitValue of the version the line writes with
// commitTimestamp (read exactly); value v1 with expireTimestamp for an
// OffsetCommit v2 retention_time, which then expires the offset at that
// time, whatever offsets.retention.minutes says (the observer reports both:
// LastCommit the commitTimestamp, ExpireAt the expireTimestamp); classic group metadata
// with currentStateTimestamp; a tombstone when an offset is deleted.
func TestOffsetsTopicRecordFormats(t *testing.T) {
	t.Parallel()
	forEach(t, nil, func(t *testing.T, e *env) {
		const topic = "formats"
		e.createTopic(t, topic, 2)
		e.Produce(t, topic, 10)
		wantCommit, wantMeta := int16(3), int16(3)
		if e.V.Dist.AtLeast(4, 0) {
			wantCommit, wantMeta = offsetCommitValueVersion4x, groupMetadataValueVersion4x
		}

		// A simple group's commit, and a classic group's metadata.
		e.CommitOffsets(t, "formats-simple", topic, map[int32]int64{0: 2, 1: 3})
		e.CommitAsMember(t, "formats-member", topic, map[int32]int64{0: 4})
		simple := readOffsetsLog(t, e, "formats-simple")
		for _, p := range []int32{0, 1} {
			if r := lastCommitRecord(simple, topic, p); r == nil || r.ValueVersion != wantCommit || r.ExpireTimestamp != -1 && r.ValueVersion == 1 {
				t.Errorf("commit record of %s/%d = %+v, want OffsetCommitValue v%d", topic, p, r, wantCommit)
			}
		}
		meta := lastGroupRecord(readOffsetsLog(t, e, "formats-member"))
		if meta == nil || meta.Tombstone || meta.ValueVersion != wantMeta || meta.ProtocolType != proof.ProtocolTypeConsumer || meta.CurrentStateTimestamp <= 0 {
			t.Errorf("group metadata record = %+v, want GroupMetadataValue v%d with protocol type consumer and currentStateTimestamp", meta, wantMeta)
		}

		// OffsetDelete: a tombstone, which the observer applies.
		o := newObserver(t)
		target := kafka.Target{Group: "formats-simple", Topics: []string{topic}, ReadOffsetsTopic: true}
		before := observeOne(t, o, e.conn(reader), target)
		if po := partition(t, before, topic, 1); !po.LastCommit.Equal(lastCommitRecord(simple, topic, 1).CommitTimestamp) {
			t.Fatalf("%s/1 last commit %v, want the record's %v", topic, po.LastCommit, lastCommitRecord(simple, topic, 1).CommitTimestamp)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		del, err := e.Admin(t).DeleteOffsets(ctx, "formats-simple", map[string]map[int32]struct{}{topic: {1: {}}})
		if err == nil {
			err = del.Error()
		}
		if err != nil {
			t.Fatalf("OffsetDelete: %v", err)
		}
		if r := tombstone(readOffsetsLog(t, e, "formats-simple"), topic, 1); r == nil {
			t.Fatalf("no tombstone for %s/1 after OffsetDelete", topic)
		}
		after := observeOne(t, o, e.conn(reader), target)
		if po := partition(t, after, topic, 1); po.Committed != proof.NoOffset || !po.LastCommit.IsZero() {
			t.Errorf("%s/1 after its tombstone: %+v, want no offset and no commit time", topic, po)
		}
		if po := partition(t, after, topic, 0); po.Committed != 2 || po.LastCommit.IsZero() {
			t.Errorf("%s/0: %+v, want committed 2, dated exactly", topic, po)
		}

		// OffsetCommit v2 with retention_time: value v1, expireTimestamp.
		const retentionTime = 5 * time.Second
		v2 := e.Client(t, kgo.MaxVersions(pinned(kmsg.OffsetCommit, 2)))
		oc := kmsg.NewPtrOffsetCommitRequest()
		oc.Group, oc.Generation, oc.RetentionTimeMillis = "formats-retention", -1, retentionTime.Milliseconds()
		ot := kmsg.NewOffsetCommitRequestTopic()
		ot.Topic = topic
		op := kmsg.NewOffsetCommitRequestTopicPartition()
		op.Partition, op.Offset = 0, 5
		ot.Partitions = []kmsg.OffsetCommitRequestTopicPartition{op}
		oc.Topics = []kmsg.OffsetCommitRequestTopic{ot}
		ocr := req[*kmsg.OffsetCommitResponse](t, v2, oc)
		if c := ocr.Topics[0].Partitions[0].ErrorCode; c != 0 {
			t.Fatalf("OffsetCommit v2: %v", kerr.ErrorForCode(c))
		}
		rec := lastCommitRecord(readOffsetsLog(t, e, "formats-retention"), topic, 0)
		if rec == nil || rec.ValueVersion != 1 || rec.ExpireTimestamp != rec.CommitTimestamp.Add(retentionTime).UnixMilli() {
			t.Fatalf("record of an OffsetCommit v2 with retention_time = %+v, want value v1 with expireTimestamp = commit + 5s", rec)
		}
		rtarget := kafka.Target{Group: "formats-retention", Topics: []string{topic}, ReadOffsetsTopic: true}
		obs := observeOne(t, o, e.conn(reader), rtarget)
		expireAt := time.UnixMilli(rec.ExpireTimestamp)
		if po := partition(t, obs, topic, 0); po.Committed != 5 || !po.LastCommit.Equal(rec.CommitTimestamp) || !po.ExpireAt.Equal(expireAt) {
			t.Errorf("%s/0: committed %d, last commit %v, expire at %v; want 5, the record's commitTimestamp %v and its expireTimestamp %v", topic, po.Committed, po.LastCommit, po.ExpireAt, rec.CommitTimestamp, expireAt)
		}
		_, grave := waitExpired(t, e, o, rtarget, topic, 0, nil)
		if grave.At.Before(expireAt) || !grave.At.Before(rec.CommitTimestamp.Add(retention)) {
			t.Errorf("expired at %v, want at expireTimestamp %v, before offsets.retention.minutes after the commit", grave.At, expireAt)
		}
	})
}

// The value versions the 4.x line writes (seen on 4.4.0; see
// docs/kafka-semantics.md).
const (
	offsetCommitValueVersion4x  = 4
	groupMetadataValueVersion4x = 3
)

// pinned caps one request's version (everything else as the client's).
func pinned(key kmsg.Key, max int16) *kversion.Versions {
	v := kversion.Stable()
	v.SetMaxKeyVersion(int16(key), max)
	return v
}
