package webhook

import (
	"context"
	"strings"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"

	rgv1 "github.com/retentionguard/retention-guard/api/v1alpha1"
	"github.com/retentionguard/retention-guard/internal/coalesce"
	"github.com/retentionguard/retention-guard/internal/kafka"
	"github.com/retentionguard/retention-guard/internal/proof"
)

// stuckObserver answers no observation until released: a Kafka cluster
// slow enough that its live passes hold their slots.
type stuckObserver struct{ release chan struct{} }

func (o stuckObserver) ObserveCluster(ctx context.Context, _ kafka.Connection, req kafka.ClusterRequest) kafka.ClusterObservation {
	select {
	case <-o.release:
	case <-ctx.Done():
	}
	return kafka.ClusterObservation{Observations: make([]proof.Observation, len(req.Targets))}
}

func (stuckObserver) Forget(kafka.Connection) {}

// Issue 34, seed 000 at scale: one manager behind on its proofs, so a
// rollout of the settlement consumer is checked live, while every live
// slot of its Kafka connection is held by other groups' live checks on a
// slow cluster. The rollout is refused (fail closed) within the webhook's
// live-check deadline, and the denial says why — the busy connection and
// the flag that bounds it — not only that time ran out: the coalescer
// gives up on a slot just before the deadline the handler waits on.
func TestHandlerLiveCheckOnABusyConnectionSaysWhy(t *testing.T) {
	obs := stuckObserver{release: make(chan struct{})}
	c := coalesce.New(obs, coalesce.Options{LiveChecks: 1, PassTimeout: time.Minute})
	t.Cleanup(func() { close(obs.release); c.Close() })
	conn := kafka.Connection{BootstrapServers: []string{"kafka-0.settlement:9092"}}
	// Another group's live check holds the one slot.
	go func() {
		_, _ = c.ObserveNow(context.Background(), conn, kafka.Target{Group: "ledger-report", Topics: []string{"report"}})
	}()
	time.Sleep(50 * time.Millisecond)

	live := &fixedLive{fn: func(ctx context.Context, p *rgv1.ConsumerRetentionPolicy) (*rgv1.ProofStatus, error) {
		_, err := c.ObserveNow(ctx, conn, kafka.Target{Group: p.Spec.GroupID, Topics: p.Spec.Topics})
		return nil, err
	}}
	h, _, _ := newTestHandler(t, Options{LiveChecker: live, LiveCheckTimeout: 400 * time.Millisecond},
		settlePolicy(withProof(proven(), time.Hour))) // stale: checked live
	changed := settleTemplate()
	changed.Spec.Containers[0].Image = "settle:v2"
	start := time.Now()
	msg := denied(t, h.Handle(context.Background(), request(t, admissionv1.Update, "deployments",
		deployment("settlement", "settle", 1, changed), deployment("settlement", "settle", 1, settleTemplate()), false)))
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("the refusal took %v: the live check was not bounded by its deadline", took)
	}
	for _, want := range []string{ReasonLiveCheckFailed, "live checks were already observing this Kafka connection", "--live-checks-per-connection"} {
		if !strings.Contains(msg, want) {
			t.Errorf("denial lacks %q:\n%s", want, msg)
		}
	}
}
