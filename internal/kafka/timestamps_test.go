package kafka

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/retentionguard/retention-guard/internal/kafka/kafkatest"
	"github.com/retentionguard/retention-guard/internal/proof"
)

// rawBatch produces records 0..9 in one batch with known timestamps and
// returns the batch exactly as the broker serves it.
func rawBatch(t *testing.T, compression kgo.CompressionCodec) ([]byte, func(int) time.Time) {
	t.Helper()
	c := kafkatest.NewCluster(t)
	c.CreateTopic(t, "t", 1, nil)
	base := time.Now().Add(-time.Hour).Truncate(time.Millisecond)
	at := func(i int) time.Time { return base.Add(time.Duration(i) * time.Second) }
	var recs []*kgo.Record
	for i := range 10 {
		recs = append(recs, &kgo.Record{Topic: "t", Timestamp: at(i), Value: []byte("a value of a few bytes")})
	}
	cl := c.Client(t, kgo.ProducerBatchCompression(compression), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err := cl.ProduceSync(t.Context(), recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	req := kmsg.NewPtrFetchRequest()
	req.MaxWaitMillis, req.MinBytes, req.SessionEpoch = 0, 0, -1
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic = "t"
	rt.TopicID = topicID(t, c, "t")
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.PartitionMaxBytes = 1 << 20
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(t.Context(), cl)
	if err != nil {
		t.Fatal(err)
	}
	raw := resp.Topics[0].Partitions[0].RecordBatches
	if len(raw) <= batchHeaderSize {
		t.Fatalf("fetched %d bytes", len(raw))
	}
	return raw, at
}

// around decodes raw as fetched at fetchAt and returns the timestamp of the
// record at committed and the commit's lower bound from the records before.
func around(raw []byte, fetchAt, committed int64) (at, before time.Time) {
	return decodeFetched(&kmsg.FetchResponseTopicPartition{RecordBatches: raw}, "t", fetchAt).around(committed)
}

func timestampOf(raw []byte, offset int64) (time.Time, bool) {
	at, _ := around(raw, offset, offset)
	return at, !at.IsZero()
}

// Committing offset n follows the write of record n−1: fetched from n−1,
// a whole batch dates the commit by n−1's exact timestamp and still gives
// the record at n for headroom.
func TestCommitDatedByTheRecordBefore(t *testing.T) {
	t.Parallel()
	raw, stamp := rawBatch(t, kgo.ZstdCompression())
	at, before := around(raw, 4, 5)
	if !at.Equal(stamp(5)) || !before.Equal(stamp(4)) {
		t.Errorf("around 5 fetched from 4: at %v, before %v; want %v, %v", at, before, stamp(5), stamp(4))
	}
	// Caught up: nothing at the committed offset, the last record dates it.
	at, before = around(raw, 9, 10)
	if !at.IsZero() || !before.Equal(stamp(9)) {
		t.Errorf("around 10 fetched from 9: at %v, before %v; want none, %v", at, before, stamp(9))
	}
	// A cut batch that starts below the committed offset: its first
	// timestamp belongs to a record written before the commit.
	cut := raw[:batchHeaderSize+5]
	if _, before := around(cut, 5, 6); !before.Equal(stamp(0)) {
		t.Errorf("cut batch: before %v, want the batch's first timestamp %v", before, stamp(0))
	}
	logAppend := append([]byte(nil), cut...)
	binary.BigEndian.PutUint16(logAppend[21:23], binary.BigEndian.Uint16(logAppend[21:23])|0x08)
	if _, before := around(logAppend, 5, 6); !before.Equal(stamp(9)) {
		t.Errorf("LogAppendTime cut batch: before %v, want the broker's stamp %v", before, stamp(9))
	}
}

// A whole batch, compressed or not, gives each record's exact timestamp.
func TestRecordTimestampWholeBatch(t *testing.T) {
	t.Parallel()
	for _, codec := range []kgo.CompressionCodec{kgo.NoCompression(), kgo.GzipCompression(), kgo.ZstdCompression()} {
		raw, at := rawBatch(t, codec)
		for _, offset := range []int64{0, 4, 9} {
			got, ok := timestampOf(raw, offset)
			if !ok || !got.Equal(at(int(offset))) {
				t.Errorf("offset %d: %v %v, want %v", offset, got, ok, at(int(offset)))
			}
		}
		if _, ok := timestampOf(raw, 10); ok {
			t.Errorf("offset past the batch has a timestamp")
		}
	}
}

// Real brokers cut every partition but a response's first at the byte
// limit: from the 61-byte header alone, the batch's first timestamp is the
// timestamp at its first offset, and a lower bound inside it; a
// broker-stamped batch (LogAppendTime) has one timestamp for all.
func TestRecordTimestampCutBatch(t *testing.T) {
	t.Parallel()
	raw, at := rawBatch(t, kgo.GzipCompression())
	cut := raw[:batchHeaderSize+5]

	if got, ok := timestampOf(cut, 0); !ok || !got.Equal(at(0)) {
		t.Errorf("first offset: %v %v, want %v", got, ok, at(0))
	}
	if got, ok := timestampOf(cut, 6); !ok || !got.Equal(at(0)) {
		t.Errorf("inside the batch: %v %v, want the batch's first timestamp %v", got, ok, at(0))
	}
	if _, ok := timestampOf(cut, 10); ok {
		t.Errorf("an offset after the cut batch has a timestamp")
	}
	if _, ok := timestampOf(raw[:40], 0); ok {
		t.Errorf("less than a header has a timestamp")
	}

	logAppend := append([]byte(nil), cut...)
	attrs := binary.BigEndian.Uint16(logAppend[21:23])
	binary.BigEndian.PutUint16(logAppend[21:23], attrs|0x08)
	if got, ok := timestampOf(logAppend, 6); !ok || !got.Equal(at(9)) {
		t.Errorf("LogAppendTime: %v %v, want the max timestamp %v", got, ok, at(9))
	}

	control := append([]byte(nil), cut...)
	binary.BigEndian.PutUint16(control[21:23], attrs|0x20)
	if _, ok := timestampOf(control, 0); ok {
		t.Errorf("a control batch has a record timestamp")
	}

	// A cleaned batch of a compacted topic with tombstones (seed 000's
	// compacted outbox): its base timestamp field is the delete horizon,
	// a time after the cleaning (KIP-534), not a record's. Read as one,
	// it would push the headroom and the commit's date into the future.
	horizon := append([]byte(nil), cut...)
	binary.BigEndian.PutUint16(horizon[21:23], attrs|0x40)
	binary.BigEndian.PutUint64(horizon[27:35], uint64(at(0).Add(24*time.Hour).UnixMilli()))
	if got, ok := timestampOf(horizon, 0); ok {
		t.Errorf("a delete horizon read as a record timestamp: %v", got)
	}
	if _, before := around(horizon, 5, 6); !before.IsZero() {
		t.Errorf("a delete horizon dates a commit: %v", before)
	}
	binary.BigEndian.PutUint16(horizon[21:23], attrs|0x40|0x08)
	if got, ok := timestampOf(horizon, 6); !ok || !got.Equal(at(9)) {
		t.Errorf("LogAppendTime with a delete horizon: %v %v, want the max timestamp %v", got, ok, at(9))
	}
}

// The manager's batched pass (seed 003's clock for simple groups: each
// offset expires offsets.retention.minutes after its own commit): many
// topics on one leader, each written in batches far larger than the few
// bytes asked per partition, one simple group per topic that committed
// just now, lagging (offset 41 of 1,400) or caught up. A broker sends the
// first batch of a response whole and skips a later partition whose batch
// does not fit (kfake always; Apache Kafka from Fetch v3, see the top of
// timestamps.go): each skipped partition is asked again, first in its own
// request, so every commit is dated and every group Proven, as `check`
// proves each alone.
func TestObserveDatesCommitsInLargeBatchesOfManyTopics(t *testing.T) {
	t.Parallel()
	c := kafkatest.NewCluster(t)
	const topics, records = 8, 1400
	// A lingering producer: each topic's records form one batch.
	producer := c.Client(t, kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerLinger(200*time.Millisecond))
	var recs []*kgo.Record
	for i := range topics {
		topic := fmt.Sprintf("clicks-%d", i)
		c.CreateTopic(t, topic, 1, nil)
		for j := range records {
			recs = append(recs, &kgo.Record{Topic: topic, Value: fmt.Appendf(nil, "click %d of a session", j)})
		}
	}
	if err := producer.ProduceSync(t.Context(), recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	var targets []Target
	for i := range topics {
		topic := fmt.Sprintf("clicks-%d", i)
		committed := int64(41)
		if i%2 == 1 {
			committed = records // caught up
		}
		c.Commit(t, "flink-"+topic, topic, 0, committed)
		targets = append(targets, Target{Group: "flink-" + topic, Topics: []string{topic}})
	}
	o, sink := newTestObserver(t)
	obs := observe(t, o, Connection{BootstrapServers: c.Addrs}, targets...)
	now := time.Now()
	for i, ob := range obs {
		requireNoFailures(t, ob)
		po := partition(t, ob, targets[i].Topics[0], 0)
		if po.PrecedingTimestamp.IsZero() || now.Sub(po.PrecedingTimestamp) > time.Hour {
			t.Errorf("%s committed %d: the record before it dates the commit at %v, want a moment ago", ob.Group.ID, po.Committed, po.PrecedingTimestamp)
		}
		res := proof.Evaluate(ob, proof.Policy{GroupID: ob.Group.ID, Topics: targets[i].Topics, RecoveryWindow: 72 * time.Hour}, now)
		if res.Verdict != proof.Proven {
			t.Errorf("%s committed %d just now: %s %v, want Proven", ob.Group.ID, po.Committed, res.Verdict, res.Violations)
		}
	}
	if t.Failed() {
		t.Logf("observer log:\n%s", sink)
	}
}

// Issue 33's false alarm, seed 000 (an Outbox written by an exactly-once
// writer): a caught-up group commits one past the transaction's marker,
// so the Fetch that dates the commit (at n−1, the marker) answers a
// control batch, whose record the decoder drops. The marker's own stamp,
// the partition leader's write time, dates the commit; a cut control
// batch's header says it too. No data record is read from it.
func TestCommitAfterAMarkerIsDatedByIt(t *testing.T) {
	t.Parallel()
	c := kafkatest.NewCluster(t)
	c.CreateTopic(t, "t", 1, nil)
	cl := c.Client(t, kgo.TransactionalID("writer"), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err := cl.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if err := cl.ProduceSync(t.Context(), &kgo.Record{Topic: "t", Value: []byte("o")}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	before := time.Now().Truncate(time.Millisecond)
	if err := cl.EndTransaction(t.Context(), kgo.TryCommit); err != nil {
		t.Fatal(err)
	}
	after := time.Now()

	req := kmsg.NewPtrFetchRequest()
	req.MaxWaitMillis, req.MinBytes, req.SessionEpoch = 0, 0, -1
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic, rt.TopicID = "t", topicID(t, c, "t")
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.FetchOffset, rp.PartitionMaxBytes = 3, 1<<20 // n−1 for a commit of 4
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(t.Context(), cl)
	if err != nil {
		t.Fatal(err)
	}
	fp := &resp.Topics[0].Partitions[0]
	fr := decodeFetched(fp, "t", 3)
	at, rec := fr.around(4)
	marker := fr.markerBefore(4)
	if !at.IsZero() || !rec.IsZero() {
		t.Errorf("a control batch read as records: at %v, before %v", at, rec)
	}
	if marker.Before(before) || marker.After(after) {
		t.Fatalf("marker before offset 4 stamped %v, want the leader's time while EndTxn ran (%v to %v)", marker, before, after)
	}
	if m := fr.markerBefore(3); !m.IsZero() {
		t.Errorf("a marker at offset 3 dates a commit of 3: %v", m)
	}

	// The header of a cut control batch (the partition behind others in
	// a response) says the same stamp.
	cut := decodeFetched(&kmsg.FetchResponseTopicPartition{RecordBatches: fp.RecordBatches[:batchHeaderSize+5]}, "t", 3)
	if m := cut.markerBefore(4); !m.Equal(marker) {
		t.Errorf("cut control batch: marker %v, want %v", m, marker)
	}
}

// Issue 32 item 5, seed 000's compacted variant: what one fetch at a
// lagging committed offset shows of the tombstones after it (proof's
// TombstoneScan). kfake never stamps a delete horizon; the second read
// stamps one on the first batch as Kafka's cleaner does (attribute bit 6,
// the horizon in the base timestamp field, the CRC recomputed: see
// test/realkafka/proof for a broker's own).
func TestTombstoneScanReadsHorizons(t *testing.T) {
	c := kafkatest.NewCluster(t)
	c.CreateTopic(t, "outbox-state", 1, map[string]string{"cleanup.policy": "compact"})
	cl := c.Client(t, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	// Offsets 0 (open) and 1 (the delete) in one batch, 2 in another.
	if err := cl.ProduceSync(t.Context(), &kgo.Record{Topic: "outbox-state", Key: []byte("acct-1"), Value: []byte("open")},
		&kgo.Record{Topic: "outbox-state", Key: []byte("acct-1")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	if err := cl.ProduceSync(t.Context(), &kgo.Record{Topic: "outbox-state", Key: []byte("acct-2"), Value: []byte("open")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	req := kmsg.NewPtrFetchRequest()
	req.MaxWaitMillis, req.MinBytes, req.SessionEpoch = 0, 0, -1
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic, rt.TopicID = "outbox-state", topicID(t, c, "outbox-state")
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.PartitionMaxBytes = 1 << 20
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(t.Context(), cl)
	if err != nil {
		t.Fatal(err)
	}
	fp := resp.Topics[0].Partitions[0]
	read := time.Now()

	fr := decodeFetched(&fp, "outbox-state", 0)
	fr.fetchedAt = read
	sc := fr.tombstoneScan(0, time.Hour)
	if sc == nil || sc.Through != 3 || !sc.ReachesEnd || len(sc.Found) != 1 || sc.Found[0].Offset != 1 || !sc.Found[0].DeleteHorizon.IsZero() ||
		!sc.FetchedAt.Equal(read) || sc.CleaningAllowance != time.Hour {
		t.Fatalf("scan %+v: want through 3 to the high watermark, the one tombstone at 1 without a horizon, read at %v", sc, read)
	}
	if sc := fr.tombstoneScan(2, time.Hour); sc == nil || len(sc.Found) != 0 || !sc.ReachesEnd {
		t.Errorf("scan from 2 %+v: want no tombstone, to log end", sc)
	}

	// Stamped by a cleaning: the horizon is read from the batch, the
	// record's own timestamp stays its own.
	horizon := read.Add(3 * 24 * time.Hour).Truncate(time.Millisecond)
	stamped := slices.Clone(fp.RecordBatches)
	first := int(binary.BigEndian.Uint32(stamped[8:12])) + 12
	attrs := binary.BigEndian.Uint16(stamped[21:23]) | 0x40
	binary.BigEndian.PutUint16(stamped[21:23], attrs)
	binary.BigEndian.PutUint64(stamped[27:35], uint64(horizon.UnixMilli()))
	binary.BigEndian.PutUint32(stamped[17:21], crc32.Checksum(stamped[21:first], crc32.MakeTable(crc32.Castagnoli)))
	fp.RecordBatches = stamped
	fr = decodeFetched(&fp, "outbox-state", 0)
	fr.fetchedAt = read
	sc = fr.tombstoneScan(1, time.Hour)
	if sc == nil || len(sc.Found) != 1 || !sc.Found[0].DeleteHorizon.Equal(horizon) {
		t.Fatalf("stamped scan %+v: want the tombstone at 1 with horizon %v", sc, horizon)
	}

	// Cut after the first batch (a byte budget): not to log end, the rest
	// dated by the cut batch's header.
	fp.RecordBatches = stamped[:first+batchHeaderSize+3]
	fr = decodeFetched(&fp, "outbox-state", 0)
	fr.fetchedAt = read
	if sc := fr.tombstoneScan(1, time.Hour); sc == nil || sc.ReachesEnd || sc.Through != 2 || sc.NextTimestamp.IsZero() {
		t.Errorf("cut scan %+v: want through 2, not to log end, the next batch's first timestamp", sc)
	}
}
