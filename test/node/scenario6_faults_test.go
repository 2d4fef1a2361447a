package node

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	rgv1 "github.com/retentionguard/retention-guard/api/v1alpha1"
	"github.com/retentionguard/retention-guard/test/e2e/e2eutil"
)

// Scenario 6: faults a platform team lives through, each with admissions
// running against a Proven policy the whole time.

const ordersNS, ordersApp = "orders", "orders"

// healthyOrders sets up (once) a healthy group with a Proven Deny policy
// in namespace orders.
func healthyOrders(t *testing.T) client.ObjectKey {
	t.Helper()
	key := client.ObjectKey{Namespace: ordersNS, Name: ordersApp}
	var p rgv1.ConsumerRetentionPolicy
	if err := admin().Get(suite, key, &p); err == nil {
		e2eutil.WaitPolicy(t, admin(), key, time.Minute, "Proven", proven)
		waitGuarded(t, ordersNS)
		return key
	}
	ctx := ctxFor(t, time.Minute)
	namespace(t, ordersNS)
	must(t, kafka.CreateTopic(ctx, "orders", 2, map[string]string{"retention.ms": strconv.FormatInt((7 * 24 * time.Hour).Milliseconds(), 10)}))
	must(t, kafka.Produce(ctx, "orders", 2, 10))
	must(t, kafka.Commit(ctx, "orders", "orders", map[int32]int64{0: 10, 1: 10}))
	createPolicy(t, ordersNS, ordersApp, "orders", "orders", ordersApp, policyOpts{})
	e2eutil.WaitPolicy(t, admin(), key, time.Minute, "Proven", proven)
	waitGuarded(t, ordersNS)
	return key
}

// prober sends admissions through the webhook all along a fault: a
// server-side dry-run create of a guarded consumer Deployment (a start:
// the webhook judges it on a live observation), every 250ms. Each must be
// admitted.
type prober struct {
	mu      sync.Mutex
	ok      int
	failed  []string
	firstOK time.Time
	since   time.Time
	stop    chan struct{}
	done    chan struct{}
}

func startProbing(t *testing.T) *prober {
	t.Helper()
	p := &prober{stop: make(chan struct{}), done: make(chan struct{}), since: time.Now()}
	go func() {
		defer close(p.done)
		tick := time.NewTicker(250 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-p.stop:
				return
			case <-tick.C:
			}
			d := consumerDeployment(ordersNS, "probe", "orders", "orders", "none", false, 1)
			d.Spec.Template.Labels["app"] = ordersApp
			d.Spec.Selector.MatchLabels["app"] = ordersApp
			ctx, cancel := context.WithTimeout(suite, 10*time.Second)
			err := admin().Create(ctx, d, client.DryRunAll)
			cancel()
			p.mu.Lock()
			if err != nil {
				p.failed = append(p.failed, time.Now().Format("15:04:05.000")+" "+err.Error())
			} else {
				p.ok++
			}
			p.mu.Unlock()
		}
	}()
	return p
}

// mark restarts the clock of firstOK: the time to the first admission
// answered after a fault began.
func (p *prober) mark() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.since, p.firstOK = time.Now(), time.Time{}
	okBefore := p.ok
	go func() {
		for {
			time.Sleep(10 * time.Millisecond)
			p.mu.Lock()
			if p.ok > okBefore {
				p.firstOK = time.Now()
				p.mu.Unlock()
				return
			}
			p.mu.Unlock()
			select {
			case <-p.done:
				return
			default:
			}
		}
	}()
}

// waitAnswers waits until n admissions were answered since probing
// began.
func (p *prober) waitAnswers(t *testing.T, n int) {
	t.Helper()
	waitFor(t, fmt.Sprintf("%d admissions answered", n), 2*time.Minute, func() error {
		p.mu.Lock()
		defer p.mu.Unlock()
		if p.ok < n {
			return fmt.Errorf("%d answered, %d failed", p.ok, len(p.failed))
		}
		return nil
	})
}

