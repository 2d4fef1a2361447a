package controllers

import (
	"strconv"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	rgv1 "github.com/retentionguard/retention-guard/api/v1alpha1"
	"github.com/retentionguard/retention-guard/internal/gather"
	"github.com/retentionguard/retention-guard/internal/kafka/kafkatest"
)

// A live check (the webhook's, when a policy's status proof is not fresh)
// says what the status says: the policy selects a CronJob that runs weekly
// ("0 2 * * 1") against kfake's 7 days of offsets retention (seed 003), and
// the live proof carries the same schedule-gap warnings as status.proof —
// the two proofs are gathered by one Gatherer and assembled by one
// function (gather.ObservedProof).
func TestLiveCheckWarnsAboutCronJobsAsTheStatusDoes(t *testing.T) {
	c := kafkatest.NewCluster(t)
	c.CreateTopic(t, "settle-task", 1, map[string]string{"retention.ms": strconv.FormatInt(30*24*int64(time.Hour/time.Millisecond), 10)})
	c.Produce(t, "settle-task", 10)
	c.Commit(t, "ledger-settle-consumer", "settle-task", 0, 10)
	h := startManager(t, harnessOptions{})

	cj := &batchv1.CronJob{
		ObjectMeta: metav1.ObjectMeta{Name: "settle", Namespace: h.ns},
		Spec: batchv1.CronJobSpec{
			Schedule: "0 2 * * 1",
			JobTemplate: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "settle"}},
				Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever,
					Containers: []corev1.Container{{Name: "settle", Image: "settle:1"}}},
			}}},
		},
	}
	if err := env.Client.Create(testCtx(t), cj); err != nil {
		t.Fatalf("creating the CronJob: %v", err)
	}
	createPolicy(t, h.ns, "settle", "ledger-settle-consumer", []string{"settle-task"},
		policyOptions{servers: c.Addrs, window: 72 * time.Hour})

	const gapWarning = `CronJob settle ("0 2 * * 1") runs up to 7d apart, not less than offsets.retention.minutes=10080 (7d): ` +
		`the group's offsets expire between two runs`
	g := NewWithT(t)
	g.Eventually(cronJobWarningsOf(h.ns, "settle"), eventually, poll).Should(ContainElement(gapWarning))
	p := getPolicy(g, h.ns, "settle")
	g.Expect(p.Status.Proof.Verdict).To(Equal(rgv1.VerdictProven))
	inStatus := cronJobWarningsOf(h.ns, "settle")(g)

	live := &gather.LiveChecker{Gatherer: h.gatherer}
	ps, err := live.Check(testCtx(t), p)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(ps.Verdict).To(Equal(rgv1.VerdictProven), "a warning never changes the verdict")
	var liveWarnings []string
	for _, w := range ps.Warnings {
		if strings.HasPrefix(w, "CronJob ") {
			liveWarnings = append(liveWarnings, w)
		}
	}
	g.Expect(liveWarnings).To(ContainElement(gapWarning), "the live proof warns about the schedule gap")
	g.Expect(liveWarnings).To(Equal(inStatus), "the live proof's CronJob warnings are the status's")
}

// Seed 000: the fan-out shipped a canary Deployment under another app
// label, and the policy written for app=fanout does not select it. The
// status warns of that unselected consumer (a configWarning and its
// consumerWorkload fact); a live check (the webhook's, when the status
// proof is not fresh) must say the same, or a rollout judged live passes
// with the canary unguarded and no word of it. The live check shares the
// reconciler's Gatherer, as the manager wires it.
func TestLiveCheckWarnsOfUnselectedConsumerAsTheStatusDoes(t *testing.T) {
	c, h := startFanoutWithCanary(t, "fanout-live")
	createPolicy(t, h.ns, "fanout", "fanout-live", []string{"outbox"}, policyOptions{servers: c.Addrs})

	const unselected = "Deployment/fanout-canary consumes the group (member client kgo at 127.0.0.1 is pod fanout-canary-55c4-x1) " +
		"but spec.selector does not select its pod template: its rollouts are not guarded; widen the selector"
	fact := rgv1.WarningFact{Type: gather.WarningConsumerWorkload, Reason: gather.WarningReasonNotSelected,
		Subject: "Deployment/fanout-canary"}
	g := NewWithT(t)
	g.Eventually(func(g Gomega) []string {
		p := getPolicy(g, h.ns, "fanout")
		g.Expect(p.Status.Proof).NotTo(BeNil())
		return p.Status.Proof.ConfigWarnings
	}, eventually, poll).Should(ContainElement(unselected))
	p := getPolicy(g, h.ns, "fanout")
	g.Expect(p.Status.Proof.WarningFacts).To(ContainElement(fact))

	live := &gather.LiveChecker{Gatherer: h.gatherer}
	ps, err := live.Check(testCtx(t), p)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(ps.Verdict).To(Equal(p.Status.Proof.Verdict), "the live verdict is the status's")
	g.Expect(ps.ConfigWarnings).To(ContainElement(unselected), "the live proof warns of the unselected consumer")
	g.Expect(ps.WarningFacts).To(ContainElement(fact), "with the fact the status carries")
	g.Expect(unselectedOf(ps)).To(Equal(unselectedOf(p.Status.Proof)), "the live proof's unselected consumers are the status's")
}

// unselectedOf is a proof's configWarnings about unselected consumers.
func unselectedOf(ps *rgv1.ProofStatus) []string {
	var out []string
	for _, w := range ps.ConfigWarnings {
		if strings.Contains(w, "consumes the group") {
			out = append(out, w)
		}
	}
	return out
}
