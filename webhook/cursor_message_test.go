package webhook

import (
	"strings"
	"testing"
	"time"

	rgv1 "github.com/retentionguard/retention-guard/api/v1alpha1"
	"github.com/retentionguard/retention-guard/internal/proof"
	"github.com/retentionguard/retention-guard/internal/proofstatus"
)

// cursorProof is the proof internal/proof makes of seed 003 after the
// outage with a business cursor: the group's offsets expired (none
// committed on 24 partitions whose log starts at 150), the cursor table
// says 200 everywhere, but partition 7's cursor is 140, and partition 9's
// group offset (when given) ran ahead of its cursor.
func cursorProof(t *testing.T, resume string, committed map[int32]int64, cursors map[int64]int64) *rgv1.ProofStatus {
	t.Helper()
	topic := proof.TopicObservation{Name: "settle-task",
		RetentionMs:    proof.ConfigValue{Present: true, Value: "2592000000"},
		RetentionBytes: proof.ConfigValue{Present: true, Value: "-1"},
		CleanupPolicy:  proof.ConfigValue{Present: true, Value: "delete"}}
	obs := proof.Observation{ObservedAt: testNow,
		OffsetsRetentionMinutes: proof.ConfigValue{Present: true, Value: "10080"},
		Group:                   proof.GroupObservation{ID: "ledger-settle-consumer", State: "Empty", Protocol: "classic", ProtocolType: "consumer"},
		Cursor:                  proof.CursorObservation{Read: true}}
	for p := int32(0); p < 24; p++ {
		c, ok := committed[p]
		if !ok {
			c = proof.NoOffset
		}
		topic.Partitions = append(topic.Partitions, proof.PartitionObservation{Partition: p, LogStart: 150, LogEnd: 600, Committed: c})
		next, ok := cursors[int64(p)]
		if !ok {
			next = 200
		}
		obs.Cursor.Rows = append(obs.Cursor.Rows, proof.CursorRow{Partition: int64(p), NextOffset: next})
	}
	obs.Topics = []proof.TopicObservation{topic}
	pol := proof.Policy{UID: "u", GroupID: "ledger-settle-consumer", Topics: []string{"settle-task"}, RecoveryWindow: 240 * time.Hour,
		Cursor: &proof.CursorPolicy{ResumeFrom: resume}}
	return proofstatus.From(proof.Evaluate(obs, pol, testNow), obs)
}

func withCursorSpec(resume rgv1.ResumeFrom) func(*rgv1.ConsumerRetentionPolicy) {
	return func(p *rgv1.ConsumerRetentionPolicy) {
		p.Spec.Cursor = &rgv1.CursorSpec{ResumeFrom: resume, SQL: rgv1.CursorSQL{Driver: rgv1.CursorDriverPostgres,
			SecretRef: rgv1.SecretKeyReference{Name: "settle-db", Key: "dsn"}}}
	}
}

// Seed 003 with its cursor table: the consumer resumes from its cursor,
// and one partition's cursor fell behind the log start. The denial leads
// with the cursor's fact, in the words a person needs, and says to
// reconcile from the source — not to reset the group to earliest.
func TestDenyMessageCursorExpired(t *testing.T) {
	ps := cursorProof(t, proof.ResumeFromCursor, nil, map[int64]int64{7: 140})
	if ps.Verdict != rgv1.VerdictViolated {
		t.Fatalf("proof %+v", ps)
	}
	p := settlePolicy(withCursorSpec(rgv1.ResumeFromCursor), withProof(ps, 30*time.Second))
	d := decide([]policyEval{{Policy: p, Proof: p.Status.Proof}}, "")
	msg := denyMessage(settleTarget, &d, testNow)
	t.Logf("%d bytes:\n%s", len(msg), msg)
	lines := strings.Split(msg, "\n")
	if len(lines) < 4 || lines[3] != "- CursorExpired: cursor 140 is below log start 150 on settle-task[7]: 10 records were never processed and are gone — reconcile them from the source" {
		t.Errorf("the first finding is not the cursor's fact:\n%s", msg)
	}
	for _, want := range []string{"24 partitions, 1 expired; 10 records expired unread", "Way out: reconcile the records the business cursor never reached"} {
		if !strings.Contains(msg, want) {
			t.Errorf("message lacks %q", want)
		}
	}
	if strings.Contains(msg, "--to-earliest") || strings.Contains(msg, "NoCommittedOffset") {
		t.Errorf("the group's expired offsets, which do not decide, are in the denial:\n%s", msg)
	}
	checkMessageShape(t, msg)
}

// With resumeFrom GroupOffsets both positions decide; the cursor's loss
// still comes first, the group's after it (or counted, when the message
// has room for one finding only), and the way out is the cursor, not
// "reset to earliest" (the silent replay seed 003 warns about).
func TestDenyMessageCursorFirstBesideGroupOffsets(t *testing.T) {
	ps := cursorProof(t, proof.ResumeFromGroupOffsets, nil, map[int64]int64{7: 140})
	p := settlePolicy(withCursorSpec(rgv1.ResumeFromGroupOffsets), withProof(ps, 30*time.Second))
	d := decide([]policyEval{{Policy: p, Proof: p.Status.Proof}}, "")
	msg := denyMessage(settleTarget, &d, testNow)
	t.Logf("%d bytes:\n%s", len(msg), msg)
	lines := strings.Split(msg, "\n")
	if len(lines) < 5 || !strings.HasPrefix(lines[3], "- CursorExpired: cursor 140 is below log start 150 on settle-task[7]") ||
		!(strings.HasPrefix(lines[4], "- NoCommittedOffset on ") || strings.HasPrefix(lines[4], "- and ")) {
		t.Errorf("want the cursor's loss first, then the group's:\n%s", msg)
	}
	if !strings.Contains(msg, "reset the group's offsets to the business cursor") || strings.Contains(msg, "--to-earliest") {
		t.Errorf("the way out is not the cursor:\n%s", msg)
	}
	checkMessageShape(t, msg)
}