// finish stops probing and fails the test for every refused or
// unanswered admission; it returns how many were answered.
func (p *prober) finish(t *testing.T, during string) int {
	t.Helper()
	close(p.stop)
	<-p.done
	p.mu.Lock()
	defer p.mu.Unlock()
	total := p.ok + len(p.failed)
	if len(p.failed) > 0 {
		t.Errorf("%d of %d admissions failed %s:\n%s", len(p.failed), total, during, strings.Join(p.failed, "\n"))
	}
	if total == 0 {
		t.Errorf("no admission was sent %s", during)
	}
	report.addf("admissions answered %s: %d of %d", during, p.ok, total)
	return p.ok
}

// Delete the leader pod: the other replica takes the Lease, the webhook
// keeps answering, and proofs continue.
func TestFaultLeaderPodDeleted(t *testing.T) {
	installed(t)
	key := healthyOrders(t)
	ctx := ctxFor(t, 4*time.Minute)
	old, err := leader(ctx, releaseNS, fullname+"-leader")
	must(t, err)
	var before rgv1.ConsumerRetentionPolicy
	must(t, admin().Get(ctx, key, &before))

	p := startProbing(t)
	deleted := time.Now()
	p.mark()
	_, err = kubectl(ctx, "delete", "pod", old, "--namespace", releaseNS, "--wait=false")
	must(t, err)
	var next string
	waitFor(t, "another replica leading", 2*time.Minute, func() (err error) {
		next, err = leader(ctx, releaseNS, fullname+"-leader")
		if err == nil && next == old {
			return fmt.Errorf("still led by %s", old)
		}
		return err
	})
	takeover := time.Since(deleted)
	// Re-proven by the new leader: a status it wrote, or — the facts being
	// the same — the heartbeat Lease the status names, renewed by it to an
	// observation made after the delete (status is written only when the
	// proof changes).
	e2eutil.WaitPolicy(t, admin(), key, 2*time.Minute, "proven again after the new leader took over", func(p *rgv1.ConsumerRetentionPolicy) bool {
		if !proven(p) {
			return false
		}
		if p.Status.Proof.CheckedAt.After(deleted) {
			return true
		}
		hb := p.Status.Heartbeat
		if hb == nil {
			return false
		}
		var l coordinationv1.Lease
		if err := admin().Get(ctx, client.ObjectKey{Namespace: hb.Namespace, Name: hb.Name}, &l); err != nil {
			return false
		}
		return l.Spec.RenewTime != nil && l.Spec.RenewTime.After(deleted) && ptr.Deref(l.Spec.HolderIdentity, "") == next
	})
	resumed := time.Since(deleted)
	waitManagerReady(t, 2)
	p.waitAnswers(t, 60) // the replacement replica serves too
	answered := p.firstOK
	p.finish(t, "while the leader pod was deleted and replaced")
	if !answered.IsZero() {
		report.add("leader pod deleted → webhook answering (first admission after the delete)", answered.Sub(deleted))
	}
	report.add("leader pod deleted → another replica holds the Lease", takeover)
	report.add("leader pod deleted → proofs resumed (a policy re-proven by the new leader)", resumed)
	t.Logf("leader %s deleted: %s leads after %s, proofs resumed after %s", old, next, takeover.Round(time.Millisecond), resumed.Round(time.Millisecond))
}

// Restart containerd, then the kubelet: running pods survive both (their
// shims keep them), the webhook keeps answering, and the node runs new
// pods afterwards.
func TestFaultContainerdAndKubeletRestart(t *testing.T) {
	installed(t)
	healthyOrders(t)
	ctx := ctxFor(t, 5*time.Minute)
	before := waitManagerReady(t, 2)
	p := startProbing(t)
	p.waitAnswers(t, 4)
	must(t, nd.RestartContainerd(ctx))
	must(t, nd.RestartKubelet(ctx))
	after := waitManagerReady(t, 2)
	p.waitAnswers(t, 20)
	p.finish(t, "while containerd and the kubelet restarted")
	for _, b := range before {
		i := slices.IndexFunc(after, func(a corev1.Pod) bool { return a.UID == b.UID })
		if i < 0 {
			t.Errorf("manager pod %s did not survive the restarts", b.Name)
			continue
		}
		if restarts(&after[i]) != restarts(&b) {
			t.Errorf("manager pod %s restarted its container (%d → %d)", b.Name, restarts(&b), restarts(&after[i]))
		}
	}
	namespace(t, "frontend")
	must(t, admin().Create(ctx, pauseDeployment("frontend", "after-restart", 1)))
	runningPod(t, "frontend", "after-restart")
}

