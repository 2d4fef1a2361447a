package node

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	rgv1 "github.com/retentionguard/retention-guard/api/v1alpha1"
	"github.com/retentionguard/retention-guard/test/e2e/e2eutil"
)

// Scenario 2 — seed 003 for real: a settlement batch consumer
// (enable.auto.commit=true, auto.offset.reset=latest, as in the write-up)
// runs, consumes and commits, and is scaled to 0. While it is down its
// group's offsets expire and retention moves the log start. `kubectl scale
// --replicas=1` is refused with the numbers — without the guard the
// consumer would have jumped to latest, silently skipping every task
// written while it was down. The team restores the group's position from
// its own records (offset 100: the last settled task + 1); the same scale
// is admitted and the pod's own log proves it resumed exactly there and
// skipped nothing.
func TestSeed003BatchConsumerWhoseOffsetsExpired(t *testing.T) {
	installed(t)
	ctx := ctxFor(t, 8*time.Minute)
	const ns, topic, group, app = "settlement", "settle-task", "ledger-settle-consumer", "settle"
	namespace(t, ns)
	must(t, kafka.CreateTopic(ctx, topic, 3, map[string]string{"retention.ms": strconv.FormatInt((30 * 24 * time.Hour).Milliseconds(), 10)}))
	must(t, kafka.Produce(ctx, topic, 3, 100))
	// The group has run for months: it settled the tasks up to offset 39.
	must(t, kafka.Commit(ctx, group, topic, map[int32]int64{0: 40, 1: 40, 2: 40}))

	created := time.Now()
	key := createPolicy(t, ns, app, group, topic, app, policyOpts{})
	e2eutil.WaitPolicy(t, admin(), key, time.Minute, "with a first proof", func(p *rgv1.ConsumerRetentionPolicy) bool { return p.Status.Proof != nil })
	report.add("policy created → first proof in status", time.Since(created))
	e2eutil.WaitPolicy(t, admin(), key, time.Minute, "Proven", proven)
	waitGuarded(t, ns)

	// A normal run: it reads everything and auto-commits.
	must(t, admin().Create(ctx, consumerDeployment(ns, app, group, topic, "latest", true, 1)))
	pod1 := runningPod(t, ns, app)
	run1 := waitLog(t, ns, pod1, "consumed offsets 40..99 of 3 partitions", 2*time.Minute, func(c consumed) bool {
		return len(c.first) == 3 && c.last[0] == 99 && c.last[1] == 99 && c.last[2] == 99
	})
	for p, f := range run1.first {
		if f.Offset != 40 || f.Reset {
			t.Errorf("first run, partition %d: first offset %d (reset %v), want 40 from the committed offset", p, f.Offset, f.Reset)
		}
	}
	waitCommitted(t, group, topic, map[int32]int64{0: 100, 1: 100, 2: 100})
	_, err := kubectl(ctx, "scale", "deployment/"+app, "--namespace", ns, "--replicas=0")
	must(t, err) // a scale-down is never refused
	noPods(t, ns, app)

	// Eight days down: new tasks arrive (100..249), retention deletes the
	// oldest (log start 70: all of them settled), and the empty group's
	// offsets expire.
	must(t, kafka.Produce(ctx, topic, 3, 150))
	must(t, kafka.DeleteRecords(ctx, topic, map[int32]int64{0: 70, 1: 70, 2: 70}))
	expireGroupOffsets(t, group, topic)

	p := e2eutil.WaitPolicy(t, admin(), key, time.Minute, "Violated with NoCommittedOffset", func(p *rgv1.ConsumerRetentionPolicy) bool {
		return e2eutil.Verdict(p) == "Violated" && e2eutil.Ready(p).Reason == "NoCommittedOffset"
	})
	start := time.Now()
	out, err := kubectl(ctx, "scale", "deployment/"+app, "--namespace", ns, "--replicas=1")
	kubectlScale := time.Since(start)
	deniedByWebhook(t, out, err)
	t.Logf("kubectl scale --replicas=1 refused in %s:\n%s", kubectlScale.Round(time.Millisecond), out)
	contains(t, "the denial", out,
		"Deployment "+ns+"/"+app,
		"policy "+app+" (group "+group+")",
		"NoCommittedOffset on 3 partitions of settle-task", "no committed offset while log start is 70",
		p.Status.Proof.ProofID)
	measureDeniedScale(t, ns, app, kubectlScale)
	var d appsv1.Deployment
	must(t, admin().Get(ctx, client.ObjectKey{Namespace: ns, Name: app}, &d))
	if *d.Spec.Replicas != 0 {
		t.Fatalf("the refused scale changed replicas to %d", *d.Spec.Replicas)
	}

	// Recovery: the team restores the position it had settled up to (its
	// own records say 100); records 100..249 are still retained.
	must(t, kafka.Commit(ctx, group, topic, map[int32]int64{0: 100, 1: 100, 2: 100}))
	e2eutil.WaitPolicy(t, admin(), key, time.Minute, "Proven after the recovery", proven)
	if _, err := kubectl(ctx, "scale", "deployment/"+app, "--namespace", ns, "--replicas=1"); err != nil {
		t.Fatalf("the same scale after the recovery: %v", err)
	}
	pod2 := runningPod(t, ns, app, pod1)
	run2 := waitLog(t, ns, pod2, "consumed offsets 100..249 of 3 partitions", 2*time.Minute, func(c consumed) bool {
		return len(c.first) == 3 && c.last[0] == 249 && c.last[1] == 249 && c.last[2] == 249
	})
	for _, part := range sortedPartitions(run2.first) {
		f := run2.first[part]
		if f.Offset != 100 || f.Committed != 100 || f.Reset || f.Skipped != 0 {
			t.Errorf("after the recovery, partition %d: first offset %d, committed %d, reset %v (%s), skipped %d; want 100 = the restored position, nothing skipped",
				part, f.Offset, f.Committed, f.Reset, f.ResetCause, f.Skipped)
		}
	}
	if len(run2.gaps) > 0 {
		t.Errorf("the consumer logged gaps: %+v", run2.gaps)
	}
	t.Logf("after the recovery pod %s resumed at %v and read through 249 with no gap", pod2, firstOffsets(run2))
	_, err = kubectl(ctx, "scale", "deployment/"+app, "--namespace", ns, "--replicas=0")
	must(t, err)
}

