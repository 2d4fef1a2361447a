// Package assemble builds every proof retention-guard makes — a policy's
// status.proof (the reconciler), the admission webhook's live check, and
// `retention-guard check` — from what its caller gathered: the policy as
// the proof sees it, one observation of Kafka, the CronJobs the policy
// selects with their schedules' longest gaps, the policy's last proof, and
// the time. It is pure: the callers do the I/O (Kafka, the API server),
// this decides, so the three proofs cannot drift apart.
package assemble

import (
	"time"

	rgv1 "github.com/retentionguard/retention-guard/api/v1alpha1"
	"github.com/retentionguard/retention-guard/internal/proof"
)

// Input is what a caller gathered for one proof.
type Input struct {
	// Policy is the spec as internal/proof sees it.
	Policy proof.Policy
	// Observation is one observation of the policy's target (or, for a
	// spec problem, one holding that problem as its only failure).
	Observation proof.Observation
	// CronJobs are the CronJobs the policy selects, with their schedules'
	// longest gaps; none for `check`, which knows no workloads.
	CronJobs []CronJob
	// Prior is the policy's last proof (status.proof) when it proves the
	// generation proved now (the same group and connection as written),
	// else nil; `check` has none. It dates an Empty group's clock the
	// observer could not date (priorEmptyBound).
	Prior *rgv1.ProofStatus
	// ScaledToZero are the workloads the policy selects that KEDA holds
	// at zero while the group has no member; none for `check` and the
	// live check.
	ScaledToZero []ScaledToZero
	// Now is the time the proof is judged at (the manager uses the
	// observation's time).
	Now time.Time
}

// Outcome is a proof and the observation it was judged on.
type Outcome struct {
	// Observation is the observation as proved: the Input's, with the
	// Empty clock the prior proof dated.
	Observation proof.Observation
	// Result is internal/proof's proof of Observation, its warnings
	// followed by the CronJobs' (proof.WarningCronJobSchedule) and the
	// KEDA-parked workloads' (proof.WarningScaledToZero), judged
	// against the offsets.retention.minutes of the same observation.
	// Warnings only: a schedule never changes the verdict.
	Result proof.Result
	// ScaledToZero is status.proof.scaledToZero: the workloads KEDA holds
	// at zero (Input.ScaledToZero) with when the group's offsets may
	// expire; the GroupOffsetsRetained condition's message says the same.
	ScaledToZero []rgv1.ScaledToZeroStatus
}

// Proof proves the policy from what the caller gathered.
func Proof(in Input) Outcome {
	obs := priorEmptyBound(in.Observation, in.Prior)
	res := proof.Evaluate(obs, in.Policy, in.Now)
	res.Warnings = append(res.Warnings, CronJobWarnings(in.CronJobs, in.Policy.RecoveryWindow, obs.OffsetsRetentionMinutes.IntOrNil())...)
	res.Warnings = append(res.Warnings, ScaledToZeroWarnings(in.ScaledToZero, &res, in.Policy.RecoveryWindow, in.Now)...)
	scaledToZeroCondition(in.ScaledToZero, &res, in.Now)
	return Outcome{Observation: obs, Result: res, ScaledToZero: ScaledToZeroStatus(in.ScaledToZero, &res)}
}
