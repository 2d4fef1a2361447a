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
	"github.com/retentionguard/retention-guard/internal/kafka/kafkatest"
)

// A live check (the webhook's, when a policy's status proof is not fresh)
// says what the status says: the policy selects a CronJob that runs weekly
// ("0 2 * * 1") against kfake's 7 days of offsets retention (seed 003), and
// the live proof carries the same schedule-gap warnings as status.proof —
// the two proofs are assembled by one function (assemble.Proof).
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

	live := &LiveChecker{Resolver: h.resolver, Coalescer: h.coalescer}
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
