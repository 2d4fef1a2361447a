package webhook

import (
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/scale"
	"sigs.k8s.io/controller-runtime/pkg/client"

	rgv1 "github.com/retentionguard/retention-guard/api/v1alpha1"
)

// Issue 36, item 2: KEDA's activations are judged like a person's
// `kubectl scale`. What KEDA sends, read in kedacore/keda at
// 8b4f083ca8c8c2baf8477e322bd4d16ac4dfa09a:
//
//   - a ScaledObject's target, 0→N and N→0:
//     pkg/scaling/executor/scale_scaledobjects.go, scaleExecutor.scaleFromZeroOrIdle
//     and scaleToZeroOrIdle → updateScaleOnScaleTarget: a Get then an
//     Update (PUT) of the target's scale subresource through
//     k8s.io/client-go/scale's ScalesGetter, an autoscaling/v1 Scale;
//     the ScalesGetter is built in pkg/k8s/scaleclient.go, InitScaleClient
//     (scale.New over a discovery RESTClient, the manager's RESTMapper,
//     dynamic.LegacyAPIPathResolverFunc, NewDiscoveryScaleKindResolver);
//   - a ScaledJob's runs: pkg/scaling/executor/scale_jobs.go, createJobs:
//     client.Create of a batch/v1 Job whose controller ownerReference is
//     the ScaledJob (generateJobs, controllerutil.SetControllerReference);
//   - as the operator's ServiceAccount, keda/keda-operator in a default
//     install (config/rbac/role_binding.yaml), whose ClusterRole
//     (config/rbac/role.yaml) grants */scale get/update/patch and batch
//     jobs create.
//
// The tests below send exactly those requests, as that identity.

const kedaOperator = "system:serviceaccount:keda:keda-operator"

