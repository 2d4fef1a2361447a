package e2e

// What a person with kubectl does and sees is test/e2e/e2eutil's, shared
// with test/realkafka/e2e (stk.Admin()); here is what only this suite
// uses: its policies on the kfake broker, its Deployments, the manager's
// metrics and the heartbeat Lease.

import (
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	rgv1 "github.com/retentionguard/retention-guard/api/v1alpha1"
	"github.com/retentionguard/retention-guard/test/e2e/e2eutil"
)

// policy creates a Deny policy with a 72h recovery window and the
// shortest check interval the CRD allows, pointing at the e2e broker.
func policy(t *testing.T, ns, name, group, topic, app string) *rgv1.ConsumerRetentionPolicy {
	t.Helper()
	return policyWithWindow(t, ns, name, group, topic, app, 72*time.Hour)
}

func policyWithWindow(t *testing.T, ns, name, group, topic, app string, window time.Duration) *rgv1.ConsumerRetentionPolicy {
	t.Helper()
	p := e2eutil.NewPolicy(ns, name, group, topic, app, stk.BrokerAddr, window)
	e2eutil.Must(t, stk.Admin().Create(t, p))
	return p
}

// deployment creates a Deployment of the consumer app (no kubelet runs
// it: admission is what is tested).
func deployment(t *testing.T, ns, name, app string, replicas int32) *appsv1.Deployment {
	t.Helper()
	d := e2eutil.NewDeployment(ns, name, app, replicas)
	e2eutil.Must(t, stk.Admin().Create(t, d))
	return d
}

// metric returns the value of one sample of the manager's /metrics, e.g.
// metric(t, `retentionguard_policy_verdict`, `namespace="a"`, `verdict="Proven"`),
// and false when no sample has every label.
func metric(t *testing.T, name string, labels ...string) (float64, bool) {
	t.Helper()
	body, err := stk.Metrics(e2eutil.Ctx(t))
	e2eutil.Must(t, err)
	re := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(name) + `(\{[^}]*\})? (\S+)$`)
	for _, m := range re.FindAllStringSubmatch(body, -1) {
		all := true
		for _, l := range labels {
			all = all && strings.Contains(m[1], l)
		}
		if all {
			v, err := strconv.ParseFloat(m[2], 64)
			e2eutil.Must(t, err)
			return v, true
		}
	}
	return 0, false
}

// waitMetric polls /metrics until the sample has value want.
func waitMetric(t *testing.T, want float64, name string, labels ...string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		v, ok := metric(t, name, labels...)
		if ok && v == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("metric %s{%s} = %v (present %v), want %v", name, strings.Join(labels, ","), v, ok, want)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// renewedAfter reports whether the heartbeat Lease hb was renewed after
// since: the manager confirmed the unchanged proofs it names since then.
func renewedAfter(t *testing.T, hb *rgv1.HeartbeatReference, since time.Time) bool {
	t.Helper()
	var l coordinationv1.Lease
	if err := stk.Env.Client.Get(e2eutil.Ctx(t), client.ObjectKey{Namespace: hb.Namespace, Name: hb.Name}, &l); err != nil {
		return false
	}
	return l.Spec.RenewTime != nil && l.Spec.RenewTime.After(since)
}