// expireGroupOffsets shortens kfake's offset expiry knob until the group's
// offsets are gone, then restores it (the proof keeps reading the real
// offsets.retention.minutes).
func expireGroupOffsets(t *testing.T, group, topic string) {
	t.Helper()
	ctx := ctxFor(t, time.Minute)
	must(t, kafka.SetBrokerConfig(ctx, "offset.retention.ms", "500"))
	defer func() { must(t, kafka.SetBrokerConfig(context.Background(), "offset.retention.ms", "86400000")) }()
	waitFor(t, "group "+group+"'s offsets expired", 30*time.Second, func() error {
		c, err := kafka.Committed(ctx, group, topic)
		if err != nil {
			return err
		}
		if len(c) > 0 {
			return fmt.Errorf("still committed: %v", c)
		}
		return nil
	})
}

// waitCommitted waits until group's committed offsets on topic are want.
func waitCommitted(t *testing.T, group, topic string, want map[int32]int64) {
	t.Helper()
	waitFor(t, fmt.Sprintf("group %s committed %v", group, want), time.Minute, func() error {
		got, err := kafka.Committed(suite, group, topic)
		if err != nil {
			return err
		}
		for p, o := range want {
			if got[p] != o {
				return fmt.Errorf("committed %v", got)
			}
		}
		return nil
	})
}

func sortedPartitions(m map[int32]logLine) []int32 {
	var ps []int32
	for p := range m {
		ps = append(ps, p)
	}
	slices.Sort(ps)
	return ps
}

func firstOffsets(c consumed) map[int32]int64 {
	out := map[int32]int64{}
	for p, f := range c.first {
		out[p] = f.Offset
	}
	return out
}

// measureDeniedScale times refused scales through the API server and the
// webhook's Service: kubectl (a process per call, what a person sees) and
// the scale subresource from a client (the API round trip).
func measureDeniedScale(t *testing.T, ns, name string, first time.Duration) {
	t.Helper()
	ctx := ctxFor(t, 2*time.Minute)
	var api []time.Duration
	d := &appsv1.Deployment{}
	d.Namespace, d.Name = ns, name
	for range 30 {
		s := &autoscalingv1.Scale{Spec: autoscalingv1.ScaleSpec{Replicas: 1}}
		start := time.Now()
		err := admin().SubResource("scale").Update(ctx, d, client.WithSubResourceBody(s))
		api = append(api, time.Since(start))
		if err == nil {
			t.Fatal("a scale from 0 was admitted while the proof fails")
		}
	}
	var cli []time.Duration
	for range 5 {
		start := time.Now()
		_, err := kubectl(ctx, "scale", "deployment/"+name, "--namespace", ns, "--replicas=1")
		cli = append(cli, time.Since(start))
		if err == nil {
			t.Fatal("kubectl scale was admitted while the proof fails")
		}
	}
	report.addf("denied scale from 0 through the webhook's Service: API round trip p50 %s, p95 %s, max %s (30 calls); kubectl scale wall time p50 %s (first %s)",
		pct(api, 50), pct(api, 95), pct(api, 100), pct(cli, 50), first.Round(time.Millisecond))
}

func pct(ds []time.Duration, p int) time.Duration {
	s := slices.Clone(ds)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	i := (len(s)*p + 99) / 100
	if i > 0 {
		i--
	}
	return s[min(i, len(s)-1)].Round(100 * time.Microsecond)
}