func restarts(p *corev1.Pod) int32 {
	var n int32
	for _, s := range p.Status.ContainerStatuses {
		n += s.RestartCount
	}
	return n
}

// helm upgrade with a changed value rolls the replicas one at a time
// (maxUnavailable 0) with admissions answered throughout, and keeps the
// manager's guarded-namespaces list (no server-side apply conflict).
func TestFaultHelmUpgrade(t *testing.T) {
	installed(t)
	healthyOrders(t)
	ctx := ctxFor(t, 5*time.Minute)
	old := waitManagerReady(t, 2)
	guardedBefore := guardedExpression(t)
	p := startProbing(t)
	out, err := helm(ctx, "upgrade", release, chartDir(), "--namespace", releaseNS, "--reuse-values",
		"--set", "logLevel=debug", "--wait", "--timeout", "3m")
	if err != nil {
		p.finish(t, "during helm upgrade")
		t.Fatalf("helm upgrade: %v", err)
	}
	var fresh []corev1.Pod
	waitFor(t, "two Ready replicas of the upgraded release, none from before", 3*time.Minute, func() error {
		pods, err := managerPods(suite, release, releaseNS)
		if err != nil {
			return err
		}
		fresh = fresh[:0]
		for _, f := range pods {
			if slices.ContainsFunc(old, func(o corev1.Pod) bool { return o.Name == f.Name }) {
				return fmt.Errorf("pod %s is from before the upgrade", f.Name)
			}
			if podReady(&f) {
				fresh = append(fresh, f)
			}
		}
		if len(fresh) < 2 {
			return fmt.Errorf("%d Ready", len(fresh))
		}
		return nil
	})
	p.finish(t, "during helm upgrade (logLevel info → debug)")
	if !slices.Contains(fresh[0].Spec.Containers[0].Args, "--zap-log-level=debug") {
		t.Errorf("the upgraded manager runs with %v", fresh[0].Spec.Containers[0].Args)
	}
	if after := guardedExpression(t); after != guardedBefore {
		t.Errorf("helm upgrade changed guarded-namespaces from %s to %s", guardedBefore, after)
	}
	t.Logf("helm upgrade: %s", statusLine(out))
}

// statusLine is Helm's STATUS line.
func statusLine(s string) string {
	for _, l := range strings.Split(s, "\n") {
		if strings.HasPrefix(l, "STATUS:") {
			return l
		}
	}
	return ""
}

// kubectl drain honours the PodDisruptionBudget: on this one node the
// first replica is evicted (its replacement cannot schedule on the
// cordoned node) and the second eviction is refused, so one replica keeps
// serving the webhook all along; uncordon brings the second back.
func TestFaultDrainHonoursThePodDisruptionBudget(t *testing.T) {
	installed(t)
	healthyOrders(t)
	ctx := ctxFor(t, 5*time.Minute)
	p := startProbing(t)
	defer func() {
		_, err := kubectl(ctx, "uncordon", nd.NodeName())
		must(t, err)
		waitManagerReady(t, 2)
	}()
	out, err := kubectl(ctx, "drain", nd.NodeName(), "--ignore-daemonsets", "--delete-emptydir-data", "--timeout=25s")
	if err == nil {
		t.Fatalf("kubectl drain evicted every manager replica despite the PodDisruptionBudget:\n%s", out)
	}
	contains(t, "kubectl drain", out, "Cannot evict pod as it would violate the pod's disruption budget")
	ready := waitManagerReady(t, 1)
	p.finish(t, "during kubectl drain of the only node")
	t.Logf("drain stopped by the PodDisruptionBudget; %s kept serving", ready[0].Name)
}

