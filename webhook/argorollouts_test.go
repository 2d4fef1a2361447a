package webhook

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	rgv1 "github.com/retentionguard/retention-guard/api/v1alpha1"
)

// Argo Rollouts, through a real kube-apiserver serving Argo Rollouts' own
// Rollout CRD (testenv.ArgoRolloutsVersion) and calling the webhook with
// the generated configuration. A team that ships with Argo Rollouts is
// guarded like one that ships Deployments: seed 003's batch consumer as a
// Rollout, scaled to zero while its group's offsets expired, is refused
// when scaled up, with the numbers.

// settleRollout is settleDeployment as an argoproj.io/v1alpha1 Rollout
// (canary strategy, the default Argo Rollouts documents first).
func settleRollout(t *testing.T, ns, name string, replicas int32) *unstructured.Unstructured {
	t.Helper()
	d := settleDeployment(ns, name, replicas)
	tmpl, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&d.Spec.Template)
	if err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "argoproj.io/v1alpha1",
		"kind":       "Rollout",
		"metadata":   map[string]any{"name": name, "namespace": ns},
		"spec": map[string]any{
			"replicas": int64(replicas),
			"selector": map[string]any{"matchLabels": map[string]any{"name": name}},
			"template": tmpl,
			"strategy": map[string]any{"canary": map[string]any{"steps": []any{map[string]any{"setWeight": int64(50)}}}},
		},
	}}
	return u
}

func rolloutDecisions(o outcome) float64 {
	return testutil.ToFloat64(decisionsTotal.WithLabelValues(kindRollout, string(o)))
}

