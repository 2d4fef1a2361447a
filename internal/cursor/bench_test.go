package cursor

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/retentionguard/retention-guard/internal/cursor/cursortest"
)

// BenchmarkRead is the cost of one business cursor read of 1,000
// partitions (seed 003's table, the default query) on a real PostgreSQL
// and a real MariaDB on loopback, through a warm pool: the read-only
// transaction, the statement timeout, the query, and the rows checked
// against the column contract. It reports rows/s and the latency of one
// read (ns/op). docs/benchmarks.md has the command and the figures.
func BenchmarkRead(b *testing.B) {
	const partitions = 1000
	for _, driver := range []string{DriverPostgres, DriverMySQL} {
		b.Run(fmt.Sprintf("%s/%dpartitions", driver, partitions), func(b *testing.B) {
			s := servers[driver]
			ctx := context.Background()
			if err := s.CursorTable(ctx, "bench_cursor"); err != nil {
				b.Fatal(err)
			}
			values := ""
			for p := range partitions {
				if p > 0 {
					values += ", "
				}
				values += fmt.Sprintf("('bench', %d, %d, 0, NOW())", p, 1_000_000+p)
			}
			if err := s.Exec(ctx, "INSERT INTO bench_cursor (group_id, partition_id, last_offset, last_watermark_ts, updated_at) VALUES "+values); err != nil {
				b.Fatal(err)
			}
			part := cursortest.Quote(driver, "partition")
			src := Source{Driver: driver, DSN: s.AdminDSN(), Query: "SELECT partition_id AS " + part +
				", last_offset + 1 AS next_offset, updated_at FROM bench_cursor WHERE group_id = " + s.Param()}
			r := NewReader()
			defer r.Close()
			if obs := r.Read(ctx, src, "bench"); len(obs.Rows) != partitions {
				b.Fatalf("warm-up read: %+v", obs.Problem)
			}
			b.ReportAllocs()
			b.ResetTimer()
			start := time.Now()
			for range b.N {
				if obs := r.Read(ctx, src, "bench"); len(obs.Rows) != partitions {
					b.Fatalf("read: %s", obs.Problem)
				}
			}
			b.ReportMetric(float64(partitions*b.N)/time.Since(start).Seconds(), "rows/s")
		})
	}
}
