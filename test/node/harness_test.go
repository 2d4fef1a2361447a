package node

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	rgv1 "github.com/retentionguard/retention-guard/api/v1alpha1"
	"github.com/retentionguard/retention-guard/internal/testenv"
	"github.com/retentionguard/retention-guard/test/e2e/e2eutil"
)

// The release under test: the chart's defaults except the image.
const (
	release   = "rg"
	releaseNS = "retention-guard"
	fullname  = "rg-retention-guard"
)

func ctxFor(t *testing.T, d time.Duration) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(suite, d)
	t.Cleanup(cancel)
	return ctx
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func admin() client.Client { return nd.Client }

// command runs a CLI (kubectl, helm) against the node as its admin, and
// returns stdout and stderr together.
func command(ctx context.Context, bin string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, bin, args...)
	home := filepath.Join(tools.dir, "home")
	cmd.Env = append(os.Environ(), "KUBECONFIG="+nd.Kubeconfig,
		// Helm's own cache, configuration and repositories stay in the run.
		"HELM_CACHE_HOME="+filepath.Join(home, "cache"), "HELM_CONFIG_HOME="+filepath.Join(home, "config"),
		"HELM_DATA_HOME="+filepath.Join(home, "data"))
	cmd.Dir = testenv.RepoRoot()
	out, err := cmd.CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("%s %s: %w\n%s", filepath.Base(bin), strings.Join(args, " "), err, out)
	}
	return string(out), nil
}

func kubectl(ctx context.Context, args ...string) (string, error) {
	return command(ctx, nd.Kubectl(), args...)
}
func helm(ctx context.Context, args ...string) (string, error) {
	return command(ctx, tools.helm, args...)
}

// chartDir is the chart, as a user installs it from a checkout.
func chartDir() string { return filepath.Join(testenv.RepoRoot(), "charts", "retention-guard") }

// helmInstall installs the chart with its defaults: the node holds the
// image the chart names by default (built from this checkout). One value
// is set, as an installer must: the broker's address in
// allowedBootstrapServers (the default allows policies no server).
func helmInstall(ctx context.Context, name, ns string, extra ...string) (string, error) {
	args := append([]string{"install", name, chartDir(), "--namespace", ns, "--create-namespace",
		"--set", "allowedBootstrapServers={" + brk.addr + "}",
		"--wait", "--timeout", "3m"}, extra...)
	return helm(ctx, args...)
}

// installed makes sure release rg is installed and both replicas serve,
// for the scenarios that run on an installed product (each can run alone).
func installed(t *testing.T) {
	t.Helper()
	ctx := ctxFor(t, 4*time.Minute)
	if out, err := helm(ctx, "status", release, "--namespace", releaseNS); err == nil && strings.Contains(out, "STATUS: deployed") {
		waitManagerReady(t, 2)
		return
	}
	// The chart keeps its CRDs at uninstall (helm.sh/resource-policy:
	// keep): after a scenario that installed and removed another release
	// (TestReinstallUnderAnotherName) they carry that release's ownership,
	// and Helm refuses a plain install. --take-ownership is the documented
	// way to adopt them (docs/install.md), used only then.
	var extra []string
	var crd apiextensionsv1.CustomResourceDefinition
	if err := admin().Get(ctx, client.ObjectKey{Name: "consumerretentionpolicies.retentionguard.io"}, &crd); err == nil {
		if owner := crd.Annotations["meta.helm.sh/release-name"]; owner != "" && owner != release {
			t.Logf("the kept CRDs belong to release %q: installing %s with --take-ownership", owner, release)
			extra = append(extra, "--take-ownership")
		}
	}
	_, err := helmInstall(ctx, release, releaseNS, extra...)
	must(t, err)
	waitManagerReady(t, 2)
}

