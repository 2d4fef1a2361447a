package assemble

import (
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	rgv1 "github.com/retentionguard/retention-guard/api/v1alpha1"
	"github.com/retentionguard/retention-guard/internal/proof"
)

var now = time.Date(2026, 12, 2, 3, 0, 0, 0, time.UTC)

func cfg(v string) proof.ConfigValue { return proof.ConfigValue{Present: true, Value: v} }

func testPolicy() proof.Policy {
	return proof.Policy{GroupID: "settle", Topics: []string{"settle-task"}, RecoveryWindow: 72 * time.Hour}
}

// obs is group settle on settle-task (30 days of retention, 7 days of
// offsets retention), its one partition committed at log end.
func obs(state string) proof.Observation {
	return proof.Observation{
		ObservedAt:              now,
		ClusterID:               "prod-a",
		OffsetsRetentionMinutes: cfg("10080"),
		Group: proof.GroupObservation{ID: "settle", State: state, Protocol: proof.ProtocolClassic,
			ProtocolType: proof.ProtocolTypeConsumer},
		Topics: []proof.TopicObservation{{
			Name:           "settle-task",
			RetentionMs:    cfg(strconv.FormatInt((30 * 24 * time.Hour).Milliseconds(), 10)),
			RetentionBytes: cfg("-1"),
			CleanupPolicy:  cfg("delete"),
			Partitions:     []proof.PartitionObservation{{Partition: 0, LogStart: 0, LogEnd: 10, Committed: 10}},
		}},
	}
}

// Without CronJobs or a prior proof, the assembled proof is internal/proof's
// (what `check` gets).
func TestProofIsEvaluateWithoutCronJobsOrPrior(t *testing.T) {
	for _, state := range []string{proof.GroupStateStable, proof.GroupStateEmpty} {
		o := obs(state)
		got := Proof(Input{Policy: testPolicy(), Observation: o, Now: now})
		want := proof.Evaluate(o, testPolicy(), now)
		if !reflect.DeepEqual(got.Result, want) || !reflect.DeepEqual(got.Observation, o) {
			t.Errorf("%s: assembled %+v, want Evaluate's %+v", state, got.Result, want)
		}
	}
}

// The selected CronJobs' warnings follow the proof's own, judged against the
// observation's offsets.retention.minutes; the verdict is the proof's.
func TestProofAddsCronJobWarnings(t *testing.T) {
	weekly := CronJob{Name: "settle", Schedule: "0 2 * * 1", Gap: ScheduleGap{Gap: 7 * 24 * time.Hour}}
	o := obs(proof.GroupStateStable)
	plain := proof.Evaluate(o, testPolicy(), now)
	got := Proof(Input{Policy: testPolicy(), Observation: o, CronJobs: []CronJob{weekly}, Now: now}).Result
	if got.Verdict != plain.Verdict || got.ProofID != plain.ProofID {
		t.Errorf("verdict %s (%s), want the proof's %s (%s)", got.Verdict, got.ProofID, plain.Verdict, plain.ProofID)
	}
	want := append(slices.Clone(plain.Warnings),
		proof.Warning{Type: proof.WarningCronJobSchedule, Reason: proof.WarningReasonGapReachesOffsetsRetention,
			Subject: `settle ("0 2 * * 1")`, Span: 7 * 24 * time.Hour, Limit: 7 * 24 * time.Hour,
			Message: `CronJob settle ("0 2 * * 1") runs up to 7d apart, ` +
				`not less than offsets.retention.minutes=10080 (7d): the group's offsets expire between two runs`},
		proof.Warning{Type: proof.WarningCronJobSchedule, Reason: proof.WarningReasonGapReachesRecoveryWindow,
			Subject: `settle ("0 2 * * 1")`, Span: 7 * 24 * time.Hour, Limit: 3 * 24 * time.Hour,
			Message: `CronJob settle ("0 2 * * 1") runs up to 7d apart, ` +
				`not less than recoveryWindow 3d: the pause between runs uses up the window`})
	if !reflect.DeepEqual(got.Warnings, want) {
		t.Errorf("warnings %+v, want %+v", got.Warnings, want)
	}

	// Offsets retention not read: the gap cannot be judged against it.
	o.OffsetsRetentionMinutes = proof.ConfigValue{}
	got = Proof(Input{Policy: testPolicy(), Observation: o, CronJobs: []CronJob{weekly}, Now: now}).Result
	for _, w := range got.Warnings {
		if strings.Contains(w.Message, "offsets.retention.minutes=") {
			t.Errorf("judged against an unknown offsets.retention.minutes: %s", w.Message)
		}
	}
}

// A prior proof that saw the group Stable an hour ago dates its Empty clock:
// Empty for at most an hour, 7 days of offsets outlive the 72h window.
func TestProofDatesTheEmptyClockFromThePrior(t *testing.T) {
	hourAgo := metav1.NewTime(now.Add(-time.Hour))
	prior := &rgv1.ProofStatus{CheckedAt: hourAgo, ClusterID: "prod-a", GroupState: proof.GroupStateStable,
		GroupProtocol: proof.ProtocolClassic, GroupProtocolType: proof.ProtocolTypeConsumer}
	o := obs(proof.GroupStateEmpty)
	if v := Proof(Input{Policy: testPolicy(), Observation: o, Now: now}).Result.Verdict; v != proof.Unknown {
		t.Fatalf("without a prior: %s, want Unknown (an Empty clock nobody saw start)", v)
	}
	out := Proof(Input{Policy: testPolicy(), Observation: o, Prior: prior, Now: now})
	if out.Result.Verdict != proof.Proven {
		t.Errorf("with the prior: %s (%+v), want Proven", out.Result.Verdict, out.Result.Violations)
	}
	if !out.Observation.Group.EmptySince.Equal(hourAgo.Time) {
		t.Errorf("emptySince %v, want the prior's checkedAt %v", out.Observation.Group.EmptySince, hourAgo.Time)
	}
	prior.ClusterID = "prod-b"
	if v := Proof(Input{Policy: testPolicy(), Observation: o, Prior: prior, Now: now}).Result.Verdict; v != proof.Unknown {
		t.Errorf("another cluster's prior: %s, want Unknown", v)
	}
}
