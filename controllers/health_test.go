package controllers

import (
	"strconv"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"

	rgv1 "github.com/retentionguard/retention-guard/api/v1alpha1"
	"github.com/retentionguard/retention-guard/internal/kafka/kafkatest"
	"github.com/retentionguard/retention-guard/internal/resolve"
	"github.com/retentionguard/retention-guard/test/argocd"
)

// What Argo CD and Flux show for policies the real manager wrote: the
// chart's Lua health check (charts/retention-guard/argocd/health.lua) and
// kstatus, which Flux's health checks compute. A team on Argo CD whose
// group would lose records (seed 000) sees its policy Degraded, not
// Healthy; a policy whose first proof is pending is Progressing; one whose
// Secret is broken is Degraded with the reason; a proven one is Healthy.
func TestGitOpsHealthOfPolicies(t *testing.T) {
	c := kafkatest.NewCluster(t)
	c.CreateTopic(t, "orders", 1, map[string]string{"retention.ms": strconv.FormatInt(sevenDaysMs, 10)})
	c.Produce(t, "orders", 5)
	c.RunConsumer(t, "billing", "orders", map[int32]int64{0: 5})
	// Seed 000: the committed offset 3 is below the log start once
	// retention has run.
	c.CreateTopic(t, "outbox", 1, map[string]string{"retention.ms": "200"})
	c.Produce(t, "outbox", 10)
	c.CreateOffsetsTopic(t, 3)
	c.CommitOffsets(t, "fanout", "outbox", map[int32]int64{0: 3})
	c.LogCommits(t, "fanout")
	silent := silentListener(t)

	h := startManager(t, harnessOptions{interval: 2 * time.Second})
	g := NewWithT(t)
	health := func(g Gomega, name string) (string, string) {
		st, msg, err := argocd.Health(getPolicy(g, h.ns, name))
		g.Expect(err).NotTo(HaveOccurred())
		return st, msg
	}

	createPolicy(t, h.ns, "pending", "billing", []string{"orders"}, policyOptions{servers: []string{silent.Addr().String()}})
	g.Eventually(func(g Gomega) *metav1.Condition {
		return condition(getPolicy(g, h.ns, "pending").Status, ConditionReconciling)
	}, eventually, poll).ShouldNot(BeNil())
	st, _ := health(g, "pending")
	g.Expect(st).To(Equal("Progressing"))
	g.Expect(kstatusOf(g, h.ns, "pending").Status).To(Equal(status.InProgressStatus))

	g.Expect(env.Client.Create(testCtx(t), &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "kafka-user", Namespace: h.ns},
		Data:       map[string][]byte{"username": []byte("guard")},
	})).To(Succeed())
	createPolicy(t, h.ns, "stalled", "billing", []string{"orders"}, policyOptions{servers: c.Addrs, sasl: "kafka-user"})
	g.Eventually(func(g Gomega) status.Status { return kstatusOf(g, h.ns, "stalled").Status }, eventually, poll).
		Should(Equal(status.FailedStatus))
	st, msg := health(g, "stalled")
	g.Expect(st).To(Equal("Degraded"))
	g.Expect(msg).To(HavePrefix(resolve.ReasonSecretKeyMissing + ": "))

	createPolicy(t, h.ns, "billing", "billing", []string{"orders"}, policyOptions{servers: c.Addrs})
	g.Eventually(verdictOf(h.ns, "billing"), eventually, poll).Should(Equal(rgv1.VerdictProven))
	st, _ = health(g, "billing")
	g.Expect(st).To(Equal("Healthy"))
	g.Expect(kstatusOf(g, h.ns, "billing").Status).To(Equal(status.CurrentStatus))

	createPolicy(t, h.ns, "fanout", "fanout", []string{"outbox"},
		policyOptions{servers: c.Addrs, window: 100 * time.Millisecond})
	g.Eventually(verdictOf(h.ns, "fanout"), eventually, poll).ShouldNot(BeEmpty())
	g.Eventually(func() rgv1.Verdict {
		c.ApplyRetention()
		return verdictOf(h.ns, "fanout")(g)
	}, eventually, poll).Should(Equal(rgv1.VerdictViolated))
	st, msg = health(g, "fanout")
	g.Expect(st).To(Equal("Degraded"))
	g.Expect(msg).To(ContainSubstring("committed offset 3"))
	// kstatus, with neither Reconciling nor Stalled set, falls back on
	// Ready: a Violated policy is InProgress with the proof's message, so a
	// Flux Kustomization that waits for it fails its health check.
	res := kstatusOf(g, h.ns, "fanout")
	g.Expect(res.Status).To(Equal(status.InProgressStatus))
	g.Expect(res.Message).To(ContainSubstring("committed offset 3"))
}
