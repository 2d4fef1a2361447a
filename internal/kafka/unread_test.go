package kafka

import (
	"testing"
	"time"

	"github.com/retentionguard/retention-guard/internal/proof"
)

// Issue 33 item 3 (seed 003's settlement consumer stopped mid-backlog): a
// principal without Read gets no record timestamps. The observer says why
// for each lagging partition (ReadDenied) and, given the target's window,
// asks ListOffsets by timestamp now + window − retention.ms with Describe
// only; the proof then proves the young records' partitions. A caught-up
// partition is not marked; a target without a window asks nothing.
func TestUndatedLaggingPartitionsAskListOffsetsByTimestamp(t *testing.T) {
	c := aclCluster(t)
	const window = 72 * time.Hour
	conn := saslConn(c, "SCRAM-SHA-512", "no-read", readerPassword)

	o, _ := newTestObserver(t)
	target := billing
	target.RecoveryWindow = window
	obs := observe(t, o, conn, target)[0]
	requireNoFailures(t, obs)
	retention := time.Duration(0)
	for _, to := range obs.Topics {
		if to.Name == "public" {
			ms, err := time.ParseDuration(to.RetentionMs.Value + "ms")
			if err != nil {
				t.Fatalf("retention.ms %+v: %v", to.RetentionMs, err)
			}
			retention = ms
		}
	}
	p := partition(t, obs, "public", 0)
	if p.TimestampUnread != proof.TimestampReadDenied || !p.OffsetForTimestampRead {
		t.Fatalf("public/0 = %+v: want TimestampUnread %s and ListOffsets by timestamp answered", p, proof.TimestampReadDenied)
	}
	if want := obs.ObservedAt.Add(window - retention).UnixMilli(); p.OffsetForTimestampAt.UnixMilli() != max(want, 0) {
		t.Errorf("asked at %v, want now + window − retention.ms = %v", p.OffsetForTimestampAt, time.UnixMilli(want))
	}
	// Records written just now are stamped after T: the first is the answer.
	if p.OffsetForTimestamp != p.LogStart {
		t.Errorf("ListOffsets answered %d, want log start %d (every record is younger than T)", p.OffsetForTimestamp, p.LogStart)
	}
	pol := proof.Policy{GroupID: "billing", Topics: billing.Topics, RecoveryWindow: window}
	r := proof.Evaluate(obs, pol, obs.ObservedAt)
	for _, v := range r.Violations {
		if v.Reason == proof.ReasonRecordTimestampUnread || v.Reason == proof.ReasonRecoveryHeadroomShorterThanWindow {
			t.Errorf("violation %+v: ListOffsets should have shown the young records outlive the window", v)
		}
	}
	if pr := r.Partitions[0]; !pr.HasHeadroom || !pr.HeadroomAtLeast || pr.Headroom < window {
		t.Errorf("partition %+v: want a headroom of at least the window, from ListOffsets", pr)
	}

	// Without a window nothing is asked, but the cause is still reported.
	o2, _ := newTestObserver(t)
	obs = observe(t, o2, conn, billing)[0]
	if p := partition(t, obs, "public", 0); p.TimestampUnread != proof.TimestampReadDenied || p.OffsetForTimestampRead || !p.OffsetForTimestampAt.IsZero() {
		t.Errorf("public/0 without a window = %+v: want the cause, no ListOffsets", p)
	}
	// The authorized reader dates the records: nothing is marked.
	o3, _ := newTestObserver(t)
	obs = observe(t, o3, saslConn(c, "SCRAM-SHA-512", "reader", readerPassword), target)[0]
	if p := partition(t, obs, "public", 0); p.TimestampUnread != "" || p.CommittedTimestamp.IsZero() || p.OffsetForTimestampRead {
		t.Errorf("public/0 with Read = %+v: want a timestamp and no fallback", p)
	}
}
