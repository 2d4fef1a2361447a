package proofstatus

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/retentionguard/retention-guard/internal/proof"
)

var now = time.Date(2026, 11, 30, 3, 0, 0, 0, time.UTC)

// TestViolationsCarryTheirNumbers: status.proof.violations carries the
// proof's numbers as fields, and leaves out the ones the proof marks
// absent, so that `kubectl get -o jsonpath`, alerts and the webhook read
// data rather than the message.
func TestViolationsCarryTheirNumbers(t *testing.T) {
	res := proof.Result{Verdict: proof.Violated, Violations: []proof.Violation{
		{Reason: proof.ReasonCommittedOffsetExpired, Topic: "outbox", Partition: 1, Message: "outbox[1]: ...",
			Committed: 100, LogStart: 4300, LogEnd: 9000, ExpiredRecords: 4200, Cursor: proof.NoOffset},
		{Reason: proof.ReasonNoCommittedOffset, Topic: "outbox", Partition: 2, Message: "outbox[2]: ...",
			Committed: proof.NoOffset, LogStart: 0, LogEnd: 10, Cursor: proof.NoOffset},
		{Reason: proof.ReasonRecoveryHeadroomShorterThanWindow, Topic: "outbox", Partition: 3, Message: "outbox[3]: ...",
			Committed: proof.NoOffset, LogStart: -1, LogEnd: -1, Cursor: proof.NoOffset,
			ExpiresAt: now.Add(5*time.Hour + 300*time.Millisecond)},
		{Reason: proof.ReasonCursorExpired, Topic: "outbox", Partition: 4, Message: "...",
			Committed: 160, LogStart: 150, LogEnd: 200, ExpiredRecords: 10, Cursor: 140},
		{Reason: proof.ReasonOffsetsRetentionShorterThanWindow, Partition: -1, Message: "...",
			Committed: proof.NoOffset, LogStart: -1, LogEnd: -1, Cursor: proof.NoOffset},
	}}
	ps := From(res, proof.Observation{ObservedAt: now})
	got, err := json.Marshal(ps.Violations)
	if err != nil {
		t.Fatal(err)
	}
	want := `[` +
		`{"reason":"CommittedOffsetExpired","topic":"outbox","partition":1,"message":"outbox[1]: ...","committed":100,"logStart":4300,"logEnd":9000,"expiredRecords":4200},` +
		`{"reason":"NoCommittedOffset","topic":"outbox","partition":2,"message":"outbox[2]: ...","logStart":0,"logEnd":10},` +
		`{"reason":"RecoveryHeadroomShorterThanWindow","topic":"outbox","partition":3,"message":"outbox[3]: ...","expiresAt":"2026-11-30T08:00:00Z"},` +
		`{"reason":"CursorExpired","topic":"outbox","partition":4,"message":"...","committed":160,"logStart":150,"logEnd":200,"expiredRecords":10,"cursor":140},` +
		`{"reason":"OffsetsRetentionShorterThanWindow","message":"..."}` +
		`]`
	if string(got) != want {
		t.Fatalf("violations\n got %s\nwant %s", got, want)
	}
}

// TestViolationNumbersMatchTheProof: through a real evaluation, the
// numbers in status are the ones the message states.
func TestViolationNumbersMatchTheProof(t *testing.T) {
	obs := proof.Observation{
		ObservedAt:              now,
		OffsetsRetentionMinutes: proof.ConfigValue{Present: true, Value: "43200"},
		Group:                   proof.GroupObservation{ID: "g", State: proof.GroupStateStable, Protocol: proof.ProtocolClassic, ProtocolType: proof.ProtocolTypeConsumer},
		Topics: []proof.TopicObservation{{
			Name:           "outbox",
			RetentionMs:    proof.ConfigValue{Present: true, Value: "2592000000"},
			RetentionBytes: proof.ConfigValue{Present: true, Value: "-1"},
			CleanupPolicy:  proof.ConfigValue{Present: true, Value: "delete"},
			Partitions:     []proof.PartitionObservation{{Partition: 0, LogStart: 150, LogEnd: 500, Committed: 100}},
		}},
	}
	res := proof.Evaluate(obs, proof.Policy{UID: "u", GroupID: "g", Topics: []string{"outbox"}, RecoveryWindow: 24 * time.Hour}, now)
	ps := From(res, obs)
	if len(ps.Violations) != 1 {
		t.Fatalf("violations %+v", ps.Violations)
	}
	v := ps.Violations[0]
	if v.Reason != proof.ReasonCommittedOffsetExpired || v.Committed == nil || *v.Committed != 100 || v.LogStart == nil || *v.LogStart != 150 ||
		v.LogEnd == nil || *v.LogEnd != 500 || v.ExpiredRecords == nil || *v.ExpiredRecords != 50 || v.Cursor != nil || v.ExpiresAt != nil {
		t.Fatalf("violation %+v", v)
	}
}