// Seed 003 as a Rollout: scale from zero (kubectl scale through the
// Rollout CRD's scale subresource, and a patch of spec.replicas), a pod
// template change and an unpause are refused while the group's offsets are
// gone; scaling down and metadata changes are never refused, and the API
// server does not even call the webhook for them.
func TestRolloutsAreGuardedLikeDeployments(t *testing.T) {
	s := startSuite(t)
	ns := s.newNamespace(t, "settlement")
	p := s.createPolicy(t, ns, rgv1.EnforcementDeny, proven(), 0)

	running := settleRollout(t, ns, "running", 2)
	if err := s.alice.Create(ctxFor(t), running); err != nil {
		t.Fatalf("a Rollout under a proven policy was refused: %v", err)
	}
	parked := settleRollout(t, ns, "settle", 0)
	if err := s.alice.Create(ctxFor(t), parked); err != nil {
		t.Fatalf("a Rollout created at zero replicas was refused: %v", err)
	}
	s.setProof(t, p, noCommittedOffset(), 20*time.Second)

	mustContain(t, mustDeny(t, s.alice.Create(ctxFor(t), settleRollout(t, ns, "fresh", 1))),
		"rollout (create) of Rollout "+ns+"/fresh", "policy ledger-settle-consumer", "NoCommittedOffset")

	denied := rolloutDecisions(outcomeDenied)
	_, stderr, err := s.kubectl("scale", "rollouts.argoproj.io/settle", "--replicas=1", "-n", ns)
	if err == nil {
		t.Fatal("kubectl scale of a Rollout from zero succeeded; want it refused")
	}
	mustContain(t, stderr,
		`admission webhook "workloads.retentionguard.io" denied the request`,
		"retention-guard refused this rollout (scale from zero) of Rollout "+ns+"/settle",
		"24 partitions, 24 without a committed offset")
	if got := rolloutDecisions(outcomeDenied); got != denied+1 {
		t.Errorf("retentionguard_admission_decisions_total{kind=Rollout,decision=denied} went %v → %v, want +1", denied, got)
	}
	mustContain(t, mustDeny(t, s.alice.Patch(ctxFor(t), parked, client.RawPatch(types.MergePatchType, []byte(`{"spec":{"replicas":3}}`)))),
		"rollout (scale from zero) of Rollout "+ns+"/settle")

	image := client.RawPatch(types.JSONPatchType, []byte(`[{"op":"replace","path":"/spec/template/spec/containers/0/image","value":"settle:2"}]`))
	mustContain(t, mustDeny(t, s.alice.Patch(ctxFor(t), running, image)),
		"rollout (pod template change) of Rollout "+ns+"/running")

	if err := s.admin.Patch(ctxFor(t), running, client.RawPatch(types.MergePatchType, []byte(`{"spec":{"paused":true}}`))); err != nil {
		t.Fatalf("pausing the Rollout: %v", err)
	}
	mustContain(t, mustDeny(t, s.alice.Patch(ctxFor(t), running, client.RawPatch(types.MergePatchType, []byte(`{"spec":{"paused":false}}`)))),
		"rollout (unpause) of Rollout "+ns+"/running")

	calls := func() float64 {
		var n float64
		for _, o := range []outcome{outcomeAllowed, outcomeDenied, outcomeWarned, outcomeAudited, outcomeOverridden, outcomeSkipped, outcomeError} {
			n += rolloutDecisions(o)
		}
		return n
	}
	before := calls()
	if _, stderr, err := s.kubectl("scale", "rollouts.argoproj.io/running", "--replicas=1", "-n", ns); err != nil {
		t.Fatalf("kubectl scale of a Rollout 2→1 refused: %v\n%s", err, stderr)
	}
	if err := s.alice.Patch(ctxFor(t), running, client.RawPatch(types.MergePatchType, []byte(`{"spec":{"replicas":0}}`))); err != nil {
		t.Fatalf("scaling a Rollout to zero refused: %v", err)
	}
	if err := s.alice.Patch(ctxFor(t), running, client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"labels":{"team":"ledger"}}}`))); err != nil {
		t.Fatalf("a metadata-only change of a Rollout refused: %v", err)
	}
	if after := calls(); after != before {
		t.Errorf("the webhook was called %v times for Rollout scale-downs and metadata: matchConditions should keep the API server from calling it", after-before)
	}
}

// A Rollout with spec.workloadRef takes its pods from a Deployment's
// template (Argo Rollouts' workload referencing; the Deployment is kept at
// zero replicas). The policy selects the pods by that template's labels:
// the Rollout's create and scale from zero are judged on it.
func TestRolloutWorkloadRefIsJudgedOnTheDeploymentsTemplate(t *testing.T) {
	s := startSuite(t)
	ns := s.newNamespace(t, "settlement")
	s.createPolicy(t, ns, rgv1.EnforcementDeny, noCommittedOffset(), 0)

	tmpl := settleDeployment(ns, "settle-template", 0)
	if err := s.alice.Create(ctxFor(t), tmpl); err != nil {
		t.Fatalf("a Deployment at zero replicas (a template for Rollouts) was refused: %v", err)
	}
	ref := func(name string, replicas int64) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "argoproj.io/v1alpha1",
			"kind":       "Rollout",
			"metadata":   map[string]any{"name": name, "namespace": ns},
			"spec": map[string]any{
				"replicas":    replicas,
				"selector":    map[string]any{"matchLabels": map[string]any{"name": "settle-template"}},
				"workloadRef": map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "name": "settle-template"},
				"strategy":    map[string]any{"canary": map[string]any{}},
			},
		}}
	}
	mustContain(t, mustDeny(t, s.alice.Create(ctxFor(t), ref("settle", 1))),
		"rollout (create) of Rollout "+ns+"/settle", "policy ledger-settle-consumer", "NoCommittedOffset")

	parked := ref("parked", 0)
	if err := s.alice.Create(ctxFor(t), parked); err != nil {
		t.Fatalf("a Rollout at zero replicas was refused: %v", err)
	}
	mustContain(t, mustDeny(t, s.alice.Patch(ctxFor(t), parked, client.RawPatch(types.MergePatchType, []byte(`{"spec":{"replicas":1}}`)))),
		"rollout (scale from zero) of Rollout "+ns+"/parked")

	// A Rollout whose referenced Deployment does not exist cannot be
	// judged: refused (fail closed), saying what is missing.
	missing := ref("orphan", 1)
	missing.Object["spec"].(map[string]any)["workloadRef"] = map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "name": "nowhere"}
	mustContain(t, mustDeny(t, s.alice.Create(ctxFor(t), missing)),
		"the Deployment the Rollout's spec.workloadRef names")

	// Unselected: a Rollout whose referenced template carries other labels
	// is not guarded by the policy.
	other := settleDeployment(ns, "other-template", 0)
	other.Spec.Template.Labels = map[string]string{"app": "other", "name": "other-template"}
	if err := s.alice.Create(ctxFor(t), other); err != nil {
		t.Fatal(err)
	}
	free := ref("free", 1)
	free.Object["spec"].(map[string]any)["workloadRef"] = map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "name": "other-template"}
	if err := s.alice.Create(ctxFor(t), free); err != nil {
		t.Fatalf("a Rollout of a template no policy selects was refused: %v", err)
	}
	var got appsv1.Deployment
	if err := s.admin.Get(ctxFor(t), client.ObjectKeyFromObject(tmpl), &got); err != nil {
		t.Fatal(err)
	}
}
