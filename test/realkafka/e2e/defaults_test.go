package e2e

import (
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/retentionguard/retention-guard/internal/kafka/apachekafka"
	"github.com/retentionguard/retention-guard/test/e2e/e2eutil"
	"github.com/retentionguard/retention-guard/test/e2e/stack"
)

// Issue 32, through the manager and the webhook, on Apache Kafka 3.9 and
// 4.4 as deployed (broker defaults, no topic override) with the chart's
// default policy settings (spec.kafka.readOffsetsTopic left out): seed
// 003's batch group between runs (Empty, caught up), a lagging Empty
// group, and seed 000's outbox relay (a simple group whose partitions sat
// idle after its commit) are each Proven on exact times, where on 3.x the
// bounds left them Unknown and their rollouts refused; the batch
// consumer's start (a scale from zero, checked live) and a new image of
// it are allowed.
func TestAsDeployedHealthyGroupsAdmittedByDefault(t *testing.T) {
	for _, d := range []apachekafka.Dist{oldest, newest} {
		t.Run(d.Line(), func(t *testing.T) {
			t.Parallel()
			b := apachekafka.Start(t, d, apachekafka.AsDeployed())
			k, err := stack.DialKafka(b.Addrs()...)
			e2eutil.Must(t, err)
			defer k.Close()
			ctx := e2eutil.Ctx(t)
			ns := "defaults-" + strings.ReplaceAll(d.Line(), ".", "-")
			const topic = "settle-task"
			stk.Admin().Namespace(t, ns)
			e2eutil.Must(t, k.CreateTopic(ctx, topic, 3, nil))
			e2eutil.Must(t, k.Produce(ctx, topic, 3, 100))
			e2eutil.Must(t, k.CommitAsMember(ctx, "settle-batch", topic, map[int32]int64{0: 100, 1: 100, 2: 100}))
			e2eutil.Must(t, k.CommitAsMember(ctx, "settle-lagging", topic, map[int32]int64{0: 50, 1: 50, 2: 50}))
			e2eutil.Must(t, k.Commit(ctx, "outbox-relay", topic, map[int32]int64{0: 100, 1: 100, 2: 100}))

			for _, group := range []string{"settle-batch", "settle-lagging", "outbox-relay"} {
				// Created without readOffsetsTopic (policy sets no such
				// field); Create returns the object as the API server
				// stored it, defaulted.
				p := policy(t, ns, group, topic, group, b.Addrs()[0], 72*time.Hour)
				if r := p.Spec.Kafka.ReadOffsetsTopic; r == nil || !*r {
					t.Errorf("%s: the API server stored readOffsetsTopic %v, want its default true", group, r)
				}
				got := stk.Admin().WaitPolicy(t, client.ObjectKeyFromObject(p), 90*time.Second, "Proven on exact times", e2eutil.Proven)
				if ps := got.Status.Proof; ps == nil || ps.OffsetExpiry == nil || !ps.OffsetExpiry.Exact {
					t.Errorf("%s: Proven, but not on exact times: %s", group, e2eutil.Describe(got))
				}
				for _, f := range got.Status.Proof.WarningFacts {
					if f.Type == "offsetsTopic" {
						t.Errorf("%s: __consumer_offsets not read: %s %s", group, f.Reason, f.Detail)
					}
				}
			}

			// The batch consumer starts (a scale from zero: a live check)
			// and ships a new image: both allowed.
			e2eutil.Must(t, deployment(t, ns, "settle", "settle-batch", 0))
			if err := stk.Admin().Scale(t, ns, "settle", 1); err != nil {
				t.Errorf("the start of a Proven group was refused: %v", err)
			}
			if err := stk.Admin().Rollout(t, ns, "settle", "v2"); err != nil {
				t.Errorf("the new image of a Proven group was refused: %v", err)
			}
		})
	}
}
