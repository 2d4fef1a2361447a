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

// TestOmittedViolationsCountedByReason: the violations the status leaves
// out (past MaxViolations) are counted by reason before the list is cut,
// so that admission can tell a proof failing only by risks from one that
// lost records without seeing them. Seed 000: the fan-out consumer lags on
// an outbox topic of 30 partitions, each short of headroom for its window
// (RecoveryHeadroomShorterThanWindow) — ten of them omitted, all risks —
// until retention reaches a committed offset (CommittedOffsetExpired).
func TestOmittedViolationsCountedByReason(t *testing.T) {
	const (
		headroom = proof.ReasonRecoveryHeadroomShorterThanWindow
		expired  = proof.ReasonCommittedOffsetExpired
		noOffset = proof.ReasonNoCommittedOffset
		empty    = proof.ReasonEmptyGroupOffsetsExpireBeforeWindow
	)
	many := func(reason string, n int) []string {
		rs := make([]string, n)
		for i := range rs {
			rs[i] = reason
		}
		return rs
	}
	for _, tc := range []struct {
		name    string
		reasons []string
		want    string // violationsOmittedByReason as JSON
		// onlyRisks: every reason, listed or omitted, is a risk.
		onlyRisks bool
	}{
		{"seed 000: 30 lagging partitions, all short of headroom", many(headroom, 30),
			`[{"reason":"RecoveryHeadroomShorterThanWindow","count":10}]`, true},
		{"seed 000: 20 lagging partitions, none omitted", many(headroom, 20), `null`, true},
		{"seed 000: one loss among 30 lagging partitions", append(many(headroom, 29), expired),
			`[{"reason":"RecoveryHeadroomShorterThanWindow","count":10}]`, false},
		{"seed 000 past the loss: 40 expired offsets beside 5 lagging partitions", append(many(headroom, 5), many(expired, 40)...),
			`[{"reason":"CommittedOffsetExpired","count":21},{"reason":"RecoveryHeadroomShorterThanWindow","count":4}]`, false},
		// The list keeps the losses (loss first): only risks are left out,
		// yet the proof is not risks only.
		{"seed 003: lost offsets beside both risks", append(append(many(empty, 10), many(headroom, 10)...), many(noOffset, 10)...),
			`[{"reason":"EmptyGroupOffsetsExpireBeforeWindow","count":1},{"reason":"RecoveryHeadroomShorterThanWindow","count":9}]`, false},
		{"seed 003: both risks, 24 partitions", append(many(empty, 12), many(headroom, 12)...),
			`[{"reason":"RecoveryHeadroomShorterThanWindow","count":4}]`, true},
		// More losses than the list holds: the losses left out are counted,
		// loss first.
		{"seed 003 past the loss: 24 partitions without an offset beside a lagging one", append(many(headroom, 1), many(noOffset, 24)...),
			`[{"reason":"NoCommittedOffset","count":5}]`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := proof.Result{Verdict: proof.Violated}
			total := map[string]int32{}
			for i, r := range tc.reasons {
				res.Violations = append(res.Violations, proof.Violation{Reason: r, Topic: "outbox", Partition: int32(i), Message: "...",
					Committed: 100, LogStart: 0, LogEnd: 200, Cursor: proof.NoOffset})
				total[r]++
			}
			ps := From(res, proof.Observation{ObservedAt: now})
			got, err := json.Marshal(ps.ViolationsOmittedByReason)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tc.want {
				t.Errorf("violationsOmittedByReason\n got %s\nwant %s", got, tc.want)
			}
			// Listed and omitted together are every violation of the
			// proof, reason by reason; the omitted sum to violationsOmitted.
			seen := map[string]int32{}
			for _, v := range ps.Violations {
				seen[v.Reason]++
			}
			var omitted int32
			for _, c := range ps.ViolationsOmittedByReason {
				seen[c.Reason] += c.Count
				omitted += c.Count
			}
			if omitted != ps.ViolationsOmitted || len(seen) != len(total) {
				t.Errorf("omitted by reason sum to %d, violationsOmitted %d; reasons %v, want %v", omitted, ps.ViolationsOmitted, seen, total)
			}
			onlyRisks := true
			for r, n := range total {
				if seen[r] != n {
					t.Errorf("%s: %d listed or omitted, the proof has %d", r, seen[r], n)
				}
			}
			for r := range seen {
				onlyRisks = onlyRisks && proof.IsRisk(r)
			}
			if onlyRisks != tc.onlyRisks {
				t.Errorf("every reason a risk: %v, want %v (%v)", onlyRisks, tc.onlyRisks, seen)
			}
		})
	}
}