// managerPods lists the release's manager pods; terminating ones too when
// withTerminating (a terminating replica still serves the webhook).
func managerPods(ctx context.Context, release string, ns string, withTerminating ...bool) ([]corev1.Pod, error) {
	var pods corev1.PodList
	err := admin().List(ctx, &pods, client.InNamespace(ns), client.MatchingLabels{"app.kubernetes.io/instance": release})
	var out []corev1.Pod
	for _, p := range pods.Items {
		if p.DeletionTimestamp == nil || len(withTerminating) > 0 && withTerminating[0] {
			out = append(out, p)
		}
	}
	return out, err
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// waitManagerReady waits for n Ready manager pods (the webhook serves in
// every Ready replica).
func waitManagerReady(t *testing.T, n int) []corev1.Pod {
	t.Helper()
	var ready []corev1.Pod
	waitFor(t, fmt.Sprintf("%d manager replicas Ready", n), 3*time.Minute, func() error {
		pods, err := managerPods(suite, release, releaseNS)
		if err != nil {
			return err
		}
		ready = ready[:0]
		for _, p := range pods {
			if podReady(&p) {
				ready = append(ready, p)
			}
		}
		if len(ready) < n {
			return fmt.Errorf("%d of %d Ready", len(ready), n)
		}
		return nil
	})
	return ready
}

// leader is the pod name holding the manager's Lease.
func leader(ctx context.Context, ns, lease string) (string, error) {
	var l coordinationv1.Lease
	if err := admin().Get(ctx, client.ObjectKey{Namespace: ns, Name: lease}, &l); err != nil {
		return "", err
	}
	if l.Spec.HolderIdentity == nil || *l.Spec.HolderIdentity == "" {
		return "", errors.New("the Lease has no holder")
	}
	// controller-runtime's identity is <hostname>_<uuid>; the hostname is
	// the pod's name.
	name, _, _ := strings.Cut(*l.Spec.HolderIdentity, "_")
	return name, nil
}

// waitFor polls f every 200ms until it returns nil.
func waitFor(t *testing.T, what string, timeout time.Duration, f func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		err := f()
		if err == nil {
			return
		}
		if suite.Err() != nil {
			t.Fatalf("%s: interrupted: %v", what, err)
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not after %s: %v", what, timeout, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func namespace(t *testing.T, name string) {
	t.Helper()
	err := admin().Create(ctxFor(t, 30*time.Second), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
}

// policyOpts shape a policy.
type policyOpts struct {
	enforcement string // Deny by default
	window      time.Duration
	consumer    *rgv1.ConsumerClientSpec
}

// createPolicy creates a policy for group on topic selecting pods labelled
// app=<app>, checked every 10s (the CRD's minimum), against the broker.
func createPolicy(t *testing.T, ns, name, group, topic, app string, o policyOpts) client.ObjectKey {
	t.Helper()
	if o.enforcement == "" {
		o.enforcement = "Deny"
	}
	if o.window == 0 {
		o.window = 72 * time.Hour
	}
	p := &rgv1.ConsumerRetentionPolicy{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: rgv1.ConsumerRetentionPolicySpec{
			GroupID:        group,
			Topics:         []string{topic},
			RecoveryWindow: metav1.Duration{Duration: o.window},
			Selector:       metav1.LabelSelector{MatchLabels: map[string]string{"app": app}},
			Enforcement:    rgv1.Enforcement(o.enforcement),
			CheckInterval:  &metav1.Duration{Duration: 10 * time.Second},
			Consumer:       o.consumer,
			Kafka:          rgv1.PolicyKafka{BootstrapServers: []string{brk.addr}},
		},
	}
	must(t, admin().Create(ctxFor(t, 30*time.Second), p))
	return client.ObjectKeyFromObject(p)
}

// poke annotates the policy: the reconciler reacts to annotation changes,
// so a check runs without waiting for the interval.
func poke(ctx context.Context, key client.ObjectKey) {
	p := &rgv1.ConsumerRetentionPolicy{}
	if err := admin().Get(ctx, key, p); err != nil {
		return
	}
	patch := client.MergeFrom(p.DeepCopy())
	if p.Annotations == nil {
		p.Annotations = map[string]string{}
	}
	p.Annotations["test.retentionguard.io/poke"] = strconv.FormatInt(time.Now().UnixNano(), 10)
	_ = admin().Patch(ctx, p, patch)
}

// proven: the verdict alone (Ready and the generation are checked where
// they matter).
func proven(p *rgv1.ConsumerRetentionPolicy) bool { return e2eutil.Verdict(p) == "Proven" }

// consumerDeployment is a Deployment of test/consumer for group on topic.
func consumerDeployment(ns, name, group, topic, reset string, autoCommit bool, replicas int32) *appsv1.Deployment {
	return deployment(ns, name, replicas, 10, consumerContainer(group, topic, reset, autoCommit))
}

// deployment runs one container in pods labelled app=name.
func deployment(ns, name string, replicas int32, gracePeriodSeconds int64, c corev1.Container) *appsv1.Deployment {
	labels := map[string]string{"app": name}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					TerminationGracePeriodSeconds: ptr.To(gracePeriodSeconds),
					Containers:                    []corev1.Container{c},
				},
			},
		},
	}
}

func consumerContainer(group, topic, reset string, autoCommit bool) corev1.Container {
	return corev1.Container{
		Name:  "consumer",
		Image: imgs.ConsumerRef,
		Env: []corev1.EnvVar{
			{Name: "KAFKA_BOOTSTRAP_SERVERS", Value: brk.addr},
			{Name: "KAFKA_GROUP_ID", Value: group},
			{Name: "KAFKA_TOPICS", Value: topic},
			{Name: "KAFKA_AUTO_OFFSET_RESET", Value: reset},
			{Name: "KAFKA_ENABLE_AUTO_COMMIT", Value: strconv.FormatBool(autoCommit)},
			{Name: "KAFKA_AUTO_COMMIT_INTERVAL_MS", Value: "1000"},
		},
		SecurityContext: &corev1.SecurityContext{
			RunAsNonRoot:             ptr.To(true),
			AllowPrivilegeEscalation: ptr.To(false),
			ReadOnlyRootFilesystem:   ptr.To(true),
			Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
		},
	}
}

