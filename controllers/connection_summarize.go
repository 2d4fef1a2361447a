package controllers

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/retentionguard/retention-guard/internal/proof"
)

// The end of a connection reconcile, in the shape of the policy's
// (summarize.go): one patch of the status computed in memory, then result
// processors that act on what was written (metrics, the Ready transition
// event).

// connectionSummary is what one connection reconcile decided, handed to
// summarizeAndPatch: the connection as it was read (before) and the status
// computed from what it gathered (with the judgements the metrics count).
type connectionSummary struct {
	before  client.Object
	outcome connectionOutcome
}

// summarizeAndPatch writes the computed status (one merge patch, when it
// changed) and then runs the result processors on it: record the
// connection's metrics, and an event when Ready changed. A failed patch
// stops there: nothing is counted or announced that was not written.
func (r *KafkaConnectionReconciler) summarizeAndPatch(ctx context.Context, key types.NamespacedName, conn connectionObject, s connectionSummary) error {
	*conn.status() = s.outcome.Status
	if err := r.patchStatus(ctx, s.before, conn.object()); err != nil {
		return fmt.Errorf("patching status: %w", err)
	}
	connectionMetricsState.record(r.owner(key), s.outcome)
	r.announce(key, conn, s.outcome)
	return nil
}

// announce records the event a change of the connection's Ready
// condition deserves (lastReady.transition), if any.
func (r *KafkaConnectionReconciler) announce(key types.NamespacedName, conn connectionObject, outcome connectionOutcome) {
	ready := meta.FindStatusCondition(outcome.Status.Conditions, proof.ClauseReady)
	if ready == nil {
		return
	}
	if ev := r.ready.transition(key, conn.GetUID(), *ready); ev != nil {
		r.Recorder.Eventf(conn.object(), nil, ev.Type, ev.Reason, EventActionObserve, "%s", ev.Note)
	}
}
