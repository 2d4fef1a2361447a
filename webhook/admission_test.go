package webhook

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	rgv1 "github.com/retentionguard/retention-guard/api/v1alpha1"
	"github.com/retentionguard/retention-guard/internal/shard"
)

// The admission contract's rows, through a real kube-apiserver calling the
// webhook over TLS with the generated ValidatingWebhookConfiguration.

// Row "UPDATE that scales from 0 to more", seed 003: the daily batch
// consumer was scaled to zero, stayed down 8 days, and its group's offsets
// expired (NoCommittedOffset on all 24 partitions). `kubectl scale
// --replicas=1` is denied with the numbers and the way out; so is the same
// change as a patch of spec.replicas.
func TestScaleFromZeroAfterOffsetsExpiredIsDenied(t *testing.T) {
	s := startSuite(t)
	ns := s.newNamespace(t, "settlement")
	s.createPolicy(t, ns, rgv1.EnforcementDeny, noCommittedOffset(), 20*time.Second)
	d := settleDeployment(ns, "settle", 0)
	if err := s.alice.Create(ctxFor(t), d); err != nil {
		t.Fatalf("creating the consumer scaled to zero is not a rollout, yet: %v", err)
	}

	deniedBefore := testutil.ToFloat64(decisionsTotal.WithLabelValues("Deployment", string(outcomeDenied)))
	_, stderr, err := s.kubectl("scale", "deployment/settle", "--replicas=1", "-n", ns)
	if err == nil {
		t.Fatal("kubectl scale --replicas=1 succeeded; want it refused")
	}
	t.Logf("kubectl scale said (%d bytes):\n%s", len(stderr), stderr)
	if len(strings.TrimSpace(stderr)) > 1024 {
		t.Errorf("kubectl printed %d bytes, over 1 KiB", len(strings.TrimSpace(stderr)))
	}
	mustContain(t, stderr,
		`admission webhook "workloads.retentionguard.io" denied the request`,
		"retention-guard refused this rollout (scale from zero) of Deployment "+ns+"/settle",
		"policy ledger-settle-consumer (group ledger-settle-consumer) is Violated (proof 7f3a9c21, checked ",
		"24 partitions, 24 without a committed offset",
		"- NoCommittedOffset on 24 partitions of settle-task, e.g. settle-task[19]: no committed offset while log start is 193946",
		"kafka-consumer-groups --bootstrap-server kafka-0.kafka.kafka.svc:9093 --group ledger-settle-consumer --topic settle-task --reset-offsets --to-earliest --execute",
		"retentionguard.io/override-proof=7f3a9c21")
	if got := testutil.ToFloat64(decisionsTotal.WithLabelValues("Deployment", string(outcomeDenied))); got != deniedBefore+1 {
		t.Errorf("retentionguard_admission_decisions_total{kind=Deployment,decision=denied} went %v → %v, want +1", deniedBefore, got)
	}

	patch := client.RawPatch(types.MergePatchType, []byte(`{"spec":{"replicas":2}}`))
	mustDeny(t, s.alice.Patch(ctxFor(t), d, patch))

	var got appsv1.Deployment
	if err := s.admin.Get(ctxFor(t), client.ObjectKeyFromObject(d), &got); err != nil || *got.Spec.Replicas != 0 {
		t.Errorf("the Deployment was scaled anyway: %v replicas (err %v)", got.Spec.Replicas, err)
	}
}

