package webhook

import (
	"strings"
	"testing"

	rgv1 "github.com/retentionguard/retention-guard/api/v1alpha1"
	"github.com/retentionguard/retention-guard/internal/proof"
)

// Seed 000 before the loss: the fan-out consumer lags and the oldest
// record it has not read expires in less than its recovery window
// (RecoveryHeadroomShorterThanWindow), or an Empty classic group's offsets
// expire before its window ends (seed 003 before the loss). The proof is
// Violated — the group cannot be down for its window — but nothing is lost
// yet, and the rollout (a faster consumer, the batch consumer started
// again) is the way out: a Deny policy warns and allows it, and so when
// the offsets only may expire (Unknown). Once a record is lost
// (CommittedOffsetExpired beside the risk), it refuses again.
func TestRiskOnlyViolationsWarnAndAllow(t *testing.T) {
	risk := func(reasons ...string) *rgv1.ProofStatus {
		ps := &rgv1.ProofStatus{Verdict: rgv1.VerdictViolated, ProofID: "5e1f00aa"}
		for _, r := range reasons {
			ps.Violations = append(ps.Violations, rgv1.ViolationStatus{Reason: r, Topic: "outbox", Partition: ptr(int32(0)),
				Message: "expires in 1d23h"})
		}
		return ps
	}
	unknown := func(reasons ...string) *rgv1.ProofStatus {
		ps := risk(reasons...)
		ps.Verdict = rgv1.VerdictUnknown
		return ps
	}
	for _, tc := range []struct {
		name    string
		proof   *rgv1.ProofStatus
		omitted int32
		want    outcome
	}{
		{"headroom below the window", risk(proof.ReasonRecoveryHeadroomShorterThanWindow), 0, outcomeWarned},
		{"Empty group's offsets expire before the window", risk(proof.ReasonEmptyGroupOffsetsExpireBeforeWindow), 0, outcomeWarned},
		// Seed 000's compacted variant before the loss: a tombstone the
		// lagging group has not read may be dropped before its window
		// ends; the faster consumer reading past it is the way out.
		{"tombstone headroom below the window", risk(proof.ReasonTombstoneHeadroomShorterThanWindow), 0, outcomeWarned},
		{"both risks", risk(proof.ReasonRecoveryHeadroomShorterThanWindow, proof.ReasonEmptyGroupOffsetsExpireBeforeWindow), 0, outcomeWarned},
		{"a risk and a loss", risk(proof.ReasonRecoveryHeadroomShorterThanWindow, proof.ReasonCommittedOffsetExpired), 0, outcomeDenied},
		// Omitted violations whose reasons the status does not count (a
		// manager from before violationsOmittedByReason): not only risks.
		{"a risk and omitted violations of no counted reason", risk(proof.ReasonRecoveryHeadroomShorterThanWindow), 3, outcomeDenied},
		// The oracle's case: an Empty classic group since a time nobody
		// saw (a manager that started while the batch group was Empty).
		// Unknown, and still a risk: refusing the batch Job that stops the
		// clock would protect nothing.
		{"Unknown: Empty group's offsets may expire before the window", unknown(proof.ReasonEmptyGroupOffsetsMayExpireBeforeWindow), 0, outcomeWarned},
		{"Unknown by a risk and a missing fact", unknown(proof.ReasonEmptyGroupOffsetsMayExpireBeforeWindow, proof.ReasonOffsetsMayExpireBeforeWindow), 0, outcomeDenied},
		{"Unknown with no violation listed (Kafka unreachable)", unknown(), 0, outcomeDenied},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.proof.ViolationsOmitted = tc.omitted
			d := decide([]policyEval{{Policy: settlePolicy(withEnforcement(rgv1.EnforcementDeny)), Proof: tc.proof}}, "")
			if d.Outcome != tc.want {
				t.Fatalf("outcome %s, want %s", d.Outcome, tc.want)
			}
			// The event on the policy says what happened to the rollout.
			wantEvent := EventRolloutDenied
			if tc.want == outcomeWarned {
				wantEvent = EventRolloutWarned
			}
			if got := eventReason(&d.Policies[0]); got != wantEvent {
				t.Errorf("event %s, want %s", got, wantEvent)
			}
			ws := strings.Join(warnings(&d), "\n")
			if tc.want != outcomeWarned {
				if strings.Contains(ws, "allowed") {
					t.Errorf("a refused rollout warns %q", ws)
				}
				return
			}
			mustContain(t, ws, "is "+string(tc.proof.Verdict)+" (proof 5e1f00aa) by risks only, nothing lost yet: allowed", "outbox[0]: expires in 1d23h")
		})
	}

	// Issue 32: a commit with its leader epoch past a log that diverged
	// below it (seed 000's diverged log, an unclean election): the
	// consumer validates the epoch on restart and rewinds, so a Deny
	// policy warns and allows, and says the restart skips nothing unread
	// rather than "nothing lost yet" (the records read there are gone from
	// the log). Beside a loss it refuses; an epoch-less commit past the same
	// log (CommittedOffsetDiverged) is the loss.
	for _, tc := range []struct {
		name  string
		proof *rgv1.ProofStatus
		want  outcome
	}{
		{"diverged under a commit with its epoch", risk(proof.ReasonCommittedEpochDiverged), outcomeWarned},
		{"diverged with a headroom risk", risk(proof.ReasonCommittedEpochDiverged, proof.ReasonRecoveryHeadroomShorterThanWindow), outcomeWarned},
		{"diverged under an epoch-less commit", risk(proof.ReasonCommittedOffsetDiverged), outcomeDenied},
		{"both", risk(proof.ReasonCommittedEpochDiverged, proof.ReasonCommittedOffsetDiverged), outcomeDenied},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := decide([]policyEval{{Policy: settlePolicy(withEnforcement(rgv1.EnforcementDeny)), Proof: tc.proof}}, "")
			if d.Outcome != tc.want {
				t.Fatalf("outcome %s, want %s", d.Outcome, tc.want)
			}
			ws := strings.Join(warnings(&d), "\n")
			if tc.want != outcomeWarned {
				if strings.Contains(ws, "allowed") {
					t.Errorf("a refused rollout warns %q", ws)
				}
				return
			}
			mustContain(t, ws, "is Violated (proof 5e1f00aa) by risks only, no unread record skipped: allowed",
				"CommittedEpochDiverged outbox[0]")
			if strings.Contains(ws, "nothing lost yet") {
				t.Errorf("records read and gone from the log, yet %q", ws)
			}
		})
	}

	// A risk with a consumer clause that fails still refuses: the consumer
	// settings are the danger, not the rollout.
	p := settlePolicy(withEnforcement(rgv1.EnforcementDeny), withConsumer("settle", resetEnv, ""))
	e := policyEval{Policy: p, Proof: risk(proof.ReasonRecoveryHeadroomShorterThanWindow),
		Consumer: []containerEnv{{Container: "settle", OffsetReset: envValue{Declared: true, Value: "earliest", From: "env"}}}}
	d := decide([]policyEval{e}, "")
	if d.Outcome != outcomeDenied {
		t.Errorf("a risk with auto.offset.reset=earliest: outcome %s, want denied", d.Outcome)
	}
	if got := eventReason(&d.Policies[0]); got != EventRolloutDenied {
		t.Errorf("a risk with auto.offset.reset=earliest: event %s, want %s", got, EventRolloutDenied)
	}
	if ws := strings.Join(warnings(&d), "\n"); strings.Contains(ws, "nothing lost yet: allowed") {
		t.Errorf("a refused rollout warns %q", ws)
	}
}
