package webhook

import (
	"strings"
	"testing"
	"time"

	rgv1 "github.com/retentionguard/retention-guard/api/v1alpha1"
)

// Issue 33 item 4, seed 000: a partition added while the group was down
// is skipped by a start at latest. The denial says the way out that
// changes the next proof: a commit for the partition, or evidence that
// the consumers start at the log start.
func TestDenyMessageWayOutOfAnUnreadPartition(t *testing.T) {
	for _, reason := range []string{"ResetToLatestSkipsRecords", "OffsetResetMaySkipRecords"} {
		verdict := rgv1.VerdictViolated
		if reason == "OffsetResetMaySkipRecords" {
			verdict = rgv1.VerdictUnknown
		}
		ps := &rgv1.ProofStatus{Verdict: verdict, ProofID: "12345678", Violations: []rgv1.ViolationStatus{
			{Reason: reason, Topic: "settle-task", Partition: ptr[int32](1), Message: "settle-task[1]: numbers here",
				SkippedRecords: ptr[int64](2)},
		}}
		p := settlePolicy(withProof(ps, time.Second))
		d := decide([]policyEval{{Policy: p, Proof: p.Status.Proof}}, "")
		if d.allowed() {
			t.Fatalf("%s: allowed; the rollout is the start that skips the records", reason)
		}
		msg := denyMessage(settleTarget, &d, testNow)
		flat := strings.Join(strings.Fields(msg), " ")
		for _, want := range []string{"commit an offset for each partition without one", "--reset-offsets --to-earliest",
			"share.auto.offset.reset=earliest", "spec.consumer"} {
			if !strings.Contains(flat, want) {
				t.Errorf("%s: message lacks %q:\n%s", reason, want, msg)
			}
		}
		checkMessageShape(t, msg)
	}
}
