package gather

import (
	"context"
	"errors"
	"slices"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	rgv1 "github.com/retentionguard/retention-guard/api/v1alpha1"
	"github.com/retentionguard/retention-guard/internal/assemble"
	"github.com/retentionguard/retention-guard/internal/coalesce"
	"github.com/retentionguard/retention-guard/internal/kafka"
	"github.com/retentionguard/retention-guard/internal/proof"
	"github.com/retentionguard/retention-guard/internal/resolve"
	"github.com/retentionguard/retention-guard/internal/workloadread"
)

// Gatherer gathers a policy's facts. One serves the reconciler and the
// live check alike: they share its connection resolution, its Coalescer
// (one client per cluster) and its memories (schedule gaps, unselected
// consumers). Safe for concurrent use.
type Gatherer struct {
	// Resolver turns spec.kafka into a connection.
	Resolver *resolve.ConnectionResolver
	// Coalescer shares observations among policies of one cluster.
	Coalescer *coalesce.Coalescer
	// CronJobs lists the CronJobs a policy selects, normally the manager's
	// cached client (CronJobs are cached reduced to what the proof reads:
	// controllers.CacheByObject); the Resolver's Objects reader when nil.
	CronJobs client.Reader
	// Workloads, when set, finds the unselected consumers (unselected.go);
	// nil: none are gathered.
	Workloads *workloadread.Reader

	schedules  scheduleGapCache
	unselected unselectedMemo
}

// Facts is what one gathering learned about a policy. Exactly one of
// Problem and Observation is set, or neither while the observation is
// pending (the reconciler's Observer had none fresh yet).
type Facts struct {
	// Policy is the spec as the proof sees it.
	Policy proof.Policy
	// Now is when the gathering started.
	Now time.Time
	// Problem is a spec problem that keeps the brokers from being
	// observed at all (an invalid selector, a connection or Secret a
	// person must fix).
	Problem *resolve.SpecProblem
	// Servers are the connection's bootstrap servers (set once the
	// connection resolved).
	Servers []string
	// CursorProblem is a spec problem of spec.cursor: Kafka is observed
	// all the same and the proof says CursorUnreadable.
	CursorProblem *resolve.SpecProblem
	// Observation is a fresh observation of the policy's target.
	Observation *proof.Observation
	// CronJobs are the CronJobs the policy selects, with their schedule
	// gaps (gathered with an observation).
	CronJobs []assemble.CronJob
	// Unselected are the workloads the group's live members run in that
	// the policy does not guard (gathered with an observation).
	Unselected []UnselectedConsumer
	// ScaledToZero are the workloads the policy selects that KEDA holds
	// at zero while the group has no member (gathered with Unselected).
	ScaledToZero []assemble.ScaledToZero
}

// An Observer has an observation of target on conn for the policy being
// gathered: the reconciler's asks the Coalescer without waiting
// (RequestSince), the live check's waits for one bounded by ctx
// (ObserveNow). ok false: none is fresh yet, and the gathering stops there
// (no error).
type Observer func(ctx context.Context, conn kafka.Connection, target kafka.Target) (obs proof.Observation, ok bool, err error)

// Gather learns what p's proof needs at now: a spec problem, or an
// observation through observe and, with it, the selected CronJobs and the
// unselected consumers. An error is transient (a Secret, a connection or
// the CronJobs could not be read, or observe failed): nothing to prove
// from; the Facts gathered so far are returned with it.
func (g *Gatherer) Gather(ctx context.Context, p *rgv1.ConsumerRetentionPolicy, now time.Time, observe Observer) (Facts, error) {
	f := Facts{Policy: Policy(p), Now: now}
	var (
		res     resolve.Resolved
		err     error
		problem = SelectorProblem(p)
	)
	if problem == nil {
		res, err = g.Resolver.Resolve(ctx, p)
	}
	switch {
	case problem != nil || errors.As(err, &problem):
		f.Problem = problem
		return f, nil
	case err != nil:
		return f, err
	}
	f.Servers = res.Connection.BootstrapServers
	target := Target(p)
	target.Cursor, f.CursorProblem = res.Cursor, res.CursorProblem
	obs, ok, err := observe(ctx, res.Connection, target)
	if err != nil || !ok {
		return f, err
	}
	f.Observation = &obs
	if f.CronJobs, err = g.selectedCronJobs(ctx, p, now); err != nil {
		return f, err
	}
	f.Unselected, f.ScaledToZero = g.unselectedConsumers(ctx, p, &obs, f.Servers, now)
	return f, nil
}

// Forget drops what the Gatherer remembers of a deleted policy.
func (g *Gatherer) Forget(key client.ObjectKey) {
	g.unselected.forget(key)
}

// Target is what the observer reads for a policy (its business cursor,
// when it has one, is resolved by the caller: resolve.Resolved.Cursor).
func Target(p *rgv1.ConsumerRetentionPolicy) kafka.Target {
	return kafka.Target{Group: p.Spec.GroupID, Topics: p.Spec.Topics, ReadOffsetsTopic: p.Spec.Kafka.ReadsOffsetsTopic(),
		RecoveryWindow: p.Spec.RecoveryWindow.Duration}
}

// Policy is the spec as internal/proof sees it.
func Policy(p *rgv1.ConsumerRetentionPolicy) proof.Policy {
	pol := proof.Policy{
		UID:                       string(p.UID),
		GroupID:                   p.Spec.GroupID,
		Topics:                    slices.Clone(p.Spec.Topics),
		RecoveryWindow:            p.Spec.RecoveryWindow.Duration,
		AllowInfiniteRetention:    p.Spec.AllowInfiniteRetention,
		AllowSizeBoundedRetention: p.Spec.AllowSizeBoundedRetention,
		ResetFailsLoudly:          p.Spec.Consumer != nil,
	}
	if c := p.Spec.Cursor; c != nil {
		pol.Cursor = &proof.CursorPolicy{ResumeFrom: string(c.ResumeFrom)}
		if pol.Cursor.ResumeFrom == "" {
			pol.Cursor.ResumeFrom = proof.ResumeFromGroupOffsets
		}
	}
	return pol
}
