package webhook

import (
	"context"
	"strings"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	rgv1 "github.com/retentionguard/retention-guard/api/v1alpha1"
	"github.com/retentionguard/retention-guard/internal/proof"
	"github.com/retentionguard/retention-guard/internal/proofstatus"
)

// laggingOutbox is the status internal/proof and internal/proofstatus make
// of seed 000 ahead of the loss, on a topic of many partitions: the
// fan-out group lags 25 days behind on each of the outbox topic's
// partitions, a 30-day topic, so each is deleted in 5 days, sooner than
// the 10-day window (RecoveryHeadroomShorterThanWindow). With lost,
// retention already reached partition 0's committed offset
// (CommittedOffsetExpired).
func laggingOutbox(partitions int, lost bool) *rgv1.ProofStatus {
	topic := proof.TopicObservation{Name: "outbox",
		RetentionMs:    proof.ConfigValue{Present: true, Value: "2592000000"},
		RetentionBytes: proof.ConfigValue{Present: true, Value: "-1"},
		CleanupPolicy:  proof.ConfigValue{Present: true, Value: "delete"}}
	for i := range partitions {
		p := proof.PartitionObservation{Partition: int32(i), LogStart: 0, LogEnd: 9000, Committed: 100,
			CommittedTimestamp: testNow.Add(-25 * 24 * time.Hour)}
		if lost && i == 0 {
			p.LogStart, p.CommittedTimestamp = 150, time.Time{}
		}
		topic.Partitions = append(topic.Partitions, p)
	}
	obs := proof.Observation{ObservedAt: testNow,
		OffsetsRetentionMinutes: proof.ConfigValue{Present: true, Value: "43200"},
		Group:                   proof.GroupObservation{ID: "fanout", State: "Stable", Protocol: "classic", ProtocolType: "consumer"},
		Topics:                  []proof.TopicObservation{topic}}
	pol := proof.Policy{UID: "u", GroupID: "fanout", Topics: []string{"outbox"}, RecoveryWindow: 240 * time.Hour}
	return proofstatus.From(proof.Evaluate(obs, pol, testNow), obs)
}

// Seed 000 ahead of the loss on a topic of 30 partitions, each short of
// headroom: more risks than status.proof lists. Every violation is a
// risk, the ten omitted ones too (violationsOmittedByReason, counted
// before the list was cut), so a Deny policy warns and allows the rollout
// that is the way out, as it does for one lagging partition. An omitted
// violation that is not a risk refuses; and so does a status with
// violations omitted and no count of their reasons (a manager from before
// violationsOmittedByReason): missing counts never mean "all risks".
func TestRisksBeyondTheListedViolations(t *testing.T) {
	headroom := proof.ReasonRecoveryHeadroomShorterThanWindow
	risks := laggingOutbox(30, false)
	if len(risks.Violations) != proofstatus.MaxViolations || risks.ViolationsOmitted != 10 {
		t.Fatalf("seed 000, 30 lagging partitions: %d listed, %d omitted", len(risks.Violations), risks.ViolationsOmitted)
	}
	omitting := func(counts ...rgv1.ReasonCount) *rgv1.ProofStatus {
		ps := risks.DeepCopy()
		ps.ViolationsOmittedByReason = counts
		return ps
	}
	for _, tc := range []struct {
		name  string
		proof *rgv1.ProofStatus
		want  outcome
	}{
		{"30 lagging partitions, all short of headroom", risks, outcomeWarned},
		{"25 lagging partitions", laggingOutbox(25, false), outcomeWarned},
		{"one offset lost among 30 lagging partitions", laggingOutbox(30, true), outcomeDenied},
		// Written by a manager whose list left a loss out (the list of
		// another version of the manager, or a hand-written status).
		{"an omitted loss", omitting(rgv1.ReasonCount{Reason: proof.ReasonCommittedOffsetExpired, Count: 1},
			rgv1.ReasonCount{Reason: headroom, Count: 9}), outcomeDenied},
		{"an omitted fact that is neither", omitting(rgv1.ReasonCount{Reason: proof.ReasonRetentionShorterThanWindow, Count: 10}), outcomeDenied},
		// Fail closed on what does not add up.
		{"a status from before violationsOmittedByReason", omitting(), outcomeDenied},
		{"counts short of violationsOmitted", omitting(rgv1.ReasonCount{Reason: headroom, Count: 9}), outcomeDenied},
		{"counts beyond violationsOmitted", omitting(rgv1.ReasonCount{Reason: headroom, Count: 11}), outcomeDenied},
		{"a count of zero beside the rest", omitting(rgv1.ReasonCount{Reason: headroom, Count: 10},
			rgv1.ReasonCount{Reason: proof.ReasonCommittedOffsetExpired, Count: 0}), outcomeDenied},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := decide([]policyEval{{Policy: settlePolicy(withEnforcement(rgv1.EnforcementDeny)), Proof: tc.proof}}, "")
			if d.Outcome != tc.want {
				t.Fatalf("outcome %s, want %s (omitted %d: %+v)", d.Outcome, tc.want, tc.proof.ViolationsOmitted, tc.proof.ViolationsOmittedByReason)
			}
			ws := strings.Join(warnings(&d), "\n")
			if tc.want != outcomeWarned {
				if strings.Contains(ws, "allowed") {
					t.Errorf("a refused rollout warns %q", ws)
				}
				return
			}
			mustContain(t, ws, "is Violated (proof "+tc.proof.ProofID+") by risks only, nothing lost yet: allowed", "RecoveryHeadroomShorterThanWindow")
		})
	}
}

// The live path: a start is judged on a live observation (the LiveChecker
// renders it with internal/proofstatus, as the status is), and the risks
// its list leaves out count by their reasons there too: scaling the
// lagging fan-out consumer from zero is allowed with a warning, and
// refused once an offset is lost.
func TestLiveProofRisksBeyondTheListedViolations(t *testing.T) {
	lost := false
	live := &fixedLive{fn: func(context.Context, *rgv1.ConsumerRetentionPolicy) (*rgv1.ProofStatus, error) {
		ps := laggingOutbox(30, lost)
		ps.CheckedAt = metav1.NewTime(testNow)
		return ps, nil
	}}
	// The status says Proven; the start is judged live.
	h, _, _ := newTestHandler(t, Options{LiveChecker: live}, settlePolicy(withProof(proven(), time.Minute)))
	scale := request(t, admissionv1.Update, "deployments", deployment("settlement", "settle", 1, settleTemplate()),
		deployment("settlement", "settle", 0, settleTemplate()), false)
	resp := h.Handle(context.Background(), scale)
	if !resp.Allowed || live.calls.Load() != 1 {
		t.Fatalf("30 lagging partitions checked live: allowed=%v after %d live checks: %v", resp.Allowed, live.calls.Load(), resp.Result)
	}
	mustContain(t, strings.Join(resp.Warnings, "\n"), "by risks only, nothing lost yet: allowed")
	lost = true
	if msg := denied(t, h.Handle(context.Background(), scale)); !strings.Contains(msg, proof.ReasonCommittedOffsetExpired) {
		t.Errorf("message:\n%s", msg)
	}
}
