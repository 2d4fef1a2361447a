package proof

import (
	"strconv"
	"testing"
	"time"
)

// benchObservation is 100 topics × 100 partitions: every tenth partition's
// committed offset has expired (seed 000's gap), every twentieth has none
// with log start > 0 (seed 003's), the rest lag inside the retained log
// with known committed-record timestamps (seed 002's replay), and the
// group is Empty.
func benchObservation() (Observation, Policy) {
	const topics, partitions = 100, 100
	o := observation()
	o.Group = GroupObservation{ID: "ledger-settle-consumer", State: GroupStateEmpty, Protocol: ProtocolClassic,
		ProtocolType: ProtocolTypeConsumer, EmptySince: now.Add(-day)}
	p := policy()
	for t := 0; t < topics; t++ {
		name := "settle-task-" + strconv.Itoa(t)
		tp := topic(name)
		tp.Partitions = make([]PartitionObservation, partitions)
		for i := range tp.Partitions {
			po := part(int32(i), 1_000_000, 5_000_000, 4_000_000)
			po.CommittedTimestamp = now.Add(-time.Duration(i) * time.Hour)
			switch {
			case i%20 == 5:
				po.Committed = NoOffset
			case i%10 == 3:
				po.Committed = 400_000
			}
			tp.Partitions[i] = po
		}
		o.Topics = append(o.Topics, tp)
		p.Topics = append(p.Topics, name)
	}
	return o, p
}

func BenchmarkEvaluate10kPartitions(b *testing.B) {
	o, p := benchObservation()
	r := Evaluate(o, p, now)
	if r.Verdict != Violated || r.Summary.Total != 10_000 || r.Summary.Expired != 1000 || r.Summary.Missing != 500 {
		b.Fatalf("unexpected benchmark result: %s %+v", r.Verdict, r.Summary)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		Evaluate(o, p, now)
	}
}

func BenchmarkEvaluate10kPartitionsProven(b *testing.B) {
	o, p := benchObservation()
	for i := range o.Topics {
		for j := range o.Topics[i].Partitions {
			o.Topics[i].Partitions[j].Committed = 4_000_000
		}
	}
	if r := Evaluate(o, p, now); r.Verdict != Proven {
		b.Fatalf("verdict %s", r.Verdict)
	}
	b.ReportAllocs()
	for b.Loop() {
		Evaluate(o, p, now)
	}
}

// A simple group (commits without joining) on the same 10,000 partitions:
// every committed offset expires per commit and is dated by the record
// before it; every fifth was committed 6.5 days ago, so its offset expires
// before the 10-day window under 7 days of offsets retention (Unknown).
func BenchmarkEvaluate10kPartitionsPerCommit(b *testing.B) {
	o, p := benchObservation()
	o.Group.ProtocolType = ""
	o.OffsetsRetentionMinutes = minutes(30 * day)
	for i := range o.Topics {
		for j := range o.Topics[i].Partitions {
			po := &o.Topics[i].Partitions[j]
			po.PrecedingTimestamp = now.Add(-time.Minute)
			if j%5 == 0 {
				po.PrecedingTimestamp = now.Add(-26 * day)
			}
		}
	}
	r := Evaluate(o, p, now)
	if r.Verdict != Violated || r.OffsetExpiry.Clock != ExpiryClockLastCommit || !r.OffsetExpiry.HasSoonest {
		b.Fatalf("unexpected benchmark result: %s %+v", r.Verdict, r.OffsetExpiry)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		Evaluate(o, p, now)
	}
}