// logLine is one JSON line of test/consumer's log.
type logLine struct {
	Msg        string `json:"msg"`
	Topic      string `json:"topic"`
	Partition  int32  `json:"partition"`
	Offset     int64  `json:"offset"`
	Committed  int64  `json:"committed"`
	Reset      bool   `json:"reset"`
	ResetCause string `json:"resetCause"`
	Skipped    int64  `json:"skipped"`
	First      int64  `json:"first"`
	Last       int64  `json:"last"`
	Count      int64  `json:"count"`
	From       int64  `json:"from"`
	To         int64  `json:"to"`
}

// consumerLog reads a pod's log through the API server (kubectl logs: the
// kubelet serves it) and parses test/consumer's lines.
func consumerLog(ctx context.Context, ns, pod string) ([]logLine, string, error) {
	out, err := kubectl(ctx, "logs", "--namespace", ns, pod)
	if err != nil {
		return nil, out, err
	}
	var lines []logLine
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		var l logLine
		if json.Unmarshal(sc.Bytes(), &l) == nil && l.Msg != "" {
			lines = append(lines, l)
		}
	}
	return lines, out, nil
}

// consumed summarizes a consumer's log: per partition its first-record
// line and the last offset consumed, and every gap it logged.
type consumed struct {
	first map[int32]logLine
	last  map[int32]int64
	gaps  []logLine
}

func summarize(lines []logLine) consumed {
	c := consumed{first: map[int32]logLine{}, last: map[int32]int64{}}
	for _, l := range lines {
		switch l.Msg {
		case "first record":
			c.first[l.Partition] = l
		case "consumed":
			c.last[l.Partition] = max(c.last[l.Partition], l.Last)
		case "skipped":
			c.gaps = append(c.gaps, l)
		}
	}
	return c
}

// runningPod waits for one Running pod labelled app=<app> that is not in
// exclude, and returns its name.
func runningPod(t *testing.T, ns, app string, exclude ...string) string {
	t.Helper()
	var name string
	waitFor(t, "a running pod of "+ns+"/"+app, 2*time.Minute, func() error {
		var pods corev1.PodList
		if err := admin().List(suite, &pods, client.InNamespace(ns), client.MatchingLabels{"app": app}); err != nil {
			return err
		}
		for _, p := range pods.Items {
			if p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp == nil && !slices.Contains(exclude, p.Name) {
				name = p.Name
				return nil
			}
		}
		return fmt.Errorf("%d pods, none running", len(pods.Items))
	})
	return name
}

// waitLog waits until the pod's log satisfies ok.
func waitLog(t *testing.T, ns, pod, what string, timeout time.Duration, ok func(consumed) bool) consumed {
	t.Helper()
	var c consumed
	var raw string
	waitFor(t, fmt.Sprintf("pod %s/%s: %s", ns, pod, what), timeout, func() error {
		lines, out, err := consumerLog(suite, ns, pod)
		if err != nil {
			return err
		}
		raw = out
		c = summarize(lines)
		if ok(c) {
			return nil
		}
		return fmt.Errorf("log so far:\n%s", tailString(raw, 2000))
	})
	return c
}

func tailString(s string, n int) string {
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}

// noPods waits until no pod labelled app=<app> is left.
func noPods(t *testing.T, ns, app string) {
	t.Helper()
	waitFor(t, "no pod of "+ns+"/"+app, 2*time.Minute, func() error {
		var pods corev1.PodList
		if err := admin().List(suite, &pods, client.InNamespace(ns), client.MatchingLabels{"app": app}); err != nil {
			return err
		}
		if len(pods.Items) > 0 {
			return fmt.Errorf("%d pods left", len(pods.Items))
		}
		return nil
	})
}

// contains asserts s says every sub.
func contains(t *testing.T, what, s string, subs ...string) {
	t.Helper()
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			t.Errorf("%s does not say %q:\n%s", what, sub, s)
		}
	}
}

// deniedByWebhook asserts out/err is retention-guard's denial.
func deniedByWebhook(t *testing.T, out string, err error) {
	t.Helper()
	if err == nil {
		t.Fatalf("the API server allowed the request; want a denial by retention-guard's webhook:\n%s", out)
	}
	if !strings.Contains(out, `admission webhook "workloads.retentionguard.io" denied the request`) {
		t.Fatalf("want a denial by retention-guard's webhook, got: %v", err)
	}
}
