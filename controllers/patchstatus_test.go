package controllers

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	rgv1 "github.com/retentionguard/retention-guard/api/v1alpha1"
	"github.com/retentionguard/retention-guard/internal/kafka"
	"github.com/retentionguard/retention-guard/internal/proof"
)

// provenPolicy is a policy as the informer caches it after a periodic
// check of seed 000's outbox consumer: two topics of 12 partitions,
// Proven, with its conditions and proof.
func provenPolicy(tb testing.TB) *rgv1.ConsumerRetentionPolicy {
	tb.Helper()
	t := kafka.Target{Group: "outbox-relay", Topics: []string{"outbox-events", "outbox-retries"}}
	obs := shapeObservation(t, time.Now())
	p := &rgv1.ConsumerRetentionPolicy{
		ObjectMeta: metav1.ObjectMeta{Namespace: "payments", Name: "outbox-relay", UID: types.UID("uid-1"), Generation: 1},
		Spec: rgv1.ConsumerRetentionPolicySpec{GroupID: t.Group, Topics: t.Topics,
			RecoveryWindow: metav1.Duration{Duration: 72 * time.Hour}},
	}
	pol := proof.Policy{UID: string(p.UID), GroupID: t.Group, Topics: t.Topics, RecoveryWindow: 72 * time.Hour}
	out := computeStatus(p.Status, statusInput{Generation: 1, Policy: pol, Now: time.Now(), Observation: &obs,
		Interval: time.Minute, Servers: []string{"kafka-0:9092"}})
	if out.Result == nil || out.Result.Verdict != proof.Proven {
		tb.Fatalf("want a Proven status to start from, got %+v", out.Result)
	}
	p.Status = out.Status
	return p
}

// A periodic check whose facts did not move ends with the status it
// started from: patchStatus must see that without a patch, and must still
// see every change (seed 000: the outbox consumer's proof is rewritten
// when its headroom or verdict moves, and only then).
func TestStatusUnchangedSeesEveryChange(t *testing.T) {
	before := provenPolicy(t)
	cases := []struct {
		name   string
		change func(p *rgv1.ConsumerRetentionPolicy)
		before client.Object
		want   bool
	}{
		{name: "nothing changed", change: func(*rgv1.ConsumerRetentionPolicy) {}, want: true},
		{name: "spec defaulted in memory (not the status)", change: func(p *rgv1.ConsumerRetentionPolicy) {
			p.Spec.CheckInterval = &metav1.Duration{Duration: time.Minute}
		}, want: true},
		{name: "no conditions: nil and empty alike", change: func(p *rgv1.ConsumerRetentionPolicy) {
			p.Status.Conditions = []metav1.Condition{}
		}, before: func() client.Object {
			b := before.DeepCopy()
			b.Status.Conditions = nil
			return b
		}(), want: true},
		{name: "checkedAt moved", change: func(p *rgv1.ConsumerRetentionPolicy) {
			p.Status.Proof.CheckedAt = metav1.NewTime(p.Status.Proof.CheckedAt.Add(time.Minute))
		}},
		{name: "verdict changed", change: func(p *rgv1.ConsumerRetentionPolicy) {
			p.Status.Proof.Verdict = rgv1.Verdict(proof.Unknown)
		}},
		{name: "a condition's message changed", change: func(p *rgv1.ConsumerRetentionPolicy) {
			p.Status.Conditions[0].Message += "."
		}},
		{name: "observedGeneration", change: func(p *rgv1.ConsumerRetentionPolicy) { p.Status.ObservedGeneration++ }},
		{name: "heartbeat named", change: func(p *rgv1.ConsumerRetentionPolicy) {
			p.Status.Heartbeat = &rgv1.HeartbeatReference{Namespace: "retention-guard", Name: "heartbeat-x"}
		}},
		{name: "another kind", change: func(*rgv1.ConsumerRetentionPolicy) {},
			before: &rgv1.ClusterKafkaConnection{}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b := c.before
			if b == nil {
				b = before
			}
			after := before.DeepCopy()
			c.change(after)
			if got := statusUnchanged(b, after); got != c.want {
				t.Fatalf("statusUnchanged = %v, want %v", got, c.want)
			}
			if !c.want {
				return
			}
			// What it skips, the merge patch would have found empty too.
			data, err := client.MergeFrom(b).Data(after)
			if err != nil {
				t.Fatal(err)
			}
			if _, isPolicy := b.(*rgv1.ConsumerRetentionPolicy); isPolicy && c.name != "spec defaulted in memory (not the status)" && string(data) != "{}" {
				t.Fatalf("skipped a status patch that was not empty: %s", data)
			}
		})
	}
	for _, conn := range []struct{ before, after client.Object }{
		{&rgv1.KafkaConnection{}, &rgv1.KafkaConnection{}},
		{&rgv1.ClusterKafkaConnection{}, &rgv1.ClusterKafkaConnection{}},
	} {
		if !statusUnchanged(conn.before, conn.after) {
			t.Errorf("%T: equal statuses not seen as unchanged", conn.before)
		}
	}
	changed := &rgv1.ClusterKafkaConnection{}
	changed.Status.ObservedGeneration = 2
	if statusUnchanged(&rgv1.ClusterKafkaConnection{}, changed) {
		t.Error("ClusterKafkaConnection: a changed status seen as unchanged")
	}
}

// BenchmarkUnchangedStatus is the cost of finding that a periodic check
// left a Proven status as it was: by the merge patch (JSON-encoding both
// objects and diffing them, as every check did) and by semantic equality
// first (issue 34: 12% of the manager's CPU at 20,000 policies).
func BenchmarkUnchangedStatus(b *testing.B) {
	before := provenPolicy(b)
	after := before.DeepCopy()
	b.Run("merge-patch", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			data, err := client.MergeFrom(before).Data(after)
			if err != nil || string(data) != "{}" {
				b.Fatalf("%s %v", data, err)
			}
		}
	})
	b.Run("semantic-equal", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if !statusUnchanged(before, after) {
				b.Fatal("changed")
			}
		}
	})
}
