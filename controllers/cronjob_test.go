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
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	rgv1 "github.com/retentionguard/retention-guard/api/v1alpha1"
	"github.com/retentionguard/retention-guard/internal/kafka/kafkatest"
)

// cronJobWarningsOf is the policy's status.proof warnings about CronJobs,
// for Eventually.
func cronJobWarningsOf(ns, name string) func(g Gomega) []string {
	return func(g Gomega) []string {
		p := getPolicy(g, ns, name)
		g.Expect(p.Status.Proof).NotTo(BeNil())
		var out []string
		for _, w := range p.Status.Proof.Warnings {
			if strings.HasPrefix(w, "CronJob ") {
				out = append(out, w)
			}
		}
		return out
	}
}

// Issue #8, seed 003 foreseen: the settlement consumer runs as a CronJob
// the policy selects (recoveryWindow 72h). Daily, its runs stay well inside
// kfake's default offsets.retention.minutes (10080, 7 days) and the window:
// no warning. Rescheduled
// weekly ("0 2 * * 1"), the gap between two runs reaches the 7 days: the
// status warns before any run has lost its offsets — the CronJob watch
// brings the change to the policy. Suspended, it warns that the offsets
// expire while it is.
func TestCronJobScheduleAgainstOffsetsRetention(t *testing.T) {
	c := kafkatest.NewCluster(t)
	c.CreateTopic(t, "settle-task", 1, map[string]string{"retention.ms": strconv.FormatInt(30*24*int64(time.Hour/time.Millisecond), 10)})
	c.Produce(t, "settle-task", 10)
	c.Commit(t, "ledger-settle-consumer", "settle-task", 0, 10)
	h := startManager(t, harnessOptions{})

	tmpl := corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "settle"}},
		Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever,
			Containers: []corev1.Container{{Name: "settle", Image: "settle:1"}}},
	}
	cj := &batchv1.CronJob{
		ObjectMeta: metav1.ObjectMeta{Name: "settle", Namespace: h.ns},
		Spec: batchv1.CronJobSpec{
			Schedule:    "0 2 * * *",
			JobTemplate: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{Template: tmpl}},
		},
	}
	// Another app's weekly CronJob in the same namespace: not selected.
	other := cj.DeepCopy()
	other.Name, other.Spec.Schedule = "report", "0 2 * * 1"
	other.Spec.JobTemplate.Spec.Template.Labels = map[string]string{"app": "report"}
	for _, o := range []*batchv1.CronJob{cj, other} {
		if err := env.Client.Create(testCtx(t), o); err != nil {
			t.Fatalf("creating CronJob %s: %v", o.Name, err)
		}
	}
	createPolicy(t, h.ns, "settle", "ledger-settle-consumer", []string{"settle-task"},
		policyOptions{servers: c.Addrs, window: 72 * time.Hour})

	g := NewWithT(t)
	g.Eventually(verdictOf(h.ns, "settle"), eventually, poll).Should(Equal(rgv1.VerdictProven))
	p := getPolicy(g, h.ns, "settle")
	g.Expect(*p.Status.Proof.OffsetsRetentionMinutes).To(Equal(int64(10080)), "kfake's default offsets.retention.minutes")
	g.Expect(cronJobWarningsOf(h.ns, "settle")(g)).To(BeEmpty(), "a daily schedule is inside 7 days")
	gapSeries := map[string]string{"namespace": h.ns, "policy": "settle", "cronjob": "settle"}
	g.Eventually(func(g Gomega) float64 { return gauge(g, "retentionguard_cronjob_schedule_gap_seconds", gapSeries) },
		eventually, poll).Should(Equal((24 * time.Hour).Seconds()))
	_, selected := metricValue("retentionguard_cronjob_schedule_gap_seconds",
		map[string]string{"namespace": h.ns, "policy": "settle", "cronjob": "report"})
	g.Expect(selected).To(BeFalse(), "CronJob report is not selected by the policy")

	// Weekly: the gap reaches offsets.retention.minutes. Seed 003 foreseen.
	patch := func(body string) {
		t.Helper()
		if err := env.Client.Patch(testCtx(t), cj, client.RawPatch(types.MergePatchType, []byte(body))); err != nil {
			t.Fatalf("patching the CronJob: %v", err)
		}
	}
	patch(`{"spec":{"schedule":"0 2 * * 1"}}`)
	g.Eventually(cronJobWarningsOf(h.ns, "settle"), eventually, poll).Should(Equal([]string{
		`CronJob settle ("0 2 * * 1") runs up to 7d apart, not less than offsets.retention.minutes=10080 (7d): the group's offsets expire between two runs`,
		`CronJob settle ("0 2 * * 1") runs up to 7d apart, not less than recoveryWindow 3d: the pause between runs uses up the window`,
	}))
	g.Expect(gauge(g, "retentionguard_cronjob_schedule_gap_seconds", gapSeries)).To(Equal((7 * 24 * time.Hour).Seconds()))
	g.Expect(getPolicy(g, h.ns, "settle").Status.Proof.Verdict).To(Equal(rgv1.VerdictProven), "a warning never changes the verdict")

	// Suspended: no runs, and the offsets expire while it is.
	patch(`{"spec":{"suspend":true}}`)
	g.Eventually(cronJobWarningsOf(h.ns, "settle"), eventually, poll).Should(Equal([]string{
		"CronJob settle is suspended: once its group is empty, its offsets expire after offsets.retention.minutes=10080 (7d); " +
			"unsuspending later restarts without a position",
	}))
	g.Eventually(func() bool {
		_, ok := metricValue("retentionguard_cronjob_schedule_gap_seconds", gapSeries)
		return ok
	}, eventually, poll).Should(BeFalse(), "a suspended CronJob has no gap series")

	// The job template's labels no longer selected: the warning goes.
	patch(`{"spec":{"jobTemplate":{"spec":{"template":{"metadata":{"labels":{"app":"settle-v2"}}}}}}}`)
	g.Eventually(cronJobWarningsOf(h.ns, "settle"), eventually, poll).Should(BeEmpty())
}
