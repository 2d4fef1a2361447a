package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"
)

// The demo runs end to end, non-interactively, on the same stack as the
// end-to-end suite, and prints what a user must see: the day-0 verdict, the
// denial of the nightly run with the numbers, the recovery from the
// business cursor in a real PostgreSQL, the denial of a run whose cursor
// fell behind the log start (with the count), and of the auto-committing
// twin whose group ran ahead of its cursor.
func TestDemoReplaysSeed003(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var out bytes.Buffer
	start := time.Now()
	if err := run(ctx, &out, false); err != nil {
		t.Fatalf("the demo failed: %v\n%s", err, out.String())
	}
	t.Logf("demo wall time %s", time.Since(start).Round(100*time.Millisecond))
	s := out.String()
	for _, want := range []string{
		"applied the chart's",
		"ledger-settle-consumer   ledger-settle-consumer   Violated",
		"offsets.retention.minutes 10080 (7d) is shorter than recoveryWindow 240h (10d)",
		"24 partitions, 24 without a committed offset",
		`Error from server (Forbidden): admission webhook "workloads.retentionguard.io" denied the request: ` +
			"retention-guard refused this rollout (scale from zero) of Deployment settlement/settle",
		"NoCommittedOffset settle-task[0]: no committed offset while log start is 150",
		"consumer_cursor holds last_offset 199 on every partition",
		"ledger-settle-consumer   ledger-settle-consumer   Proven",
		"resume from its business cursor without losing a record",
		"OffsetsInRange: False NoCommittedOffset: not deciding",
		"deployment.apps/settle scaled",
		"Recovered",
		"CursorExpired: cursor 160 is below log start 170 on settle-task[7]: 10 records were never processed and are gone — reconcile them from the source",
		"GroupAheadOfCursor: committed offset 600 is ahead of cursor 480 on settle-task[3]: resuming from the group's offsets skips 120 records",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("the demo's output does not show %q", want)
		}
	}
	if t.Failed() {
		t.Logf("demo output:\n%s", s)
	}
}