// The auto-committing twin: its group ran 110 records ahead of its
// cursor. The denial says how many records a restart from the group skips
// and to resume from the cursor.
func TestDenyMessageGroupAheadOfCursor(t *testing.T) {
	committed := map[int32]int64{}
	for p := int32(0); p < 24; p++ {
		committed[p] = 200
	}
	committed[9] = 310
	ps := cursorProof(t, proof.ResumeFromGroupOffsets, committed, nil)
	p := settlePolicy(withCursorSpec(rgv1.ResumeFromGroupOffsets), withProof(ps, 30*time.Second))
	d := decide([]policyEval{{Policy: p, Proof: p.Status.Proof}}, "")
	msg := denyMessage(settleTarget, &d, testNow)
	t.Logf("%d bytes:\n%s", len(msg), msg)
	for _, want := range []string{
		"- GroupAheadOfCursor: committed offset 310 is ahead of cursor 200 on settle-task[9]: resuming from the group's offsets skips 110 records the business\n" +
			"    never processed — resume from the cursor",
		"the group's offsets are 110 records ahead of the business cursor",
		"reset the group's offsets to the business cursor",
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("message lacks %q", want)
		}
	}
	checkMessageShape(t, msg)
}

// Several partitions share a reason: the example the denial shows is the
// worst by the proof's numbers (status fields, not its sentences): the
// cursor furthest below log start, the group furthest ahead of its cursor.
func TestDenyMessageExampleIsTheWorstByTheNumbers(t *testing.T) {
	ps := cursorProof(t, proof.ResumeFromCursor, nil, map[int64]int64{3: 149, 7: 20, 11: 140})
	p := settlePolicy(withCursorSpec(rgv1.ResumeFromCursor), withProof(ps, 30*time.Second))
	d := decide([]policyEval{{Policy: p, Proof: p.Status.Proof}}, "")
	msg := denyMessage(settleTarget, &d, testNow)
	t.Logf("%d bytes:\n%s", len(msg), msg)
	if want := "- CursorExpired on 3 partitions of settle-task, e.g. cursor 20 is below log start 150 on settle-task[7]: 130 records"; !strings.Contains(msg, want) {
		t.Errorf("message lacks %q", want)
	}

	committed := map[int32]int64{}
	for p := int32(0); p < 24; p++ {
		committed[p] = 200
	}
	committed[2], committed[9], committed[15] = 210, 390, 250
	ps = cursorProof(t, proof.ResumeFromGroupOffsets, committed, nil)
	p = settlePolicy(withCursorSpec(rgv1.ResumeFromGroupOffsets), withProof(ps, 30*time.Second))
	d = decide([]policyEval{{Policy: p, Proof: p.Status.Proof}}, "")
	msg = denyMessage(settleTarget, &d, testNow)
	t.Logf("%d bytes:\n%s", len(msg), msg)
	if want := "- GroupAheadOfCursor on 3 partitions of settle-task, e.g. committed offset 390 is ahead of cursor 200 on settle-task[9]"; !strings.Contains(msg, want) {
		t.Errorf("message lacks %q", want)
	}
}

// A share group lost records on several partitions: the example is the
// partition that lost the most, read from the violation's expiredRecords
// (the message words it "at least N records expired").
func TestDenyMessageShareExampleIsTheLargestLoss(t *testing.T) {
	topic := proof.TopicObservation{Name: "settle-task",
		RetentionMs:    proof.ConfigValue{Present: true, Value: "2592000000"},
		RetentionBytes: proof.ConfigValue{Present: true, Value: "-1"},
		CleanupPolicy:  proof.ConfigValue{Present: true, Value: "delete"}}
	// SPSO below log start 150 with more unacknowledged records than the
	// 450 the log holds: at least lag − 450 (at most 150 − SPSO) expired.
	for p, spso := range []int64{100, 140, 0, 120} {
		lag := map[int64]int64{100: 460, 140: 455, 0: 700, 120: 470}[spso]
		topic.Partitions = append(topic.Partitions, proof.PartitionObservation{Partition: int32(p), LogStart: 150, LogEnd: 600,
			Committed: spso, ShareLag: lag, ShareLagKnown: true})
	}
	obs := proof.Observation{ObservedAt: testNow,
		OffsetsRetentionMinutes: proof.ConfigValue{Present: true, Value: "10080"},
		Group:                   proof.GroupObservation{ID: "ledger-settle-consumer", State: "Stable", Protocol: proof.ProtocolShare},
		Topics:                  []proof.TopicObservation{topic}}
	pol := proof.Policy{UID: "u", GroupID: "ledger-settle-consumer", Topics: []string{"settle-task"}, RecoveryWindow: 240 * time.Hour}
	ps := proofstatus.From(proof.Evaluate(obs, pol, testNow), obs)
	p := settlePolicy(withProof(ps, 30*time.Second))
	d := decide([]policyEval{{Policy: p, Proof: p.Status.Proof}}, "")
	msg := denyMessage(settleTarget, &d, testNow)
	t.Logf("%d bytes:\n%s", len(msg), msg)
	if want := "- ShareRecordsExpired on 4 partitions of settle-task, e.g. settle-task[2]: "; !strings.Contains(msg, want) {
		t.Errorf("message lacks %q", want)
	}
}
