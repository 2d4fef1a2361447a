package gather

import (
	"context"
	"time"

	rgv1 "github.com/retentionguard/retention-guard/api/v1alpha1"
	"github.com/retentionguard/retention-guard/internal/assemble"
	"github.com/retentionguard/retention-guard/internal/kafka"
	"github.com/retentionguard/retention-guard/internal/proof"
)

// LiveChecker proves one policy against the brokers now, for the admission
// webhook when a policy's status proof is not fresh. It gathers with the
// Gatherer the reconciler uses, so a live check honours
// --allowed-bootstrap-servers, never opens a second client per cluster,
// and proves what the status would: the same spec problems (the selector's
// included), the same CronJobs, unselected consumers and KEDA-parked
// workloads, assembled and rendered by the same functions (ObservedProof,
// ProblemProof).
type LiveChecker struct {
	Gatherer *Gatherer
}

// Check gathers the policy's facts, observing its target now bounded by
// ctx (give it the webhook's live-check deadline), and returns the proof
// in status.proof's shape. A spec problem (an invalid selector, a server
// not allowed, a Secret or key missing) is a proof too: Unknown, with the
// problem as its KafkaReachable violation. An error means no proof could
// be had in time (ctx ended, the Coalescer is closed, or a Secret or the
// CronJobs could not be read).
func (l *LiveChecker) Check(ctx context.Context, p *rgv1.ConsumerRetentionPolicy) (*rgv1.ProofStatus, error) {
	// The live check's way to an observation: wait for one, bounded by ctx.
	observe := func(ctx context.Context, conn kafka.Connection, target kafka.Target) (proof.Observation, bool, error) {
		obs, err := l.Gatherer.Coalescer.ObserveNow(ctx, conn, target)
		return obs, err == nil, err
	}
	f, err := l.Gatherer.Gather(ctx, p, time.Now(), observe)
	switch {
	case err != nil:
		return nil, err
	case f.Problem != nil:
		_, ps := ProblemProof(f.Policy, f.Problem, f.Now)
		return ps, nil
	}
	_, ps := ObservedProof(assemble.Input{Policy: f.Policy, Observation: *f.Observation, CronJobs: f.CronJobs,
		ScaledToZero: f.ScaledToZero, Prior: PriorProof(p.Status, p.Generation), Now: f.Observation.ObservedAt}, f.Unselected)
	return ps, nil
}
