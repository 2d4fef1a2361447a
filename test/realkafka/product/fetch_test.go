package product

import (
	"context"
	"encoding/binary"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/retentionguard/retention-guard/internal/kafka/apachekafka"
)

// What a broker answers to the observer's timestamp Fetch (a few bytes per
// partition, docs/kafka-semantics.md "Records"): the first partition that
// has data comes with its batch whole however large; a later partition
// whose batch at the fetch offset is larger than its byte limit comes with
// nothing at all (Fetch v3+: ReplicaManager.readFromLog replaces an
// incomplete first entry by an empty answer); a later partition whose
// first batch fits comes whole and the batch after it cut at the limit.
// kfake answers the first two alike and never cuts the third, sending only
// whole batches. The observer re-asks what was skipped (seed 003's per-commit
// clock needs the record before each committed offset).
func TestFetchAnswersLargeBatchesWholeOrNotAtAll(t *testing.T) {
	eachLine(t, func(t *testing.T, b *apachekafka.Broker) {
		b.CreateTopic(t, "big", 3, nil)
		b.CreateTopic(t, "mixed", 1, nil)
		var recs []*kgo.Record
		for p := range int32(3) {
			recs = append(recs, records("big", p, 1400)...)
		}
		recs = append(recs, records("mixed", 0, 3)...)
		produceBatched(t, b, recs...)
		produceBatched(t, b, records("mixed", 0, 1400)...) // offsets 3..1402, one batch

		const limit = 1024
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		tds, err := b.Admin(t).ListTopics(ctx, "big", "mixed")
		if err != nil {
			t.Fatal(err)
		}
		req := kmsg.NewPtrFetchRequest()
		req.MaxWaitMillis, req.MinBytes, req.SessionEpoch = 0, 0, -1
		req.MaxBytes = 4*limit + 1<<20
		for _, tp := range []struct {
			topic string
			parts []int32
			at    int64
		}{{"big", []int32{0, 1, 2}, 40}, {"mixed", []int32{0}, 2}} {
			rt := kmsg.NewFetchRequestTopic()
			rt.Topic, rt.TopicID = tp.topic, tds[tp.topic].ID
			for _, p := range tp.parts {
				rp := kmsg.NewFetchRequestTopicPartition()
				rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes = p, tp.at, limit
				rt.Partitions = append(rt.Partitions, rp)
			}
			req.Topics = append(req.Topics, rt)
		}
		cl := b.Client(t)
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		got := map[string][]byte{}
		for _, rt := range resp.Topics {
			for _, rp := range rt.Partitions {
				name := rt.Topic
				if name == "" {
					for n, td := range tds {
						if td.ID == rt.TopicID {
							name = n
						}
					}
				}
				if rp.ErrorCode != 0 || rp.HighWatermark <= 40 {
					t.Fatalf("%s/%d: error %d, high watermark %d", name, rp.Partition, rp.ErrorCode, rp.HighWatermark)
				}
				got[name+"/"+string(rune('0'+rp.Partition))] = rp.RecordBatches
			}
		}
		batches := func(raw []byte) (whole int, cut bool, first int64) {
			first = -1
			for len(raw) >= 12 {
				if first < 0 {
					first = int64(binary.BigEndian.Uint64(raw[0:8]))
				}
				length := int(int32(binary.BigEndian.Uint32(raw[8:12])))
				if 12+length > len(raw) {
					return whole, true, first
				}
				whole++
				raw = raw[12+length:]
			}
			return whole, len(raw) > 0, first
		}
		for key, raw := range got {
			whole, cut, first := batches(raw)
			t.Logf("Apache Kafka %s answered %s with %d bytes: %d whole batches, cut %v, first batch at %d", b.Dist.Version, key, len(raw), whole, cut, first)
		}
		if whole, cut, first := batches(got["big/0"]); whole != 1 || cut || first != 0 || len(got["big/0"]) <= limit {
			t.Errorf("big/0 (the first partition): %d whole batches (cut %v, from %d, %d bytes), want its batch 0..1399 whole", whole, cut, first, len(got["big/0"]))
		}
		for _, key := range []string{"big/1", "big/2"} {
			if n := len(got[key]); n != 0 {
				t.Errorf("%s (a later partition, its batch larger than %d bytes): %d bytes, want none (skipped)", key, limit, n)
			}
		}
		if whole, cut, first := batches(got["mixed/0"]); whole != 1 || !cut || first != 0 || len(got["mixed/0"]) != limit {
			t.Errorf("mixed/0 (a later partition, a small batch then a large one): %d whole batches, cut %v, from %d, %d bytes; want the small batch whole and the next cut at %d bytes",
				whole, cut, first, len(got["mixed/0"]), limit)
		}
	})
}