// Row "everything else is always allowed": scale-downs of the same guarded
// consumer while its proof fails — the incident response — go through, and
// the API server does not even call the webhook (matchConditions).
func TestScaleDownIsNeverRefused(t *testing.T) {
	s := startSuite(t)
	ns := s.newNamespace(t, "settlement")
	p := s.createPolicy(t, ns, rgv1.EnforcementDeny, proven(), 0)
	d := settleDeployment(ns, "settle", 3)
	if err := s.alice.Create(ctxFor(t), d); err != nil {
		t.Fatalf("rollout under a proven policy refused: %v", err)
	}
	s.setProof(t, p, noCommittedOffset(), 0)

	calls := func() float64 {
		var n float64
		for _, o := range []outcome{outcomeAllowed, outcomeDenied, outcomeWarned, outcomeAudited, outcomeOverridden, outcomeSkipped, outcomeError} {
			n += testutil.ToFloat64(decisionsTotal.WithLabelValues("Deployment", string(o)))
		}
		return n
	}
	before := calls()
	if out, stderr, err := s.kubectl("scale", "deployment/settle", "--replicas=1", "-n", ns); err != nil {
		t.Fatalf("kubectl scale 3→1 refused: %v\n%s%s", err, out, stderr)
	}
	if err := s.alice.Patch(ctxFor(t), d, client.RawPatch(types.MergePatchType, []byte(`{"spec":{"replicas":0}}`))); err != nil {
		t.Fatalf("scale 1→0 refused: %v", err)
	}
	if err := s.alice.Patch(ctxFor(t), d, client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"labels":{"team":"ledger"}}}`))); err != nil {
		t.Fatalf("a metadata-only change refused: %v", err)
	}
	if after := calls(); after != before {
		t.Errorf("the webhook was called %v times for scale-downs and metadata: matchConditions should keep the API server from calling it", after-before)
	}
	var got appsv1.Deployment
	if err := s.admin.Get(ctxFor(t), client.ObjectKeyFromObject(d), &got); err != nil || *got.Spec.Replicas != 0 {
		t.Errorf("replicas %v after scaling down (err %v)", got.Spec.Replicas, err)
	}
}

// Rows "UPDATE that changes the pod template" and "matching ... new or
// old": a template change that drops the selected label still meets the
// policy and is denied; so is unpausing.
func TestTemplateChangeDroppingTheLabelIsStillDenied(t *testing.T) {
	s := startSuite(t)
	ns := s.newNamespace(t, "settlement")
	p := s.createPolicy(t, ns, rgv1.EnforcementDeny, proven(), 0)
	d := settleDeployment(ns, "settle", 2)
	d.Spec.Paused = true
	if err := s.alice.Create(ctxFor(t), d); err != nil {
		t.Fatalf("rollout under a proven policy refused: %v", err)
	}
	s.setProof(t, p, noCommittedOffset(), 0)

	escape := d.DeepCopy()
	delete(escape.Spec.Template.Labels, "app")
	escape.Spec.Template.Spec.Containers[0].Image = "settle:2"
	msg := mustDeny(t, s.alice.Update(ctxFor(t), escape))
	mustContain(t, msg, "rollout (pod template change) of Deployment "+ns+"/settle", "policy ledger-settle-consumer")

	unpause := d.DeepCopy()
	unpause.Spec.Paused = false
	msg = mustDeny(t, s.alice.Update(ctxFor(t), unpause))
	mustContain(t, msg, "rollout (unpause) of Deployment "+ns+"/settle")
}

// Row "the consumer env clause": KAFKA_AUTO_OFFSET_RESET=earliest is
// denied even while the group's proof is Proven, and cannot be overridden.
func TestEarliestIsDeniedWhileTheProofHolds(t *testing.T) {
	s := startSuite(t)
	ns := s.newNamespace(t, "settlement")
	s.createPolicy(t, ns, rgv1.EnforcementDeny, proven(), 0)
	d := settleDeployment(ns, "settle", 1)
	d.Annotations = map[string]string{OverrideAnnotation: "7f3a9c21"}
	d.Spec.Template.Spec.Containers[0].Env[0].Value = "earliest"
	msg := mustDeny(t, s.alice.Create(ctxFor(t), d))
	mustContain(t, msg,
		"has a proven group but not its consumer settings",
		`OffsetResetSilent container settle: KAFKA_AUTO_OFFSET_RESET="earliest" (env): the client skips silently`,
		"consumer settings cannot be overridden")

	d = settleDeployment(ns, "settle", 1)
	d.Spec.Template.Spec.Containers[0].Env[1].Value = "true"
	mustContain(t, mustDeny(t, s.alice.Create(ctxFor(t), d)), `AutoCommitEnabled container settle: KAFKA_ENABLE_AUTO_COMMIT="true"`)

	d = settleDeployment(ns, "settle", 1) // none and false
	if err := s.alice.Create(ctxFor(t), d); err != nil {
		t.Fatalf("a consumer that fails loudly, under a proven policy, was refused: %v", err)
	}
}

// Row "the consumer env clause ... configMapKeyRef": values come from
// ConfigMaps read at admission time (created just before the workload),
// through valueFrom and envFrom; a missing ConfigMap is a violation unless
// the reference is optional, which leaves the variable undeclared.
func TestConsumerSettingsFromConfigMaps(t *testing.T) {
	s := startSuite(t)
	ns := s.newNamespace(t, "settlement")
	s.createPolicy(t, ns, rgv1.EnforcementDeny, proven(), 0)
	cm := func(name string, data map[string]string) {
		t.Helper()
		if err := s.admin.Create(ctxFor(t), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Data: data}); err != nil {
			t.Fatal(err)
		}
	}
	cm("kafka-safe", map[string]string{"reset": "none", "commit": "false"})
	cm("kafka-latest", map[string]string{"reset": "latest", "commit": "false"})
	cm("kafka-env", map[string]string{resetEnv: "error", commitEnv: "false"})

	withRefs := func(name, cmName string, optional bool) *appsv1.Deployment {
		d := settleDeployment(ns, name, 1)
		d.Spec.Template.Spec.Containers[0].Env = []corev1.EnvVar{
			{Name: resetEnv, ValueFrom: cmKey(cmName, "reset", optional)},
			{Name: commitEnv, ValueFrom: cmKey(cmName, "commit", optional)},
		}
		return d
	}
	if err := s.alice.Create(ctxFor(t), withRefs("safe", "kafka-safe", false)); err != nil {
		t.Errorf("configMapKeyRef to none/false refused: %v", err)
	}
	mustContain(t, mustDeny(t, s.alice.Create(ctxFor(t), withRefs("latest", "kafka-latest", false))),
		`OffsetResetSilent container settle: KAFKA_AUTO_OFFSET_RESET="latest" (ConfigMap kafka-latest key reset)`)
	mustContain(t, mustDeny(t, s.alice.Create(ctxFor(t), withRefs("missing", "kafka-missing", false))),
		"OffsetResetUnresolvable container settle: ConfigMap kafka-missing does not exist")
	mustContain(t, mustDeny(t, s.alice.Create(ctxFor(t), withRefs("optional", "kafka-missing", true))),
		"OffsetResetNotDeclared container settle", "AutoCommitNotDeclared container settle")

	envFrom := settleDeployment(ns, "envfrom", 1)
	envFrom.Spec.Template.Spec.Containers[0].Env = nil
	envFrom.Spec.Template.Spec.Containers[0].EnvFrom = []corev1.EnvFromSource{envFromCM("kafka-env", "", false)}
	if err := s.alice.Create(ctxFor(t), envFrom); err != nil {
		t.Errorf("envFrom ConfigMap with error/false refused: %v", err)
	}
}

// Row "Warn → allowed with AdmissionResponse warnings": the client sees
// them (each ≤ 120 characters), and the policy gets an event.
func TestWarnPolicyWarnsTheClient(t *testing.T) {
	s := startSuite(t)
	ns := s.newNamespace(t, "settlement")
	p := s.createPolicy(t, ns, rgv1.EnforcementWarn, noCommittedOffset(), 0)
	s.warns.take()
	if err := s.alice.Create(ctxFor(t), settleDeployment(ns, "settle", 1)); err != nil {
		t.Fatalf("a Warn policy refused the rollout: %v", err)
	}
	ws := s.warns.take()
	t.Logf("warnings: %q", ws)
	if len(ws) == 0 {
		t.Fatal("the client received no warning")
	}
	mustContain(t, strings.Join(ws, "\n"),
		"retention-guard: ledger-settle-consumer is Violated (proof 7f3a9c21); allowed by enforcement Warn",
		"retention-guard: ledger-settle-consumer: NoCommittedOffset settle-task[0]")
	for _, w := range ws {
		if len(w) > 120 {
			t.Errorf("warning of %d characters: %q", len(w), w)
		}
	}
	s.waitEvent(t, p, EventRolloutWarned, "Deployment "+ns+"/settle (create) requested by alice")
}

// Row "Audit → allowed, event and metric only": no warning, an event on
// the policy, the audited counter.
func TestAuditAllowsAndRecordsAnEvent(t *testing.T) {
	s := startSuite(t)
	ns := s.newNamespace(t, "settlement")
	p := s.createPolicy(t, ns, rgv1.EnforcementAudit, noCommittedOffset(), 0)
	before := testutil.ToFloat64(decisionsTotal.WithLabelValues("StatefulSet", string(outcomeAudited)))
	s.warns.take()
	if err := s.alice.Create(ctxFor(t), settleStatefulSet(ns, "settle", 1)); err != nil {
		t.Fatalf("an Audit policy refused the rollout: %v", err)
	}
	if ws := s.warns.take(); len(ws) != 0 {
		t.Errorf("Audit showed the client warnings: %q", ws)
	}
	note := s.waitEvent(t, p, EventRolloutAudited, "would refuse StatefulSet "+ns+"/settle (create) requested by alice")
	mustContain(t, note, "Violated (proof 7f3a9c21)", "NoCommittedOffset settle-task[0]")
	if got := testutil.ToFloat64(decisionsTotal.WithLabelValues("StatefulSet", string(outcomeAudited))); got != before+1 {
		t.Errorf("audited counter went %v → %v", before, got)
	}
}

// Row "dry-run requests get the same answer and no side effects".
func TestDryRunSameAnswerNoEvents(t *testing.T) {
	s := startSuite(t)
	ns := s.newNamespace(t, "settlement")
	p := s.createPolicy(t, ns, rgv1.EnforcementDeny, noCommittedOffset(), 0)

	dry := mustDeny(t, s.alice.Create(ctxFor(t), settleDeployment(ns, "settle", 1), client.DryRunAll))
	real := mustDeny(t, s.alice.Create(ctxFor(t), settleDeployment(ns, "settle", 1)))
	// The same answer, but for "checked Ns ago", which may tick between the two.
	norm := func(m string) string {
		i := strings.Index(m, "checked ")
		j := strings.Index(m[i:], ")")
		return m[:i] + m[i+j:]
	}
	if norm(dry) != norm(real) {
		t.Errorf("dry-run answered differently:\n%s\n---\n%s", dry, real)
	}

	// With the right override, a dry-run passes and records no override.
	over := settleDeployment(ns, "dry-override", 1)
	over.Annotations = map[string]string{OverrideAnnotation: "7f3a9c21"}
	if err := s.alice.Create(ctxFor(t), over, client.DryRunAll); err != nil {
		t.Fatalf("dry-run with the right override refused: %v", err)
	}

	// Events are written in order: once the real request's event is there,
	// a dry-run event would be too.
	s.waitEvent(t, p, EventRolloutDenied, "refused Deployment "+ns+"/settle (create)")
	if n := len(s.policyEvents(t, p, EventRolloutDenied)); n != 1 {
		t.Errorf("%d RolloutDenied events; want 1, from the real request only", n)
	}
	if notes := s.policyEvents(t, p, EventProofOverridden); len(notes) != 0 {
		t.Errorf("a dry-run recorded an override: %q", notes)
	}
}

// Row "override": the workload's annotation with the current proofID lets
// the rollout through and is recorded with the user; a stale ID is refused
// with a message saying the current one.
func TestOverrideAnnotation(t *testing.T) {
	s := startSuite(t)
	ns := s.newNamespace(t, "settlement")
	p := s.createPolicy(t, ns, rgv1.EnforcementDeny, noCommittedOffset(), 0)

	stale := settleDeployment(ns, "settle", 1)
	stale.Annotations = map[string]string{OverrideAnnotation: "1a2b3c4d"}
	msg := mustDeny(t, s.alice.Create(ctxFor(t), stale))
	// Refused on create: nothing is stored to annotate, so the denial
	// says to fix the manifest.
	mustContain(t, msg, "Override refused: the annotation (1a2b3c4d) is not its current proof ID 7f3a9c21.",
		"Or roll out knowingly: add to the manifest's metadata.annotations, then apply it again:\n  retentionguard.io/override-proof: \"7f3a9c21\"")
	mustLack(t, msg, "kubectl annotate")

	right := settleDeployment(ns, "settle", 1)
	right.Annotations = map[string]string{OverrideAnnotation: "7f3a9c21"}
	s.warns.take()
	if err := s.alice.Create(ctxFor(t), right); err != nil {
		t.Fatalf("the current proof ID did not override: %v", err)
	}
	mustContain(t, strings.Join(s.warns.take(), "\n"), "retention-guard: policy ledger-settle-consumer overridden (retentionguard.io/override-proof=7f3a9c21)")
	note := s.waitEvent(t, p, EventProofOverridden, "alice rolled out Deployment "+ns+"/settle (create) over proof 7f3a9c21")
	t.Logf("event: %s", note)

	// The gap moves (a new proof ID): the annotation left on the workload
	// no longer covers a new rollout.
	moved := noCommittedOffset()
	moved.ProofID = "c0ffee00"
	s.setProof(t, p, moved, 0)
	right.Spec.Template.Spec.Containers[0].Image = "settle:2"
	mustContain(t, mustDeny(t, s.alice.Update(ctxFor(t), right)), "is not its current proof ID c0ffee00")
}

// Row "decision ... else a live check with a bounded deadline": a stale
// status proof is re-proved live; a live check that fails or hangs makes
// the verdict Unknown, which Deny refuses within the live-check deadline.
func TestStaleProofLiveCheck(t *testing.T) {
	s := startSuite(t)
	ns := s.newNamespace(t, "settlement")
	s.createPolicy(t, ns, rgv1.EnforcementDeny, proven(), time.Hour)

	s.live.set(ns, func(context.Context, *rgv1.ConsumerRetentionPolicy) (*rgv1.ProofStatus, error) {
		return nil, errFake("dial tcp 10.0.0.9:9093: connect: connection refused")
	})
	msg := mustDeny(t, s.alice.Create(ctxFor(t), settleDeployment(ns, "settle", 1)))
	mustContain(t, msg, "is Unknown", "LiveCheckFailed: the live check failed: dial tcp 10.0.0.9:9093: connect: connection refused")

	// The live check is handed a deadline of at most liveTimeout, below
	// the webhook's TimeoutSeconds; it hangs past it, ignoring its context.
	// The answer is the webhook's own denial naming the live-check
	// deadline (not the API server's timeout calling the webhook), given
	// while the hanging check is still running.
	budgets := make(chan time.Duration, 1)
	var hangDone atomic.Bool
	s.live.set(ns, func(ctx context.Context, _ *rgv1.ConsumerRetentionPolicy) (*rgv1.ProofStatus, error) {
		if dl, ok := ctx.Deadline(); ok {
			budgets <- time.Until(dl)
		} else {
			budgets <- -1
		}
		time.Sleep(time.Minute) // hangs and ignores its context
		hangDone.Store(true)
		return proven(), nil
	})
	msg = mustDeny(t, s.alice.Create(ctxFor(t), settleDeployment(ns, "settle", 1)))
	mustContain(t, msg, "LiveCheckFailed: the live check did not answer within 3s")
	if hangDone.Load() {
		t.Error("denied only after the hanging live check returned; want the denial at its deadline")
	}
	if b := <-budgets; b <= 0 || b > liveTimeout || liveTimeout >= TimeoutSeconds*time.Second {
		t.Errorf("the live check got a budget of %v (negative: no deadline); want at most %v, below the webhook's %ds timeout", b, liveTimeout, TimeoutSeconds)
	}

	s.live.set(ns, func(context.Context, *rgv1.ConsumerRetentionPolicy) (*rgv1.ProofStatus, error) {
		p := proven()
		p.CheckedAt = metav1.Now()
		return p, nil
	})
	if err := s.alice.Create(ctxFor(t), settleDeployment(ns, "settle", 1)); err != nil {
		t.Errorf("a live proof that holds did not let the rollout through: %v", err)
	}
}

// The manager writes a status when its proof changes and renews a
// heartbeat Lease once it has re-proved every policy naming it: a proof
// checked an hour ago and confirmed a moment ago is fresh, on any replica,
// for a rollout that is not a start; once the Lease is as old as the limit,
// the proof is stale again and the rollout is judged live.
func TestHeartbeatKeepsAnUnchangedProofFresh(t *testing.T) {
	s := startSuite(t)
	ns := s.newNamespace(t, "settlement")
	lease := &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: "retention-guard-heartbeat-0a1b2c3d4e5f", Namespace: ns},
		Spec:       coordinationv1.LeaseSpec{RenewTime: &metav1.MicroTime{Time: time.Now().Truncate(time.Second)}},
	}
	if err := s.admin.Create(ctxFor(t), lease); err != nil {
		t.Fatal(err)
	}
	p := settlePolicy(withEnforcement(rgv1.EnforcementDeny), withConsumer("settle", resetEnv, commitEnv))
	p.ObjectMeta = metav1.ObjectMeta{Name: p.Name, Namespace: ns}
	if err := s.admin.Create(ctxFor(t), p); err != nil {
		t.Fatal(err)
	}
	p.Status.Heartbeat = &rgv1.HeartbeatReference{Namespace: ns, Name: lease.Name}
	s.setProof(t, p, proven(), time.Hour)

	// The consumers start (judged live), then the brokers stop answering
	// live checks.
	d := settleDeployment(ns, "settle", 2)
	if err := s.alice.Create(ctxFor(t), d); err != nil {
		t.Fatalf("creating the consumers: %v", err)
	}
	s.live.set(ns, func(context.Context, *rgv1.ConsumerRetentionPolicy) (*rgv1.ProofStatus, error) {
		return nil, errFake("dial tcp 10.0.0.9:9093: connect: connection refused")
	})
	changeTemplate := func(version string) error {
		var cur appsv1.Deployment
		if err := s.alice.Get(ctxFor(t), client.ObjectKeyFromObject(d), &cur); err != nil {
			t.Fatal(err)
		}
		cur.Spec.Template.Annotations = map[string]string{"version": version}
		return s.alice.Update(ctxFor(t), &cur)
	}
	waitLease := func(renew time.Time) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for {
			var got coordinationv1.Lease
			err := s.mgr.GetCache().Get(ctxFor(t), client.ObjectKeyFromObject(lease), &got)
			if err == nil && got.Spec.RenewTime != nil && got.Spec.RenewTime.Time.Equal(renew) {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("the webhook's cache did not catch up with the Lease (err %v)", err)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	waitLease(lease.Spec.RenewTime.Time)
	if err := changeTemplate("2"); err != nil {
		t.Fatalf("a template change under a proof confirmed a moment ago was not allowed: %v", err)
	}

	old := metav1.NewMicroTime(time.Now().Add(-151 * time.Second).Truncate(time.Second))
	lease.Spec.RenewTime = &old
	if err := s.admin.Update(ctxFor(t), lease); err != nil {
		t.Fatal(err)
	}
	waitLease(old.Time)
	msg := mustDeny(t, changeTemplate("3"))
	mustContain(t, msg, "LiveCheckFailed", "connection refused", "last confirmed by heartbeat Lease", lease.Name, "limit")
}

// Issue 34, seed 003: a shard's heartbeat Lease (its selector in
// shard.SelectorAnnotation) confirms only the policies that shard
// selects. The settlement policy, confirmed a moment ago by shard a's
// Lease, is relabelled to shard b: shard a no longer proves it, so its
// Lease no longer makes the hour-old proof fresh, and the rollout is
// judged live (refused here: the brokers do not answer).
func TestShardLeaseConfirmsOnlyItsShardsPolicies(t *testing.T) {
	s := startSuite(t)
	ns := s.newNamespace(t, "settlement")
	lease := &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: "retention-guard-heartbeat-0a1b2c3d4e5f-a1b2c3d4e5", Namespace: ns,
			Annotations: map[string]string{shard.SelectorAnnotation: rgv1.ShardLabel + "=a"}},
		Spec: coordinationv1.LeaseSpec{RenewTime: &metav1.MicroTime{Time: time.Now().Truncate(time.Second)}},
	}
	if err := s.admin.Create(ctxFor(t), lease); err != nil {
		t.Fatal(err)
	}
	p := settlePolicy(withEnforcement(rgv1.EnforcementDeny), withConsumer("settle", resetEnv, commitEnv))
	p.ObjectMeta = metav1.ObjectMeta{Name: p.Name, Namespace: ns, Labels: map[string]string{rgv1.ShardLabel: "a"}}
	if err := s.admin.Create(ctxFor(t), p); err != nil {
		t.Fatal(err)
	}
	p.Status.Heartbeat = &rgv1.HeartbeatReference{Namespace: ns, Name: lease.Name}
	s.setProof(t, p, proven(), time.Hour)

	d := settleDeployment(ns, "settle", 2)
	if err := s.alice.Create(ctxFor(t), d); err != nil {
		t.Fatalf("creating the consumers: %v", err)
	}
	s.live.set(ns, func(context.Context, *rgv1.ConsumerRetentionPolicy) (*rgv1.ProofStatus, error) {
		return nil, errFake("dial tcp 10.0.0.9:9093: connect: connection refused")
	})
	changeTemplate := func(version string) error {
		var cur appsv1.Deployment
		if err := s.alice.Get(ctxFor(t), client.ObjectKeyFromObject(d), &cur); err != nil {
			t.Fatal(err)
		}
		cur.Spec.Template.Annotations = map[string]string{"version": version}
		return s.alice.Update(ctxFor(t), &cur)
	}
	waitCached := func(obj client.Object, ok func() bool) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for {
			err := s.mgr.GetCache().Get(ctxFor(t), client.ObjectKeyFromObject(obj), obj)
			if err == nil && ok() {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("the webhook's cache did not catch up (err %v)", err)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	var cachedLease coordinationv1.Lease
	cachedLease.Name, cachedLease.Namespace = lease.Name, ns
	waitCached(&cachedLease, func() bool { return cachedLease.Spec.RenewTime != nil })
	if err := changeTemplate("2"); err != nil {
		t.Fatalf("a template change under a proof its shard's Lease confirmed a moment ago was not allowed: %v", err)
	}

	var cur rgv1.ConsumerRetentionPolicy
	if err := s.admin.Get(ctxFor(t), client.ObjectKeyFromObject(p), &cur); err != nil {
		t.Fatal(err)
	}
	cur.Labels[rgv1.ShardLabel] = "b"
	if err := s.admin.Update(ctxFor(t), &cur); err != nil {
		t.Fatal(err)
	}
	cached := &rgv1.ConsumerRetentionPolicy{ObjectMeta: metav1.ObjectMeta{Name: p.Name, Namespace: ns}}
	waitCached(cached, func() bool { return cached.Labels[rgv1.ShardLabel] == "b" })
	msg := mustDeny(t, changeTemplate("3"))
	mustContain(t, msg, "LiveCheckFailed", "connection refused", "status proof checked")
}

type errFake string

func (e errFake) Error() string { return string(e) }

// Row "matching": workloads no policy selects — other labels, other
// namespaces — are untouched: no denial, no warning.
func TestUnguardedWorkloadsAreUntouched(t *testing.T) {
	s := startSuite(t)
	guarded := s.newNamespace(t, "settlement")
	s.createPolicy(t, guarded, rgv1.EnforcementDeny, noCommittedOffset(), 0)
	other := s.newNamespace(t, "elsewhere")
	s.warns.take()

	web := settleDeployment(guarded, "web", 2)
	web.Spec.Template.Labels = map[string]string{"name": "web", "app": "web"}
	web.Spec.Template.Spec.Containers[0].Env = nil
	if err := s.alice.Create(ctxFor(t), web); err != nil {
		t.Errorf("an unguarded Deployment in a guarded namespace was refused: %v", err)
	}
	if err := s.alice.Create(ctxFor(t), settleDeployment(other, "settle", 2)); err != nil {
		t.Errorf("app=settle in a namespace without policies was refused: %v", err)
	}
	if ws := s.warns.take(); len(ws) != 0 {
		t.Errorf("unguarded workloads got warnings: %q", ws)
	}
}

// The rows hold for StatefulSets too: create, scale from zero through the
// scale subresource and through spec.replicas, template change; scale down
// and create at zero pass.
func TestStatefulSetsAreGuarded(t *testing.T) {
	s := startSuite(t)
	ns := s.newNamespace(t, "settlement")
	s.createPolicy(t, ns, rgv1.EnforcementDeny, noCommittedOffset(), 0)

	mustContain(t, mustDeny(t, s.alice.Create(ctxFor(t), settleStatefulSet(ns, "settle", 1))),
		"rollout (create) of StatefulSet "+ns+"/settle")
	sts := settleStatefulSet(ns, "settle", 0)
	if err := s.alice.Create(ctxFor(t), sts); err != nil {
		t.Fatalf("a StatefulSet created at zero replicas was refused: %v", err)
	}
	scale := &autoscalingv1.Scale{Spec: autoscalingv1.ScaleSpec{Replicas: 1}}
	mustContain(t, mustDeny(t, s.alice.SubResource("scale").Update(ctxFor(t), sts, client.WithSubResourceBody(scale))),
		"rollout (scale from zero) of StatefulSet "+ns+"/settle", "NoCommittedOffset")
	mustDeny(t, s.alice.Patch(ctxFor(t), sts, client.RawPatch(types.MergePatchType, []byte(`{"spec":{"replicas":1}}`))))

	running := settleStatefulSet(ns, "running", 2)
	running.Annotations = map[string]string{OverrideAnnotation: "7f3a9c21"}
	if err := s.alice.Create(ctxFor(t), running); err != nil {
		t.Fatalf("override of a StatefulSet create refused: %v", err)
	}
	if _, stderr, err := s.kubectl("scale", "statefulset/running", "--replicas=1", "-n", ns); err != nil {
		t.Errorf("kubectl scale of a StatefulSet 2→1 refused: %v\n%s", err, stderr)
	}
	running.Annotations = nil
	running.Spec.Template.Spec.Containers[0].Image = "settle:2"
	running.Spec.Replicas = nil
	running.ResourceVersion = ""
	var cur appsv1.StatefulSet
	if err := s.admin.Get(ctxFor(t), client.ObjectKeyFromObject(running), &cur); err != nil {
		t.Fatal(err)
	}
	cur.Annotations = nil
	cur.Spec.Template.Spec.Containers[0].Image = "settle:2"
	mustContain(t, mustDeny(t, s.alice.Update(ctxFor(t), &cur)), "rollout (pod template change) of StatefulSet "+ns+"/running")
}

// Row "Deny → denied, except a proof failing only by risks", seed 000 on a
// topic of 30 partitions each short of headroom: more risks than the
// status lists. Through the API server (the CRD's schema keeps
// violationsOmittedByReason), the rollout is allowed with a warning; the
// same status without the counts — as a manager from before them wrote
// it — is refused, omitted violations never read as risks.
func TestRisksBeyondTheListedViolationsThroughTheAPIServer(t *testing.T) {
	s := startSuite(t)
	ns := s.newNamespace(t, "fanout")
	risks := laggingOutbox(30, false)
	p := s.createPolicy(t, ns, rgv1.EnforcementDeny, risks, 0)
	var stored rgv1.ConsumerRetentionPolicy
	if err := s.admin.Get(ctxFor(t), client.ObjectKeyFromObject(p), &stored); err != nil {
		t.Fatal(err)
	}
	if got := stored.Status.Proof; got.ViolationsOmitted != 10 || len(got.ViolationsOmittedByReason) != 1 ||
		got.ViolationsOmittedByReason[0] != (rgv1.ReasonCount{Reason: "RecoveryHeadroomShorterThanWindow", Count: 10}) {
		t.Fatalf("stored: %d omitted, by reason %+v", got.ViolationsOmitted, got.ViolationsOmittedByReason)
	}
	s.warns.take()
	if err := s.alice.Create(ctxFor(t), settleDeployment(ns, "fanout", 1)); err != nil {
		t.Fatalf("30 lagging partitions, all risks: refused: %v", err)
	}
	mustContain(t, strings.Join(s.warns.take(), "\n"), "is Violated (proof "+risks.ProofID+") by risks only, nothing lost yet: allowed")

	older := risks.DeepCopy()
	older.ViolationsOmittedByReason = nil
	s.setProof(t, p, older, 0)
	msg := mustDeny(t, s.alice.Create(ctxFor(t), settleDeployment(ns, "fanout-2", 1)))
	mustContain(t, msg, "RecoveryHeadroomShorterThanWindow")
}
