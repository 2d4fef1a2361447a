package gather

import (
	"time"

	rgv1 "github.com/retentionguard/retention-guard/api/v1alpha1"
	"github.com/retentionguard/retention-guard/internal/assemble"
	"github.com/retentionguard/retention-guard/internal/proof"
	"github.com/retentionguard/retention-guard/internal/proofstatus"
	"github.com/retentionguard/retention-guard/internal/resolve"
)

// MaxWarningLength bounds one status.proof warning (a configWarning: twice
// that).
const MaxWarningLength = 256

// ObservedProof assembles the proof of an observation (assemble.Proof) and
// renders it as status.proof: the workloads KEDA holds at zero, and the
// unselected consumers as configWarnings and warningFacts. The reconciler's
// status (controllers' computeStatus) and the live check both call it, so
// the two say the same.
func ObservedProof(in assemble.Input, unselected []UnselectedConsumer) (proof.Result, *rgv1.ProofStatus) {
	out := assemble.Proof(in)
	ps := ProofStatus(out.Observation, out.Result)
	ps.ScaledToZero = out.ScaledToZero
	for _, u := range unselected {
		ps.ConfigWarnings = append(ps.ConfigWarnings, proof.Truncate(u.Message, MaxWarningLength*2))
		ps.WarningFacts = append(ps.WarningFacts, u.Fact)
	}
	return out.Result, ps
}

// ProblemProof is the proof of a spec problem that keeps the brokers from
// being observed: Unknown, with the problem as its only KafkaReachable
// failure, for the status and the live check alike.
func ProblemProof(pol proof.Policy, problem *resolve.SpecProblem, now time.Time) (proof.Result, *rgv1.ProofStatus) {
	obs := proof.Observation{
		ObservedAt: now,
		Group:      proof.GroupObservation{ID: pol.GroupID},
		Failures: []proof.Failure{{
			Reason:    problem.Reason,
			Partition: -1,
			Message:   problem.Message,
		}},
	}
	out := assemble.Proof(assemble.Input{Policy: pol, Observation: obs, Now: now})
	return out.Result, ProofStatus(out.Observation, out.Result)
}

// ProofStatus renders an assembled proof and the observation it was judged
// on (assemble.Outcome) as status.proof, in the shape `retention-guard
// check --output json` shares (internal/proofstatus), with warnings kept
// short.
func ProofStatus(obs proof.Observation, res proof.Result) *rgv1.ProofStatus {
	ps := proofstatus.From(res, obs)
	for i, w := range ps.Warnings {
		ps.Warnings[i] = proof.Truncate(w, MaxWarningLength)
	}
	for i, w := range ps.ConfigWarnings {
		ps.ConfigWarnings[i] = proof.Truncate(w, MaxWarningLength*2)
	}
	return ps
}

// PriorProof is the policy's last proof when it proves generation (the
// same group and connection as written), else nil: a restarted manager
// dates an Empty classic group's clock from it (assemble.Input.Prior), on
// the reconciler's path and the live check's alike.
func PriorProof(st rgv1.ConsumerRetentionPolicyStatus, generation int64) *rgv1.ProofStatus {
	if st.ObservedGeneration != generation {
		return nil
	}
	return st.Proof
}
