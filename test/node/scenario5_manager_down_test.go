package node

import (
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/retentionguard/retention-guard/test/node/cluster"
)

// Scenario 5: the manager is down (every replica gone; failurePolicy
// Fail). Only namespaces that hold a policy depend on it: there a rollout
// is refused — fail closed — while scaling down still works; a namespace
// without policies (ingress, monitoring, ...) rolls out freely and its
// pods run. The issue found every namespace blocked before the webhook
// was kept to the namespaces with policies. helm test fails, and cleans up.
func TestManagerDownBlocksOnlyGuardedNamespaces(t *testing.T) {
	installed(t)
	ctx := ctxFor(t, 5*time.Minute)
	const guarded, free = "payments", "frontend"
	namespace(t, guarded)
	namespace(t, free)
	createPolicy(t, guarded, "payments", "payments", "payments", "payments-consumer", policyOpts{})
	waitGuarded(t, guarded)
	if strings.Contains(guardedExpression(t), `"`+free+`"`) {
		t.Fatalf("the webhook is called for %s, which holds no policy", free)
	}
	// A workload no policy selects, in the guarded namespace, running.
	must(t, admin().Create(ctx, pauseDeployment(guarded, "web", 1)))

	_, err := kubectl(ctx, "scale", "deployment/"+fullname, "--namespace", releaseNS, "--replicas=0")
	must(t, err) // the release namespace is never guarded: recovery always works
	waitFor(t, "no manager replica left, terminating ones included", 2*time.Minute, func() error {
		pods, err := managerPods(suite, release, releaseNS, true)
		if err != nil {
			return err
		}
		if len(pods) > 0 {
			return errString("replicas left: " + strings.Join(podNames(pods), ", "))
		}
		return nil
	})
	defer func() {
		_, err := kubectl(ctx, "scale", "deployment/"+fullname, "--namespace", releaseNS, "--replicas=2")
		must(t, err)
		waitManagerReady(t, 2)
	}()

	// Guarded namespace: a start is refused without the webhook's answer.
	err = admin().Create(ctx, pauseDeployment(guarded, "payments-consumer", 1))
	if err == nil || !strings.Contains(err.Error(), `failed calling webhook "workloads.retentionguard.io"`) {
		t.Fatalf("a rollout in %s (holds a policy) with the manager down: %v; want refused, failed calling the webhook", guarded, err)
	}
	t.Logf("%s, manager down: %v", guarded, err)
	// Scaling down is not a rollout: the API server does not call the
	// webhook at all.
	_, err = kubectl(ctx, "scale", "deployment/web", "--namespace", guarded, "--replicas=0")
	if err != nil {
		t.Errorf("a scale-down in %s with the manager down: %v", guarded, err)
	}

	// A namespace without policies: rolls out, its pod runs.
	if err := admin().Create(ctx, pauseDeployment(free, "ingress", 1)); err != nil {
		t.Fatalf("a rollout in %s (no policy) with the manager down was refused: %v", free, err)
	}
	runningPod(t, free, "ingress")

	// helm test fails while the guard does not work (no leader adds the
	// probe's namespace to the webhook's scope, no replica judges), and
	// leaves nothing behind either.
	out, err := helm(ctx, "test", release, "--namespace", releaseNS, "--logs", "--timeout", "30s")
	if err == nil {
		t.Fatalf("helm test passed with the manager down:\n%s", out)
	}
	contains(t, "helm test with the manager down", out, "Phase:          Failed", "POD LOGS: "+fullname+"-test",
		"waiting (", "allowed (the webhook has not judged it against the probe policy yet)")
	t.Logf("helm test with the manager down: %v\n%s", err, tailString(out, 1500))
	noHelmTestLeftovers(t)
}

// pauseDeployment runs the pause program: a workload that is not a
// consumer.
func pauseDeployment(ns, name string, replicas int32) *appsv1.Deployment {
	return deployment(ns, name, replicas, 2, corev1.Container{Name: name, Image: cluster.PauseImage})
}
