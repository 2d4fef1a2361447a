package node

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	rgv1 "github.com/retentionguard/retention-guard/api/v1alpha1"
	"github.com/retentionguard/retention-guard/test/e2e/e2eutil"
)

// Scenario 3 — seed 000 for real: the fan-out consumer
// (auto.offset.reset=earliest) is down while retention deletes records it
// never read. Under enforcement Audit the guard lets it start and records
// the rollout; the pod's own log shows the client jumping from its
// committed offset 30 to the new log start 75 — 45 records silently
// skipped, the loss of the write-up. Down past retention a second time,
// with enforcement Deny, the same start is refused with the numbers and no
// pod starts.
func TestSeed000FanoutDownPastRetention(t *testing.T) {
	installed(t)
	ctx := ctxFor(t, 6*time.Minute)
	const ns, topic, group, app = "fanout", "outbox", "fanout", "fanout"
	namespace(t, ns)
	must(t, kafka.CreateTopic(ctx, topic, 1, map[string]string{"retention.ms": strconv.FormatInt((7 * 24 * time.Hour).Milliseconds(), 10)}))
	must(t, kafka.Produce(ctx, topic, 1, 100))
	must(t, kafka.Commit(ctx, group, topic, map[int32]int64{0: 30}))
	key := createPolicy(t, ns, app, group, topic, app, policyOpts{enforcement: "Audit"})
	e2eutil.WaitPolicy(t, admin(), key, time.Minute, "Proven", proven)
	waitGuarded(t, ns)
	must(t, admin().Create(ctx, consumerDeployment(ns, app, group, topic, "earliest", true, 0)))

	// Down past retention: records 0..74 deleted, 30..74 never read.
	must(t, kafka.DeleteRecords(ctx, topic, map[int32]int64{0: 75}))
	p := e2eutil.WaitPolicy(t, admin(), key, time.Minute, "Violated with CommittedOffsetExpired", func(p *rgv1.ConsumerRetentionPolicy) bool {
		return e2eutil.Verdict(p) == "Violated" && e2eutil.Ready(p).Reason == "CommittedOffsetExpired"
	})
	if p.Status.Proof.ExpiredRecords != 45 {
		t.Errorf("expiredRecords = %d, want 45 (offsets 30..74)", p.Status.Proof.ExpiredRecords)
	}

	// Audit: admitted, recorded.
	out, err := kubectl(ctx, "scale", "deployment/"+app, "--namespace", ns, "--replicas=1")
	if err != nil {
		t.Fatalf("under Audit the start must be admitted: %v", err)
	}
	waitEvent(t, ns, "ConsumerRetentionPolicy", app, "RolloutAudited")
	pod := runningPod(t, ns, app)
	c := waitLog(t, ns, pod, "consumed through offset 99", 2*time.Minute, func(c consumed) bool { return c.last[0] == 99 })
	f := c.first[0]
	if f.Offset != 75 || f.Committed != 30 || !f.Reset || f.ResetCause != "OffsetOutOfRange" || f.Skipped != 45 {
		t.Errorf("the consumer's first record: offset %d, committed %d, reset %v (%s), skipped %d; want offset 75 after a reset from 30: 45 skipped",
			f.Offset, f.Committed, f.Reset, f.ResetCause, f.Skipped)
	}
	t.Logf("under Audit the consumer started (kubectl: %s) and its log says: committed %d, first record %d, reset by %s, %d records skipped",
		strings.TrimSpace(out), f.Committed, f.Offset, f.ResetCause, f.Skipped)
	waitCommitted(t, group, topic, map[int32]int64{0: 100})
	_, err = kubectl(ctx, "scale", "deployment/"+app, "--namespace", ns, "--replicas=0")
	must(t, err)
	noPods(t, ns, app)

	// Down past retention again, now under Deny.
	must(t, kafka.Produce(ctx, topic, 1, 100))
	must(t, kafka.DeleteRecords(ctx, topic, map[int32]int64{0: 150}))
	_, err = kubectl(ctx, "patch", "consumerretentionpolicy", app, "--namespace", ns, "--type=merge", "--patch", `{"spec":{"enforcement":"Deny"}}`)
	must(t, err)
	e2eutil.WaitPolicy(t, admin(), key, time.Minute, "Violated with 50 expired records under Deny", func(p *rgv1.ConsumerRetentionPolicy) bool {
		return e2eutil.Verdict(p) == "Violated" && p.Status.Proof.ExpiredRecords == 50 && p.Status.ObservedGeneration == p.Generation
	})
	out, err = kubectl(ctx, "scale", "deployment/"+app, "--namespace", ns, "--replicas=1")
	deniedByWebhook(t, out, err)
	contains(t, "the denial", out, "policy fanout (group fanout)",
		"CommittedOffsetExpired outbox[0]: committed offset 100 is below log start 150: 50 records expired before this group read them")
	var d appsv1.Deployment
	must(t, admin().Get(ctx, client.ObjectKey{Namespace: ns, Name: app}, &d))
	if *d.Spec.Replicas != 0 {
		t.Errorf("the refused scale changed replicas to %d", *d.Spec.Replicas)
	}
}

// waitEvent waits for an event with reason on the object kind/name.
func waitEvent(t *testing.T, ns, kind, name, reason string) corev1.Event {
	t.Helper()
	var found corev1.Event
	waitFor(t, fmt.Sprintf("a %s event on %s %s/%s", reason, kind, ns, name), 2*time.Minute, func() error {
		var evs corev1.EventList
		if err := admin().List(suite, &evs, client.InNamespace(ns)); err != nil {
			return err
		}
		var seen []string
		for _, e := range evs.Items {
			if e.InvolvedObject.Kind == kind && e.InvolvedObject.Name == name {
				if e.Reason == reason {
					found = e
					return nil
				}
				seen = append(seen, e.Reason)
			}
		}
		return fmt.Errorf("events seen: %v", seen)
	})
	return found
}
