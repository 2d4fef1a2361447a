package controllers

import (
	"context"
	"errors"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	rgv1 "github.com/retentionguard/retention-guard/api/v1alpha1"
	"github.com/retentionguard/retention-guard/internal/assemble"
	"github.com/retentionguard/retention-guard/internal/coalesce"
	"github.com/retentionguard/retention-guard/internal/resolve"
)

// LiveChecker proves one policy against the brokers now, for the admission
// webhook when a policy's status proof is not fresh. It shares the
// reconciler's connection resolution and the Coalescer's clients, so a
// live check honours --allowed-bootstrap-servers and never opens a second
// client per cluster; and it assembles the proof as the reconciler does
// (assemble.Proof, with the CronJobs the policy selects), so a live proof
// says what the status would.
type LiveChecker struct {
	Resolver  *resolve.ConnectionResolver
	Coalescer *coalesce.Coalescer
	// CronJobs lists the CronJobs a policy selects, normally the manager's
	// cached client (CronJobs are cached reduced to what the proof reads:
	// CacheByObject); the Resolver's Objects reader when nil.
	CronJobs client.Reader

	gaps scheduleGapCache
}

// Check resolves the policy's connection and observes its target now,
// bounded by ctx (give it the webhook's live-check deadline), and returns
// the proof in status.proof's shape. A spec problem (server not allowed,
// Secret or key missing) is a proof too: Unknown, with the problem as its
// KafkaReachable violation. An error means no proof could be had in time
// (ctx ended, the Coalescer is closed, or a Secret or the CronJobs could
// not be read).
func (l *LiveChecker) Check(ctx context.Context, p *rgv1.ConsumerRetentionPolicy) (*rgv1.ProofStatus, error) {
	pol := proofPolicy(p)
	res, err := l.Resolver.Resolve(ctx, p)
	var problem *SpecProblem
	switch {
	case errors.As(err, &problem):
		out := computeStatus(rgv1.ConsumerRetentionPolicyStatus{}, statusInput{
			Generation: p.Generation, Policy: pol, Now: time.Now(), Problem: problem,
		})
		return out.Status.Proof, nil
	case err != nil:
		return nil, err
	}
	target := policyTarget(p)
	target.Cursor = res.Cursor
	obs, err := l.Coalescer.ObserveNow(ctx, res.Connection, target)
	if err != nil {
		return nil, err
	}
	cronJobs := l.CronJobs
	if cronJobs == nil {
		cronJobs = l.Resolver.ObjectReader()
	}
	cjs, err := selectedCronJobs(ctx, cronJobs, &l.gaps, p, time.Now())
	if err != nil {
		return nil, err
	}
	out := assemble.Proof(assemble.Input{Policy: pol, Observation: obs, CronJobs: cjs,
		Prior: priorProof(p.Status, p.Generation), Now: obs.ObservedAt})
	return proofStatus(out.Observation, out.Result), nil
}