// kedaClients returns the ScalesGetter KEDA's executor uses and the
// controller-runtime client it creates Jobs with, both impersonating
// KEDA's operator ServiceAccount, granted (once) the rules of KEDA's
// ClusterRole these requests need.
func (s *suiteEnv) kedaClients(t *testing.T) (scale.ScalesGetter, client.Client) {
	t.Helper()
	role := &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: "keda-operator"},
		Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{"*"}, Resources: []string{"*/scale"}, Verbs: []string{"get", "list", "patch", "update", "watch"}},
			{APIGroups: []string{"*"}, Resources: []string{"*"}, Verbs: []string{"get"}},
			{APIGroups: []string{"apps"}, Resources: []string{"deployments", "replicasets", "statefulsets"}, Verbs: []string{"list", "watch"}},
			{APIGroups: []string{"batch"}, Resources: []string{"jobs"}, Verbs: []string{"create", "delete", "get", "list", "patch", "update", "watch"}},
			{APIGroups: []string{"keda.sh"}, Resources: []string{"scaledjobs", "scaledjobs/finalizers", "scaledobjects", "scaledobjects/finalizers"},
				Verbs: []string{"get", "list", "patch", "update", "watch"}},
		},
	}
	if err := s.admin.Create(ctxFor(t), role); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "keda-operator"},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "keda-operator"},
		Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Name: "keda-operator", Namespace: "keda"}},
	}
	if err := s.admin.Create(ctxFor(t), binding); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}

	cfg := rest.CopyConfig(s.env.Config)
	cfg.Impersonate = rest.ImpersonationConfig{
		UserName: kedaOperator,
		Groups:   []string{"system:serviceaccounts", "system:serviceaccounts:keda", "system:authenticated"},
	}
	cfg.WarningHandler = rest.NoWarnings{}
	// pkg/k8s/scaleclient.go, InitScaleClient.
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	scales := scale.New(dc.RESTClient(), s.admin.RESTMapper(), dynamic.LegacyAPIPathResolverFunc, scale.NewDiscoveryScaleKindResolver(dc))
	c, err := client.New(cfg, client.Options{Scheme: s.env.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	// RBAC is cached by the authorizer: wait until KEDA may read a scale.
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, err := scales.Scales("default").Get(ctxFor(t), schema.GroupResource{Group: "apps", Resource: "deployments"}, "none", metav1.GetOptions{})
		if err == nil || apierrors.IsNotFound(err) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("KEDA's identity cannot read scales: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	return scales, c
}

// kedaActivate is updateScaleOnScaleTarget: Get the target's scale, set
// spec.replicas, Update it.
func kedaActivate(t *testing.T, scales scale.ScalesGetter, ns string, gr schema.GroupResource, name string, replicas int32) error {
	t.Helper()
	sc, err := scales.Scales(ns).Get(ctxFor(t), gr, name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("KEDA's Get of %s %s/%s scale: %v", gr, ns, name, err)
	}
	sc.Spec.Replicas = replicas
	_, err = scales.Scales(ns).Update(ctxFor(t), gr, sc, metav1.UpdateOptions{})
	return err
}

var checkedAgo = regexp.MustCompile(`checked [^ ,)]+ ago`)

// deniedText is the webhook's message in an API error or kubectl's
// stderr, with the proof's age (which moves between two requests) blanked.
func deniedText(s string) string {
	const marker = "denied the request: "
	if i := strings.Index(s, marker); i >= 0 {
		s = s[i+len(marker):]
	}
	return checkedAgo.ReplaceAllString(strings.TrimSpace(s), "checked … ago")
}

// Seed 003 under KEDA: the settlement batch consumer, parked at zero by a
// ScaledObject, was down 8 days; its group's offsets expired and a resume
// would start from latest, skipping 4,654,259 tasks. KEDA sees lag (with
// offsetResetPolicy=latest and no committed offset, 1 a partition) and
// activates: its executor's Update of the Deployment's scale subresource,
// as system:serviceaccount:keda:keda-operator, is refused with the message
// a person's `kubectl scale` gets, a RolloutDenied event naming KEDA, and
// the denied count; once the proof holds the same request goes through;
// KEDA's scale to zero is never refused.
func TestKEDAActivationIsJudgedLikeKubectlScale(t *testing.T) {
	s := startSuite(t)
	scales, _ := s.kedaClients(t)
	ns := s.newNamespace(t, "settlement")
	p := s.createPolicy(t, ns, rgv1.EnforcementDeny, noCommittedOffset(), 20*time.Second)
	d := settleDeployment(ns, "settle", 0)
	if err := s.alice.Create(ctxFor(t), d); err != nil {
		t.Fatalf("creating the consumer parked at zero: %v", err)
	}
	deployments := schema.GroupResource{Group: "apps", Resource: "deployments"}

	deniedBefore := testutil.ToFloat64(decisionsTotal.WithLabelValues("Deployment", string(outcomeDenied)))
	keda := mustDeny(t, kedaActivate(t, scales, ns, deployments, "settle", 1))
	mustContain(t, keda,
		"retention-guard refused this rollout (scale from zero) of Deployment "+ns+"/settle",
		"policy ledger-settle-consumer (group ledger-settle-consumer) is Violated (proof 7f3a9c21, checked ",
		"24 partitions, 24 without a committed offset",
		"--group ledger-settle-consumer --topic settle-task --reset-offsets --to-earliest --execute",
		"retentionguard.io/override-proof=7f3a9c21")
	if got := testutil.ToFloat64(decisionsTotal.WithLabelValues("Deployment", string(outcomeDenied))); got != deniedBefore+1 {
		t.Errorf("retentionguard_admission_decisions_total{kind=Deployment,decision=denied} went %v → %v, want +1", deniedBefore, got)
	}
	s.waitEvent(t, p, EventRolloutDenied, "refused Deployment "+ns+"/settle (scale from zero) requested by "+kedaOperator)

	_, stderr, err := s.kubectl("scale", "deployment/settle", "--replicas=1", "-n", ns)
	if err == nil {
		t.Fatal("kubectl scale --replicas=1 succeeded; want it refused")
	}
	if a, b := deniedText(keda), deniedText(stderr); a != b {
		t.Errorf("KEDA's refusal differs from kubectl scale's:\nKEDA:    %s\nkubectl: %s", a, b)
	}
	// (kubectl's refusal joins KEDA's event as its series: events.k8s.io
	// aggregates isomorphic events on the policy.)

	var got appsv1.Deployment
	if err := s.admin.Get(ctxFor(t), client.ObjectKeyFromObject(d), &got); err != nil || *got.Spec.Replicas != 0 {
		t.Fatalf("the Deployment was scaled anyway: %v replicas (err %v)", got.Spec.Replicas, err)
	}

	// The way out taken (offsets reset to the business cursor): Proven.
	s.setProof(t, p, proven(), 0)
	if err := kedaActivate(t, scales, ns, deployments, "settle", 1); err != nil {
		t.Fatalf("KEDA's activation under a proven policy refused: %v", err)
	}
	if err := s.admin.Get(ctxFor(t), client.ObjectKeyFromObject(d), &got); err != nil || *got.Spec.Replicas != 1 {
		t.Fatalf("replicas %v after KEDA's activation (err %v)", got.Spec.Replicas, err)
	}
	// scaleToZeroOrIdle: parking the consumer is never refused.
	s.setProof(t, p, noCommittedOffset(), 0)
	if err := kedaActivate(t, scales, ns, deployments, "settle", 0); err != nil {
		t.Fatalf("KEDA's deactivation 1→0 refused: %v", err)
	}

	// The other way out: the override annotation on the target workload
	// (a metadata change, never judged) lets KEDA's next activation
	// through, recorded as KEDA's.
	ann := client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"annotations":{"`+OverrideAnnotation+`":"7f3a9c21"}}}`))
	if err := s.alice.Patch(ctxFor(t), &got, ann); err != nil {
		t.Fatalf("annotating the override: %v", err)
	}
	if err := kedaActivate(t, scales, ns, deployments, "settle", 1); err != nil {
		t.Fatalf("KEDA's activation with the override annotation refused: %v", err)
	}
	s.waitEvent(t, p, EventProofOverridden, kedaOperator+" rolled out Deployment "+ns+"/settle (scale from zero) over proof 7f3a9c21")
}

// Seed 003 as a StatefulSet and as an Argo Rollout behind a ScaledObject:
// KEDA's scale-subresource Update from zero is refused the same way.
func TestKEDAActivationOfStatefulSetsAndRollouts(t *testing.T) {
	s := startSuite(t)
	scales, _ := s.kedaClients(t)
	ns := s.newNamespace(t, "settlement")
	s.createPolicy(t, ns, rgv1.EnforcementDeny, noCommittedOffset(), 20*time.Second)

	if err := s.alice.Create(ctxFor(t), settleStatefulSet(ns, "settle-sts", 0)); err != nil {
		t.Fatal(err)
	}
	if err := s.alice.Create(ctxFor(t), settleRollout(t, ns, "settle-ro", 0)); err != nil {
		t.Fatal(err)
	}
	mustContain(t, mustDeny(t, kedaActivate(t, scales, ns, schema.GroupResource{Group: "apps", Resource: "statefulsets"}, "settle-sts", 1)),
		"retention-guard refused this rollout (scale from zero) of StatefulSet "+ns+"/settle-sts", "NoCommittedOffset")
	denied := rolloutDecisions(outcomeDenied)
	mustContain(t, mustDeny(t, kedaActivate(t, scales, ns, schema.GroupResource{Group: "argoproj.io", Resource: "rollouts"}, "settle-ro", 1)),
		"retention-guard refused this rollout (scale from zero) of Rollout "+ns+"/settle-ro", "NoCommittedOffset")
	if got := rolloutDecisions(outcomeDenied); got != denied+1 {
		t.Errorf("retentionguard_admission_decisions_total{kind=Rollout,decision=denied} went %v → %v, want +1", denied, got)
	}
}

// Seed 003 as a ScaledJob: KEDA's createJobs creates a Job (generateName
// <scaledjob>-, controller ownerReference keda.sh/v1alpha1 ScaledJob) as
// its operator; it is judged like any Job: refused while the offsets are
// gone, created once the proof holds.
func TestKEDAScaledJobRunIsJudgedLikeAnyJob(t *testing.T) {
	s := startSuite(t)
	_, c := s.kedaClients(t)
	ns := s.newNamespace(t, "settlement")
	p := s.createPolicy(t, ns, rgv1.EnforcementDeny, noCommittedOffset(), 20*time.Second)

	run := func() *batchv1.Job {
		j := settleJob(ns, "", false)
		j.GenerateName = "settle-"
		j.Labels = map[string]string{"app.kubernetes.io/managed-by": "keda-operator", "scaledjob.keda.sh/name": "settle"}
		j.OwnerReferences = []metav1.OwnerReference{{
			APIVersion: "keda.sh/v1alpha1", Kind: "ScaledJob", Name: "settle", UID: "5c1e0a3e-0000-4000-8000-000000000036",
			Controller: ptr(true), BlockOwnerDeletion: ptr(true),
		}}
		return j
	}
	deniedBefore := testutil.ToFloat64(decisionsTotal.WithLabelValues(kindJob, string(outcomeDenied)))
	msg := mustDeny(t, c.Create(ctxFor(t), run()))
	mustContain(t, msg,
		"retention-guard refused this rollout (create) of Job "+ns+"/settle-",
		"policy ledger-settle-consumer (group ledger-settle-consumer) is Violated (proof 7f3a9c21, checked ",
		"24 partitions, 24 without a committed offset",
		"--group ledger-settle-consumer --topic settle-task --reset-offsets --to-earliest --execute")
	mustLack(t, msg, "a run of CronJob")
	// The refusal names the ScaledJob and the override goes where KEDA's
	// generateJobs reads annotations from: the ScaledJob.
	mustContain(t, msg, "of Job "+ns+"/settle-", " (a run of KEDA ScaledJob settle):",
		"Or roll out knowingly:", "kubectl annotate --overwrite scaledjob settle -n "+ns+" "+OverrideAnnotation+"=7f3a9c21")
	t.Logf("KEDA's Job create was refused with:\n%s", msg)
	if got := testutil.ToFloat64(decisionsTotal.WithLabelValues(kindJob, string(outcomeDenied))); got != deniedBefore+1 {
		t.Errorf("retentionguard_admission_decisions_total{kind=Job,decision=denied} went %v → %v, want +1", deniedBefore, got)
	}
	s.waitEvent(t, p, EventRolloutDenied, "requested by "+kedaOperator)
	s.waitEvent(t, p, EventRolloutDenied, "(a run of KEDA ScaledJob settle)")

	// generateJobs copies the ScaledJob's own metadata.annotations onto
	// each Job: the override goes there.
	overridden := run()
	overridden.Annotations = map[string]string{"scaledjob.keda.sh/generation": "1", OverrideAnnotation: "7f3a9c21"}
	if err := c.Create(ctxFor(t), overridden); err != nil {
		t.Fatalf("a ScaledJob's run carrying the override refused: %v", err)
	}
	s.waitEvent(t, p, EventProofOverridden, kedaOperator+" rolled out Job "+ns+"/settle-")

	s.setProof(t, p, proven(), 0)
	if err := c.Create(ctxFor(t), run()); err != nil {
		t.Fatalf("a ScaledJob's run under a proven policy refused: %v", err)
	}
}
