package groupmemory

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/retentionguard/retention-guard/internal/proof"
)

// BenchmarkMemoryPerPartition measures what the group memory keeps per
// partition in make bench-scale's shape: each group on 2 topics of 12
// partitions (its topic names decoded from its own OffsetFetch answer,
// so held once per group), recorded by three passes a minute apart that
// read the state, the committed offsets (changed by the second pass: a
// commit bound), the log ends and their leader epochs (a witness). Heap
// bytes are exact on a loaded machine; times are not the point.
//
//	go test ./internal/groupmemory -run '^$' -bench BenchmarkMemoryPerPartition -benchtime 3x
func BenchmarkMemoryPerPartition(b *testing.B) {
	const groups, topics, partitions = 5000, 2, 12
	t0 := time.Now()
	facts := make([]Facts, groups)
	for g := range facts {
		f := Facts{StateKnown: true, State: proof.GroupStateStable, Kind: "classic/consumer",
			Committed: map[TopicPartition]int64{}, LogEnds: map[TopicPartition]int64{}, EndEpochs: map[TopicPartition]int32{}}
		for t := range topics {
			name := strings.Clone(fmt.Sprintf("topic-%03d", (topics*g+t)%300))
			for p := range int32(partitions) {
				tp := TopicPartition{name, p}
				f.Committed[tp], f.LogEnds[tp], f.EndEpochs[tp] = 100, 120, 3
			}
		}
		facts[g] = f
	}
	var ms runtime.MemStats
	liveHeap := func() int64 { runtime.GC(); runtime.GC(); runtime.ReadMemStats(&ms); return int64(ms.HeapAlloc) }
	var perPartition float64
	for b.Loop() {
		h0 := liveHeap()
		m := &Memory{}
		for pass := range 3 {
			for g, f := range facts {
				if pass == 1 {
					for tp := range f.Committed {
						f.Committed[tp], f.LogEnds[tp] = 110, 130
					}
				}
				m.Record("kafka-0:9092,kafka-1:9092,kafka-2:9092", fmt.Sprintf("group-%05d", g), f, t0.Add(time.Duration(pass)*time.Minute))
			}
		}
		h1 := liveHeap()
		runtime.KeepAlive(m)
		perPartition = float64(h1-h0) / (groups * topics * partitions)
		for _, f := range facts {
			for tp := range f.Committed {
				f.Committed[tp], f.LogEnds[tp] = 100, 120
			}
		}
	}
	b.ReportMetric(perPartition, "B/partition")
}