// seed000Lagging is seed 000 ahead of the loss, observed: the fan-out
// group lags 25 days behind on every one of the outbox topic's partitions,
// a 30-day topic, so each record it has not read is deleted in 5 days,
// sooner than its 10-day window. With lost, partition 0's committed offset
// is below its log start: retention reached it (CommittedOffsetExpired).
func seed000Lagging(partitions int, lost bool) (proof.Observation, proof.Policy) {
	obs := proof.Observation{
		ObservedAt:              now,
		OffsetsRetentionMinutes: proof.ConfigValue{Present: true, Value: "43200"},
		Group:                   proof.GroupObservation{ID: "fanout", State: proof.GroupStateStable, Protocol: proof.ProtocolClassic, ProtocolType: proof.ProtocolTypeConsumer},
	}
	topic := proof.TopicObservation{
		Name:           "outbox",
		RetentionMs:    proof.ConfigValue{Present: true, Value: "2592000000"},
		RetentionBytes: proof.ConfigValue{Present: true, Value: "-1"},
		CleanupPolicy:  proof.ConfigValue{Present: true, Value: "delete"},
	}
	for i := range partitions {
		p := proof.PartitionObservation{Partition: int32(i), LogStart: 0, LogEnd: 9000, Committed: 100, CommittedTimestamp: now.Add(-25 * 24 * time.Hour)}
		if lost && i == 0 {
			p.LogStart, p.CommittedTimestamp = 150, time.Time{}
		}
		topic.Partitions = append(topic.Partitions, p)
	}
	obs.Topics = []proof.TopicObservation{topic}
	return obs, proof.Policy{UID: "u", GroupID: "fanout", Topics: []string{"outbox"}, RecoveryWindow: 240 * time.Hour}
}

// TestOmittedRisksThroughAnEvaluation: seed 000 through a real evaluation
// of 30 lagging partitions: 20 RecoveryHeadroomShorterThanWindow listed,
// 10 counted by reason; with one offset lost, the loss is listed and the
// omitted count stays the risk's.
func TestOmittedRisksThroughAnEvaluation(t *testing.T) {
	for _, lost := range []bool{false, true} {
		obs, pol := seed000Lagging(30, lost)
		res := proof.Evaluate(obs, pol, now)
		ps := From(res, obs)
		if ps.Verdict != "Violated" || len(ps.Violations) != MaxViolations || ps.ViolationsOmitted != 10 {
			t.Fatalf("lost=%v: verdict %s, %d listed, %d omitted (%+v)", lost, ps.Verdict, len(ps.Violations), ps.ViolationsOmitted, res.Violations)
		}
		got, _ := json.Marshal(ps.ViolationsOmittedByReason)
		if want := `[{"reason":"RecoveryHeadroomShorterThanWindow","count":10}]`; string(got) != want {
			t.Errorf("lost=%v: violationsOmittedByReason %s, want %s", lost, got, want)
		}
		losses := 0
		for _, v := range ps.Violations {
			if !proof.IsRisk(v.Reason) {
				losses++
			}
		}
		if want := map[bool]int{false: 0, true: 1}[lost]; losses != want {
			t.Errorf("lost=%v: %d listed violations not risks, want %d", lost, losses, want)
		}
	}
}