// helm uninstall removes the webhook configuration (a leftover one with
// failurePolicy Fail would lock the guarded namespaces for good) and the
// leader Lease, keeps the CRD and the policies, and a kept policy's proof
// reads as stale: nothing updates it any more.
func TestUninstallKeepsPoliciesAndRemovesTheWebhook(t *testing.T) {
	installed(t)
	key := healthyOrders(t)
	ctx := ctxFor(t, 3*time.Minute)
	_, err := helm(ctx, "uninstall", release, "--namespace", releaseNS, "--wait", "--timeout", "2m")
	must(t, err)
	uninstalled := time.Now()

	var vwcs admissionregistrationv1.ValidatingWebhookConfigurationList
	must(t, admin().List(ctx, &vwcs))
	for _, v := range vwcs.Items {
		for _, w := range v.Webhooks {
			if w.Name == "workloads.retentionguard.io" {
				t.Errorf("ValidatingWebhookConfiguration %s is left after helm uninstall", v.Name)
			}
		}
	}
	var crd apiextensionsv1.CustomResourceDefinition
	must(t, admin().Get(ctx, client.ObjectKey{Name: "consumerretentionpolicies.retentionguard.io"}, &crd))
	var kept rgv1.ConsumerRetentionPolicy
	must(t, admin().Get(ctx, key, &kept))
	var lease coordinationv1.Lease
	if err := admin().Get(ctx, client.ObjectKey{Namespace: releaseNS, Name: fullname + "-leader"}, &lease); !apierrors.IsNotFound(err) {
		t.Errorf("the leader Lease outlived the uninstall: %v %+v", err, lease.Spec)
	}
	// Nothing guards the namespace now: a start goes through.
	must(t, admin().Create(ctx, pauseDeployment(ordersNS, "after-uninstall", 0)))

	// The kept proof is stale: poked past its interval, it is not
	// re-checked, and its age shows it.
	poke(ctx, key)
	time.Sleep(12 * time.Second) // > checkInterval (10s)
	var later rgv1.ConsumerRetentionPolicy
	must(t, admin().Get(ctx, key, &later))
	if !later.Status.Proof.CheckedAt.Equal(&kept.Status.Proof.CheckedAt) {
		t.Errorf("the proof was re-checked after the uninstall (checkedAt %s → %s)", kept.Status.Proof.CheckedAt, later.Status.Proof.CheckedAt)
	}
	out, err := kubectl(ctx, "get", "consumerretentionpolicies", "--namespace", ordersNS)
	must(t, err)
	contains(t, "kubectl get crp", out, "PROOF AGE")
	t.Logf("%s after the uninstall:\n%s", time.Since(uninstalled).Round(time.Second), out)
}

// Installing again under another release name and namespace while the
// kept CRD carries the first release's Helm ownership: a plain install is
// refused by Helm (naming the annotations); --take-ownership, the
// documented way (docs/install.md), adopts the CRD, and the new release
// proves the kept policies at once (the old Lease is gone with the old
// release, so its first leader does not wait for it to expire).
func TestReinstallUnderAnotherName(t *testing.T) {
	ctx := ctxFor(t, 5*time.Minute)
	if _, err := helm(ctx, "status", release, "--namespace", releaseNS); err == nil {
		_, err := helm(ctx, "uninstall", release, "--namespace", releaseNS, "--wait")
		must(t, err)
	}
	key := client.ObjectKey{Namespace: ordersNS, Name: ordersApp}
	const release2, ns2 = "rg2", "rg2-system"
	out, err := helmInstall(ctx, release2, ns2)
	if err == nil {
		t.Fatal("helm install under another name adopted the kept CRD without being asked")
	}
	contains(t, "helm install", out, `meta.helm.sh/release-name" must equal "rg2": current value is "rg"`)

	installedAt := time.Now()
	_, err = helmInstall(ctx, release2, ns2, "--take-ownership")
	must(t, err)
	var p rgv1.ConsumerRetentionPolicy
	waitFor(t, "the kept policy re-proven by the new release", 2*time.Minute, func() error {
		if err := admin().Get(ctx, key, &p); err != nil {
			return err
		}
		if p.Status.Proof == nil || !p.Status.Proof.CheckedAt.After(installedAt) {
			return errString("not re-checked yet")
		}
		return nil
	})
	report.add("helm install --take-ownership (after uninstall) → kept policy re-proven", time.Since(installedAt))
	var crd apiextensionsv1.CustomResourceDefinition
	must(t, admin().Get(ctx, client.ObjectKey{Name: "consumerretentionpolicies.retentionguard.io"}, &crd))
	if crd.Annotations["meta.helm.sh/release-name"] != release2 {
		t.Errorf("the CRD belongs to %q after --take-ownership", crd.Annotations["meta.helm.sh/release-name"])
	}
	_, err = helm(ctx, "uninstall", release2, "--namespace", ns2, "--wait")
	must(t, err)
}
