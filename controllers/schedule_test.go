package controllers

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"

	rgv1 "github.com/retentionguard/retention-guard/api/v1alpha1"
	"github.com/retentionguard/retention-guard/internal/assemble"
)

// computeStatus adds the CronJob warnings to the proof's, judged against
// the offsets.retention.minutes of the same observation; the verdict is the
// proof's alone. The unit-level twin of TestCronJobScheduleAgainstOffsetsRetention.
func TestComputeStatusWarnsAboutCronJobs(t *testing.T) {
	g := NewWithT(t)
	// The longest gaps internal/gather measures for these schedules
	// (TestLongestScheduleGap).
	weekly := assemble.ScheduleGap{Gap: 7 * 24 * time.Hour}
	daily := assemble.ScheduleGap{Gap: 24 * time.Hour}
	obs := healthyObs()

	in := statusInput{Generation: 1, Policy: testPolicy(), Now: statusNow, Observation: &obs,
		CronJobs: []assemble.CronJob{{Name: "settle", Schedule: "0 2 * * 1", Gap: weekly}}}
	out := computeStatus(rgv1.ConsumerRetentionPolicyStatus{}, in)
	g.Expect(out.Status.Proof.Verdict).To(Equal(rgv1.VerdictProven))
	g.Expect(out.Status.Proof.Warnings).To(ContainElement(
		`CronJob settle ("0 2 * * 1") runs up to 7d apart, not less than offsets.retention.minutes=10080 (7d): the group's offsets expire between two runs`))

	in.CronJobs = []assemble.CronJob{{Name: "settle", Schedule: "0 2 * * *", Gap: daily}}
	out = computeStatus(rgv1.ConsumerRetentionPolicyStatus{}, in)
	for _, w := range out.Status.Proof.Warnings {
		g.Expect(w).NotTo(HavePrefix("CronJob "), "a daily schedule is inside 7 days and the 72h window")
	}
}
