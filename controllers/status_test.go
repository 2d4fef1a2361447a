package controllers

import (
	"strconv"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	rgv1 "github.com/retentionguard/retention-guard/api/v1alpha1"
	"github.com/retentionguard/retention-guard/internal/gather"
	"github.com/retentionguard/retention-guard/internal/heartbeat"
	"github.com/retentionguard/retention-guard/internal/proof"
	"github.com/retentionguard/retention-guard/internal/resolve"
	"github.com/retentionguard/retention-guard/internal/writerule"
)

// The status setters are pure: these tables need no cluster.

var statusNow = time.Date(2026, 11, 30, 3, 0, 0, 0, time.UTC)

const testWindow = 72 * time.Hour

func cfgValue(v string) proof.ConfigValue { return proof.ConfigValue{Present: true, Value: v} }

func testPolicy() proof.Policy {
	return proof.Policy{
		UID:            "0b7e3c1a-1111-4f5e-9a51-5d0c8f3e2a10",
		GroupID:        "fanout",
		Topics:         []string{"outbox"},
		RecoveryWindow: testWindow,
	}
}

// obsWith is an observation of group fanout on topic outbox (7 days of
// retention), one partition per (logStart, logEnd, committed) triple.
func obsWith(parts ...[3]int64) proof.Observation {
	t := proof.TopicObservation{
		Name:           "outbox",
		RetentionMs:    cfgValue(strconv.FormatInt((7 * 24 * time.Hour).Milliseconds(), 10)),
		RetentionBytes: cfgValue("-1"),
		CleanupPolicy:  cfgValue("delete"),
	}
	for i, p := range parts {
		t.Partitions = append(t.Partitions, proof.PartitionObservation{
			Partition: int32(i), LogStart: p[0], LogEnd: p[1], Committed: p[2],
		})
	}
	return proof.Observation{
		ObservedAt:              statusNow.Add(-1500 * time.Millisecond),
		OffsetsRetentionMinutes: cfgValue("10080"),
		// A running classic consumer group: no Empty clock (an Empty
		// group the manager never saw go Empty is Unknown).
		Group: proof.GroupObservation{ID: "fanout", State: proof.GroupStateStable, Protocol: proof.ProtocolClassic,
			ProtocolType: proof.ProtocolTypeConsumer},
		Topics: []proof.TopicObservation{t},
	}
}

func healthyObs() proof.Observation { return obsWith([3]int64{0, 10, 10}, [3]int64{0, 10, 4}) }

func condition(st rgv1.ConsumerRetentionPolicyStatus, typ string) *metav1.Condition {
	return meta.FindStatusCondition(st.Conditions, typ)
}

type condWant struct {
	status metav1.ConditionStatus
	reason string
}

// assertConditions checks the listed conditions, and that the absent ones
// are absent (kstatus: Reconciling and Stalled appear only while True).
func assertConditions(g Gomega, st rgv1.ConsumerRetentionPolicyStatus, want map[string]condWant, absent ...string) {
	for typ, w := range want {
		c := condition(st, typ)
		g.Expect(c).NotTo(BeNil(), "condition %s", typ)
		g.Expect(string(c.Status)).To(Equal(string(w.status)), "condition %s: %+v", typ, c)
		g.Expect(c.Reason).To(Equal(w.reason), "condition %s: %+v", typ, c)
		g.Expect(c.Message).NotTo(BeEmpty(), "condition %s", typ)
	}
	for _, typ := range absent {
		g.Expect(condition(st, typ)).To(BeNil(), "condition %s must be absent", typ)
	}
	for _, c := range st.Conditions {
		if c.Type == ConditionReconciling || c.Type == ConditionStalled {
			g.Expect(c.Status).To(Equal(metav1.ConditionTrue), "%s present while not True", c.Type)
		}
	}
}

func provenStatus(gen int64) rgv1.ConsumerRetentionPolicyStatus {
	return computeStatus(rgv1.ConsumerRetentionPolicyStatus{}, statusInput{
		Generation: gen, Policy: testPolicy(), Now: statusNow, Observation: ptrTo(healthyObs()),
	}).Status
}

func stalledStatus(gen int64) rgv1.ConsumerRetentionPolicyStatus {
	return computeStatus(rgv1.ConsumerRetentionPolicyStatus{}, statusInput{
		Generation: gen, Policy: testPolicy(), Now: statusNow,
		Problem: &SpecProblem{Reason: resolve.ReasonSecretKeyMissing, Message: `Secret "kafka-user" has no key "password"`},
	}).Status
}

func ptrTo[T any](v T) *T { return &v }

func TestComputeStatus(t *testing.T) {
	expired := make([][3]int64, 25)
	for i := range expired {
		expired[i] = [3]int64{100, 120, 40} // 60 records expired each
	}
	cases := []struct {
		name   string
		cur    rgv1.ConsumerRetentionPolicyStatus
		in     statusInput
		assert func(g Gomega, cur rgv1.ConsumerRetentionPolicyStatus, out statusOutcome)
	}{
		{
			name: "first proof pending: Reconciling and Ready Unknown, no generation observed yet",
			in:   statusInput{Generation: 1, Policy: testPolicy(), Now: statusNow},
			assert: func(g Gomega, _ rgv1.ConsumerRetentionPolicyStatus, out statusOutcome) {
				assertConditions(g, out.Status, map[string]condWant{
					ConditionReconciling: {metav1.ConditionTrue, ReasonProofPending},
					proof.ClauseReady:    {metav1.ConditionUnknown, ReasonProofPending},
				}, ConditionStalled)
				g.Expect(out.Status.ObservedGeneration).To(BeZero())
				g.Expect(out.Status.Proof).To(BeNil())
				g.Expect(out.Result).To(BeNil())
			},
		},
		{
			name: "periodic re-check pending: the last proof of this generation stands, nothing changes",
			cur:  provenStatus(3),
			in:   statusInput{Generation: 3, Policy: testPolicy(), Now: statusNow.Add(time.Minute)},
			assert: func(g Gomega, cur rgv1.ConsumerRetentionPolicyStatus, out statusOutcome) {
				g.Expect(out.Status).To(Equal(cur))
				g.Expect(out.Result).To(BeNil())
			},
		},
		{
			name: "new generation pending: Reconciling, Ready Unknown, observedGeneration and proof still the old ones",
			cur:  provenStatus(3),
			in:   statusInput{Generation: 4, Policy: testPolicy(), Now: statusNow.Add(time.Minute)},
			assert: func(g Gomega, cur rgv1.ConsumerRetentionPolicyStatus, out statusOutcome) {
				assertConditions(g, out.Status, map[string]condWant{
					ConditionReconciling: {metav1.ConditionTrue, ReasonProofPending},
					proof.ClauseReady:    {metav1.ConditionUnknown, ReasonProofPending},
				}, ConditionStalled)
				g.Expect(condition(out.Status, ConditionReconciling).Message).To(ContainSubstring("generation 4"))
				g.Expect(out.Status.ObservedGeneration).To(Equal(int64(3)))
				g.Expect(out.Status.Proof).To(Equal(cur.Proof))
			},
		},
		{
			name: "spec problem fixed, proof pending: Stalled goes, Reconciling comes",
			cur:  stalledStatus(2),
			in:   statusInput{Generation: 2, Policy: testPolicy(), Now: statusNow.Add(time.Minute)},
			assert: func(g Gomega, _ rgv1.ConsumerRetentionPolicyStatus, out statusOutcome) {
				assertConditions(g, out.Status, map[string]condWant{
					ConditionReconciling: {metav1.ConditionTrue, ReasonProofPending},
					proof.ClauseReady:    {metav1.ConditionUnknown, ReasonProofPending},
				}, ConditionStalled)
			},
		},
		{
			name: "healthy group: Proven with every clause True and the facts in status.proof",
			cur:  rgv1.ConsumerRetentionPolicyStatus{},
			in:   statusInput{Generation: 2, Policy: testPolicy(), Now: statusNow, Observation: ptrTo(healthyObs())},
			assert: func(g Gomega, _ rgv1.ConsumerRetentionPolicyStatus, out statusOutcome) {
				assertConditions(g, out.Status, map[string]condWant{
					proof.ClauseKafkaReachable:        {metav1.ConditionTrue, proof.ReasonReachable},
					proof.ClauseRetentionCoversWindow: {metav1.ConditionTrue, proof.ReasonRetentionCoversWindow},
					proof.ClauseGroupOffsetsRetained:  {metav1.ConditionTrue, proof.ReasonGroupOffsetsRetained},
					proof.ClauseOffsetsInRange:        {metav1.ConditionTrue, proof.ReasonOffsetsInRange},
					proof.ClauseReady:                 {metav1.ConditionTrue, proof.ReasonProven},
				}, ConditionReconciling, ConditionStalled)
				for _, c := range out.Status.Conditions {
					g.Expect(c.ObservedGeneration).To(Equal(int64(2)), "condition %s", c.Type)
				}
				g.Expect(out.Status.ObservedGeneration).To(Equal(int64(2)))
				p := out.Status.Proof
				g.Expect(p).NotTo(BeNil())
				g.Expect(p.Verdict).To(Equal(rgv1.VerdictProven))
				g.Expect(p.ProofID).To(BeEmpty())
				g.Expect(p.CheckedAt.Time).To(Equal(statusNow.Add(-2*time.Second)), "checkedAt is the observation's, to the second")
				g.Expect(p.PartitionSummary).To(Equal(rgv1.PartitionSummary{Total: 2, InRange: 2}))
				g.Expect(p.Topics).To(HaveLen(1))
				g.Expect(*p.Topics[0].RetentionMs).To(Equal(int64(604800000)))
				g.Expect(*p.Topics[0].RetentionBytes).To(Equal(int64(-1)))
				g.Expect(p.Topics[0].CleanupPolicy).To(Equal("delete"))
				g.Expect(*p.OffsetsRetentionMinutes).To(Equal(int64(10080)))
				g.Expect(p.GroupState).To(Equal("Stable"))
				g.Expect(p.RecoveryHeadroom).NotTo(BeNil())
				g.Expect(p.RecoveryHeadroom.Duration).To(Equal(7*24*time.Hour), "a caught-up partition has the full retention.ms")
			},
		},
		{
			name: "expired committed offset: Violated, CommittedOffsetExpired, the numbers and a proofID",
			in: statusInput{Generation: 1, Policy: testPolicy(), Now: statusNow,
				Observation: ptrTo(obsWith([3]int64{0, 10, 10}, [3]int64{4200, 5000, 0}))},
			assert: func(g Gomega, _ rgv1.ConsumerRetentionPolicyStatus, out statusOutcome) {
				assertConditions(g, out.Status, map[string]condWant{
					proof.ClauseOffsetsInRange: {metav1.ConditionFalse, proof.ReasonCommittedOffsetExpired},
					proof.ClauseReady:          {metav1.ConditionFalse, proof.ReasonCommittedOffsetExpired},
				}, ConditionReconciling, ConditionStalled)
				p := out.Status.Proof
				g.Expect(p.Verdict).To(Equal(rgv1.VerdictViolated))
				g.Expect(p.ProofID).NotTo(BeEmpty())
				g.Expect(p.ExpiredRecords).To(Equal(int64(4200)))
				g.Expect(p.PartitionSummary).To(Equal(rgv1.PartitionSummary{Total: 2, InRange: 1, Expired: 1}))
				g.Expect(p.Violations).To(HaveLen(1))
				g.Expect(p.Violations[0].Reason).To(Equal(proof.ReasonCommittedOffsetExpired))
				g.Expect(p.Violations[0].Topic).To(Equal("outbox"))
				g.Expect(*p.Violations[0].Partition).To(Equal(int32(1)))
				g.Expect(p.Violations[0].Message).To(ContainSubstring("4200"))
				g.Expect(p.ViolationsOmitted).To(BeZero())
			},
		},
		{
			name: "25 violations: 20 listed, 5 counted",
			in:   statusInput{Generation: 1, Policy: testPolicy(), Now: statusNow, Observation: ptrTo(obsWith(expired...))},
			assert: func(g Gomega, _ rgv1.ConsumerRetentionPolicyStatus, out statusOutcome) {
				p := out.Status.Proof
				g.Expect(p.Violations).To(HaveLen(20))
				g.Expect(p.ViolationsOmitted).To(Equal(int32(5)))
				// The omitted ones counted by reason, before the list was
				// cut: admission judges them by it.
				g.Expect(p.ViolationsOmittedByReason).To(Equal([]rgv1.ReasonCount{{Reason: proof.ReasonCommittedOffsetExpired, Count: 5}}))
				g.Expect(p.ExpiredRecords).To(Equal(int64(25 * 60)))
				g.Expect(p.PartitionSummary.Expired).To(Equal(int32(25)))
			},
		},
		{
			name: "broker unreachable: Unknown, KafkaReachable False, Ready Unknown, not Stalled",
			cur:  provenStatus(1),
			in: statusInput{Generation: 1, Policy: testPolicy(), Now: statusNow, Observation: &proof.Observation{
				ObservedAt: statusNow,
				Group:      proof.GroupObservation{ID: "fanout"},
				Failures: []proof.Failure{{Reason: proof.ReasonBrokerUnreachable, API: "Metadata", Partition: -1,
					Message: "cannot connect: dial tcp 127.0.0.1:1: connect: connection refused"}},
			}},
			assert: func(g Gomega, _ rgv1.ConsumerRetentionPolicyStatus, out statusOutcome) {
				assertConditions(g, out.Status, map[string]condWant{
					proof.ClauseKafkaReachable: {metav1.ConditionFalse, proof.ReasonBrokerUnreachable},
					proof.ClauseReady:          {metav1.ConditionUnknown, proof.ReasonBrokerUnreachable},
				}, ConditionReconciling, ConditionStalled)
				g.Expect(out.Status.Proof.Verdict).To(Equal(rgv1.VerdictUnknown))
				g.Expect(out.Status.Proof.ProofID).NotTo(BeEmpty())
			},
		},
		{
			name: "bootstrap server not allowed: Stalled, Ready False, KafkaReachable False, verdict Unknown",
			cur:  provenStatus(1),
			in: statusInput{Generation: 2, Policy: testPolicy(), Now: statusNow, Problem: &SpecProblem{
				Reason: proof.ReasonBootstrapServerNotAllowed, Message: "bootstrap server evil:9092 is not allowed"}},
			assert: func(g Gomega, _ rgv1.ConsumerRetentionPolicyStatus, out statusOutcome) {
				assertConditions(g, out.Status, map[string]condWant{
					proof.ClauseKafkaReachable:        {metav1.ConditionFalse, proof.ReasonBootstrapServerNotAllowed},
					proof.ClauseReady:                 {metav1.ConditionFalse, proof.ReasonBootstrapServerNotAllowed},
					ConditionStalled:                  {metav1.ConditionTrue, proof.ReasonBootstrapServerNotAllowed},
					proof.ClauseRetentionCoversWindow: {metav1.ConditionUnknown, proof.ReasonNotEvaluated},
					proof.ClauseOffsetsInRange:        {metav1.ConditionUnknown, proof.ReasonNotEvaluated},
				}, ConditionReconciling)
				g.Expect(condition(out.Status, proof.ClauseReady).Message).To(ContainSubstring("evil:9092"))
				g.Expect(out.Status.ObservedGeneration).To(Equal(int64(2)))
				p := out.Status.Proof
				g.Expect(p.Verdict).To(Equal(rgv1.VerdictUnknown))
				g.Expect(p.Topics).To(BeEmpty(), "the old observation's facts are gone")
				g.Expect(p.Violations).NotTo(BeEmpty())
				g.Expect(p.Violations[0].Reason).To(Equal(proof.ReasonBootstrapServerNotAllowed))
				g.Expect(out.Result.Verdict).To(Equal(proof.Unknown))
			},
		},
		{
			name: "the same spec problem decided again: nothing changes, checkedAt included",
			cur:  stalledStatus(2),
			in: statusInput{Generation: 2, Policy: testPolicy(), Now: statusNow.Add(10 * time.Minute),
				Problem: &SpecProblem{Reason: resolve.ReasonSecretKeyMissing, Message: `Secret "kafka-user" has no key "password"`}},
			assert: func(g Gomega, cur rgv1.ConsumerRetentionPolicyStatus, out statusOutcome) {
				g.Expect(out.Status).To(Equal(cur))
			},
		},
		{
			name: "recovery after a violation: Ready turns True with a new transition time, Stalled and Reconciling absent",
			cur: computeStatus(stalledStatus(1), statusInput{Generation: 1, Policy: testPolicy(), Now: statusNow.Add(-time.Hour),
				Observation: ptrTo(obsWith([3]int64{50, 60, 10}))}).Status,
			in: statusInput{Generation: 1, Policy: testPolicy(), Now: statusNow, Observation: ptrTo(healthyObs())},
			assert: func(g Gomega, cur rgv1.ConsumerRetentionPolicyStatus, out statusOutcome) {
				g.Expect(condition(cur, proof.ClauseReady).Status).To(Equal(metav1.ConditionFalse))
				ready := condition(out.Status, proof.ClauseReady)
				g.Expect(ready.Status).To(Equal(metav1.ConditionTrue))
				g.Expect(ready.LastTransitionTime.Time).To(Equal(statusNow))
				// KafkaReachable was True an hour ago and still is: its
				// transition time stays.
				g.Expect(condition(out.Status, proof.ClauseKafkaReachable).LastTransitionTime.Time).To(Equal(statusNow.Add(-time.Hour)))
				g.Expect(out.Status.Proof.ProofID).To(BeEmpty())
				assertConditions(g, out.Status, nil, ConditionReconciling, ConditionStalled)
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			cur := *tc.cur.DeepCopy()
			out := computeStatus(tc.cur, tc.in)
			g.Expect(tc.cur).To(Equal(cur), "computeStatus must not modify its input")
			tc.assert(g, cur, out)
			// Ready is always present.
			g.Expect(condition(out.Status, proof.ClauseReady)).NotTo(BeNil())
		})
	}
}

func TestProofStatusRoundsDurationsAndShortensWarnings(t *testing.T) {
	g := NewWithT(t)
	obs := obsWith([3]int64{0, 10, 4})
	// The record at the committed offset is 6 days, 23h59m58.6s old: 1.4s
	// of a 7-day retention left, far below the 72h window.
	obs.Topics[0].Partitions[0].CommittedTimestamp = obs.ObservedAt.Add(-(7*24*time.Hour - 1400*time.Millisecond))
	res := proof.Evaluate(obs, testPolicy(), obs.ObservedAt)
	g.Expect(res.HasRecoveryHeadroom).To(BeTrue())
	g.Expect(res.Warnings).NotTo(BeEmpty(), "headroom below the window is a warning")
	// The headroom warning fits as it is; one longer than the bound must
	// be shortened.
	res.Warnings = append(res.Warnings, proof.Warning{Type: proof.WarningRecoveryHeadroom, Message: strings.Repeat("x", 2*gather.MaxWarningLength)})
	ps := gather.ProofStatus(obs, res)
	g.Expect(ps.RecoveryHeadroom.Duration).To(Equal(time.Second), "rounded to seconds")
	// Configuration advice (the topic takes CreateTime timestamps of any
	// age) goes to configWarnings, the risks to warnings.
	risks := 0
	for _, w := range res.Warnings {
		if !proof.ConfigWarning(w.Type) {
			risks++
		}
	}
	g.Expect(ps.Warnings).To(HaveLen(risks))
	g.Expect(ps.ConfigWarnings).To(HaveLen(len(res.Warnings) - risks))
	g.Expect(ps.ConfigWarnings).To(ContainElement(ContainSubstring("accepts record timestamps of any age")))
	g.Expect(ps.Warnings[0]).To(Equal(res.Warnings[0].Message), "a short warning is kept whole")
	long := ps.Warnings[len(ps.Warnings)-1]
	g.Expect(len(long)).To(BeNumerically("<=", gather.MaxWarningLength))
	g.Expect(long).To(HaveSuffix("..."))
	// Issue 22 item 6: the headroom below the window comes with its
	// violation: the verdict agrees with the warning.
	g.Expect(ps.Verdict).To(Equal(rgv1.VerdictViolated), "headroom below the window is Violated")
}

// computeStatus applies the write rule (internal/writerule, whose table
// TestWriteOrKeep covers each of its rows) to real proofs: with a heartbeat
// Lease, a check that finds the same facts leaves the status as it is (no
// write); a headroom that drifts by more than 1% is written, and so is a
// violation. Seed 000: the fan-out's lagging partition, then its loss.
func TestUnchangedProofIsNotWrittenAgain(t *testing.T) {
	hb := &rgv1.HeartbeatReference{Namespace: "retention-guard", Name: heartbeat.LeaseName([]string{"kafka:9092"}, time.Minute)}
	// A lagging partition: its headroom is the record's timestamp plus
	// 7 days of retention, minus now.
	obsAt := func(at time.Time, committed int64) *proof.Observation {
		logStart := int64(0)
		if committed == 1 {
			logStart = 3 // retention deleted records the group had not read
		}
		o := obsWith([3]int64{0, 10, 10}, [3]int64{logStart, 10, committed})
		o.ObservedAt = at
		o.Topics[0].Partitions[1].CommittedTimestamp = statusNow.Add(-time.Hour)
		return &o
	}
	check := func(cur rgv1.ConsumerRetentionPolicyStatus, at time.Time, committed int64) statusOutcome {
		return computeStatus(cur, statusInput{Generation: 1, Policy: testPolicy(), Now: at, Observation: obsAt(at, committed),
			Heartbeat: hb, Interval: time.Minute})
	}
	first := check(rgv1.ConsumerRetentionPolicyStatus{}, statusNow, 4)
	g := NewWithT(t)
	g.Expect(first.Decision).To(Equal(writerule.Decision{Write: true, Reason: writerule.ReasonNewVerdict}))
	g.Expect(first.Status.Heartbeat).To(Equal(hb))
	g.Expect(first.Status.Proof.RecoveryHeadroom.Duration).To(Equal(7*24*time.Hour - time.Hour))

	// A minute later the headroom is a minute shorter: within 1% of 6d23h.
	same := check(first.Status, statusNow.Add(time.Minute), 4)
	g.Expect(same.Status).To(Equal(first.Status), "one interval later, the same facts")
	g.Expect(same.Decision.Reason).To(Equal(writerule.ReasonSameFacts))
	// After two hours it has moved by more than 1% (1h40m): rewritten.
	later := check(first.Status, statusNow.Add(2*time.Hour), 4)
	g.Expect(later.Decision.Reason).To(Equal(writerule.ReasonFactsChanged))
	g.Expect(later.Status.Proof.CheckedAt.Time).To(Equal(statusNow.Add(2 * time.Hour)))
	g.Expect(later.Status.Proof.RecoveryHeadroom.Duration).To(Equal(7*24*time.Hour - 3*time.Hour))
	// A live consumer's committed offset moves within range: no fact in
	// status changes (the summary counts partitions in range; the lag in
	// OffsetsInRange's message is a live figure, as of checkedAt).
	g.Expect(check(first.Status, statusNow.Add(time.Minute), 6).Status).To(Equal(first.Status), "a committed offset that moves within range")
	// A violation is: written at once, with the new checkedAt.
	lost := check(first.Status, statusNow.Add(time.Minute), 1)
	g.Expect(lost.Decision.Reason).To(Equal(writerule.ReasonNewVerdict))
	g.Expect(lost.Status.Proof.Verdict).NotTo(Equal(first.Status.Proof.Verdict))
	g.Expect(lost.Status.Proof.CheckedAt.Time).To(Equal(statusNow.Add(time.Minute)))
}

// Seed 000's stopped fan-out consumer, two days of headroom left on a
// three-day window: the headroom warning's text changes every check ("in
// 2d0h" becomes "in 1d23h59m"), its facts do not; the status is not
// rewritten for the drift alone, and is for a fact that changes (the
// committed offset it speaks of). Warnings are compared as warningFacts,
// never as masked prose.
func TestWarningComparedByItsFacts(t *testing.T) {
	hb := &rgv1.HeartbeatReference{Namespace: "retention-guard", Name: heartbeat.LeaseName([]string{"kafka:9092"}, time.Minute)}
	obsAt := func(at time.Time, committed int64) *proof.Observation {
		o := obsWith([3]int64{0, 10, committed})
		o.ObservedAt = at
		o.Topics[0].Partitions[0].CommittedTimestamp = statusNow.Add(-5 * 24 * time.Hour)
		return &o
	}
	check := func(cur rgv1.ConsumerRetentionPolicyStatus, at time.Time, committed int64) statusOutcome {
		return computeStatus(cur, statusInput{Generation: 1, Policy: testPolicy(), Now: at, Observation: obsAt(at, committed), Heartbeat: hb})
	}
	g := NewWithT(t)
	first := check(rgv1.ConsumerRetentionPolicyStatus{}, statusNow, 4).Status
	g.Expect(first.Proof.Warnings).To(HaveLen(1))
	g.Expect(first.Proof.ConfigWarnings).To(HaveLen(1), "outbox accepts record timestamps of any age")
	g.Expect(first.Proof.WarningFacts).To(Equal([]rgv1.WarningFact{{
		Type: proof.WarningRecoveryHeadroom, Reason: proof.WarningReasonShorterThanWindow, Subject: "outbox[0]",
		Offset: ptr.To[int64](4), In: &metav1.Duration{Duration: 48 * time.Hour}, Limit: &metav1.Duration{Duration: testWindow},
	}, {
		Type: proof.WarningRecordTimestamps, Reason: proof.WarningReasonAcceptsAnyAge, Subject: "outbox",
		Span: &metav1.Duration{Duration: 7*24*time.Hour - testWindow},
	}}), "warnings first, then configWarnings")

	// Five minutes later: the rendered warning differs, the status does not.
	drift := check(first, statusNow.Add(5*time.Minute), 4)
	fresh := gather.ProofStatus(*obsAt(statusNow.Add(5*time.Minute), 4), *drift.Result)
	g.Expect(fresh.Warnings[0]).NotTo(Equal(first.Proof.Warnings[0]), "the warning's prose drifted")
	g.Expect(drift.Status).To(Equal(first), "a warning that only drifts in its duration is not rewritten")

	// The warning now speaks of committed offset 5: a fact, written at once.
	moved := check(first, statusNow.Add(5*time.Minute), 5).Status
	g.Expect(moved.Proof.CheckedAt.Time).To(Equal(statusNow.Add(5 * time.Minute)))
	g.Expect(*moved.Proof.WarningFacts[0].Offset).To(Equal(int64(5)))
	g.Expect(moved.Proof.Warnings[0]).To(ContainSubstring("committed offset 5"))

	// Drifting past writerule.Tolerance (1% of 2d, 28m48s) is written too.
	far := check(first, statusNow.Add(30*time.Minute), 4).Status
	g.Expect(far.Proof.CheckedAt.Time).To(Equal(statusNow.Add(30 * time.Minute)))
}

// A cursor spec problem (Secret missing, host not allowed) stalls the
// policy while the proof of the Kafka facts stands, with the cursor
// CursorUnreadable; dropping spec.cursor removes CursorInRange and the
// stall.
func TestComputeStatusCursor(t *testing.T) {
	g := NewWithT(t)
	pol := testPolicy()
	pol.Cursor = &proof.CursorPolicy{ResumeFrom: proof.ResumeFromCursor}
	obs := healthyObs()
	obs.Cursor = proof.CursorObservation{Problem: `Secret "settle-db" named by spec.cursor.sql.secretRef does not exist in the policy's namespace`}
	problem := &SpecProblem{Reason: resolve.ReasonSecretNotFound, Message: obs.Cursor.Problem}
	out := computeStatus(rgv1.ConsumerRetentionPolicyStatus{}, statusInput{Generation: 2, Policy: pol, Now: statusNow, Observation: &obs, CursorProblem: problem})
	st := out.Status
	g.Expect(st.ObservedGeneration).To(Equal(int64(2)))
	g.Expect(st.Proof.Verdict).To(Equal(rgv1.VerdictUnknown))
	g.Expect(condition(st, proof.ClauseKafkaReachable).Status).To(Equal(metav1.ConditionTrue))
	cur := condition(st, proof.ClauseCursorInRange)
	g.Expect(cur).NotTo(BeNil())
	g.Expect(cur.Reason).To(Equal(proof.ReasonCursorUnreadable))
	g.Expect(cur.Message).To(ContainSubstring(`Secret "settle-db"`))
	stalled := condition(st, ConditionStalled)
	g.Expect(stalled).NotTo(BeNil())
	g.Expect(stalled.Reason).To(Equal(resolve.ReasonSecretNotFound))
	g.Expect(st.Proof.Cursor).To(Equal(&rgv1.CursorStatus{ResumeFrom: rgv1.ResumeFromCursor}))

	// spec.cursor removed: the clause and the stall go.
	out = computeStatus(st, statusInput{Generation: 3, Policy: testPolicy(), Now: statusNow, Observation: ptrTo(healthyObs())})
	g.Expect(condition(out.Status, proof.ClauseCursorInRange)).To(BeNil())
	g.Expect(condition(out.Status, ConditionStalled)).To(BeNil())
	g.Expect(out.Status.Proof.Cursor).To(BeNil())
	g.Expect(out.Status.Proof.Verdict).To(Equal(rgv1.VerdictProven))
}

// Whether a check with a heartbeat rewrites the status is decided by the
// violations' facts (reason, topic, partition and numbers), not by their
// messages: a number that changes is written at once; a message that
// changes only because time passed, or because a live figure such as the
// lag moved, is not.
func TestViolationFactsDecideWhetherTheStatusChanged(t *testing.T) {
	hb := &rgv1.HeartbeatReference{Namespace: "retention-guard", Name: heartbeat.LeaseName([]string{"kafka:9092"}, time.Minute)}
	check := func(cur rgv1.ConsumerRetentionPolicyStatus, obs proof.Observation, at time.Time) rgv1.ConsumerRetentionPolicyStatus {
		obs.ObservedAt = at
		return computeStatus(cur, statusInput{Generation: 1, Policy: testPolicy(), Now: at, Observation: &obs, Heartbeat: hb}).Status
	}
	minute := statusNow.Add(time.Minute)
	single := func(g Gomega, st rgv1.ConsumerRetentionPolicyStatus, reason string) rgv1.ViolationStatus {
		g.Expect(st.Proof.Violations).To(HaveLen(1))
		g.Expect(st.Proof.Violations[0].Reason).To(Equal(reason))
		return st.Proof.Violations[0]
	}

	t.Run("a committed offset that moves below log start is written", func(t *testing.T) {
		g := NewWithT(t)
		first := check(rgv1.ConsumerRetentionPolicyStatus{}, obsWith([3]int64{30, 100, 10}), statusNow)
		v := single(g, first, proof.ReasonCommittedOffsetExpired)
		g.Expect(*v.Committed).To(Equal(int64(10)))
		g.Expect(*v.ExpiredRecords).To(Equal(int64(20)))
		next := check(first, obsWith([3]int64{30, 100, 20}), minute)
		g.Expect(next.Proof.CheckedAt.Time).To(Equal(minute), "rewritten")
		v = single(g, next, proof.ReasonCommittedOffsetExpired)
		g.Expect(*v.Committed).To(Equal(int64(20)))
		g.Expect(*v.ExpiredRecords).To(Equal(int64(10)))
		// Records written to the topic move its log end, not the gap.
		g.Expect(check(first, obsWith([3]int64{30, 150, 10}), minute)).To(Equal(first), "log end moved")
	})

	t.Run("a position beyond log end is written when log end moves", func(t *testing.T) {
		g := NewWithT(t)
		first := check(rgv1.ConsumerRetentionPolicyStatus{}, obsWith([3]int64{0, 100, 500}), statusNow)
		g.Expect(*single(g, first, proof.ReasonCommittedOffsetBeyondLogEnd).LogEnd).To(Equal(int64(100)))
		next := check(first, obsWith([3]int64{0, 120, 500}), minute)
		g.Expect(*single(g, next, proof.ReasonCommittedOffsetBeyondLogEnd).LogEnd).To(Equal(int64(120)))
	})

	// Lagging: the record at the committed offset is deleted in an hour,
	// inside the 3-day window; the group is 90 records behind, then 140
	// as the producer writes on.
	lagging := func(logEnd int64) proof.Observation {
		o := obsWith([3]int64{0, logEnd, 10})
		o.Topics[0].Partitions[0].CommittedTimestamp = statusNow.Add(-7*24*time.Hour + time.Hour)
		return o
	}
	t.Run("a lagging group's headroom violation is not rewritten as its lag grows", func(t *testing.T) {
		g := NewWithT(t)
		first := check(rgv1.ConsumerRetentionPolicyStatus{}, lagging(100), statusNow)
		v := single(g, first, proof.ReasonRecoveryHeadroomShorterThanWindow)
		g.Expect(v.ExpiresAt.Time).To(Equal(statusNow.Add(time.Hour)))
		g.Expect(v.Message).To(ContainSubstring("90 records behind"))
		g.Expect(check(first, lagging(150), minute)).To(Equal(first), "the same facts a minute later")
	})

	// An old client commits offset 400 with an explicit retention time
	// (OffsetCommit v2–v4): it expires at that time, inside the window.
	explicit := func(expireAt time.Time) proof.Observation {
		o := obsWith([3]int64{0, 500, 400})
		o.Group.State = proof.GroupStateStable
		o.Topics[0].Partitions[0].LastCommit = statusNow.Add(-time.Hour)
		o.Topics[0].Partitions[0].ExpireAt = expireAt
		return o
	}
	t.Run("an expiry that moves is written; a message that only counts down is not", func(t *testing.T) {
		g := NewWithT(t)
		first := check(rgv1.ConsumerRetentionPolicyStatus{}, explicit(statusNow.Add(24*time.Hour)), statusNow)
		v := single(g, first, proof.ReasonExplicitOffsetExpiryBeforeWindow)
		g.Expect(v.ExpiresAt.Time).To(Equal(statusNow.Add(24 * time.Hour)))
		g.Expect(check(first, explicit(statusNow.Add(24*time.Hour)), minute)).To(Equal(first), "the same expiry a minute later")
		// The client commits the same offset again, with a new retention
		// time a day later: still inside the window, same reason, same
		// offset, a new expiry.
		next := check(first, explicit(statusNow.Add(48*time.Hour)), minute)
		g.Expect(next.Proof.CheckedAt.Time).To(Equal(minute), "rewritten")
		g.Expect(single(g, next, proof.ReasonExplicitOffsetExpiryBeforeWindow).ExpiresAt.Time).To(Equal(statusNow.Add(48 * time.Hour)))
	})

	t.Run("an exact commit expiry's countdown in the message is not a change", func(t *testing.T) {
		g := NewWithT(t)
		simple := func() proof.Observation {
			o := obsWith([3]int64{0, 500, 400})
			o.Group.ProtocolType = "" // a simple group: its offsets expire per commit
			o.Topics[0].Partitions[0].LastCommit = statusNow.Add(-6 * 24 * time.Hour)
			return o
		}
		first := check(rgv1.ConsumerRetentionPolicyStatus{}, simple(), statusNow)
		v := single(g, first, proof.ReasonOffsetsExpireBeforeWindow)
		g.Expect(v.Message).To(ContainSubstring("in 24h (1d)"))
		g.Expect(check(first, simple(), minute)).To(Equal(first), `"in 24h (1d)" then "in 23h59m": the same expiry`)
	})
}

// Seed 000 (a second consumer of the group deployed beside the guarded
// one): the warning that a live member runs in a workload the selector
// misses (an unselected consumer) is news on its own. With a heartbeat, an
// unchanged proof is not rewritten; an unselected consumer that appears
// (or goes) must be, carried as a fact beside its prose, or the policy
// reads guarded while a consumer's rollouts go unchecked.
func TestUnselectedConsumerIsAFact(t *testing.T) {
	hb := &rgv1.HeartbeatReference{Namespace: "retention-guard", Name: heartbeat.LeaseName([]string{"kafka:9092"}, time.Minute)}
	obs := healthyObs()
	check := func(cur rgv1.ConsumerRetentionPolicyStatus, at time.Time, unselected []gather.UnselectedConsumer) rgv1.ConsumerRetentionPolicyStatus {
		o := obs
		o.ObservedAt = at
		return computeStatus(cur, statusInput{Generation: 1, Policy: testPolicy(), Now: at, Observation: &o, Heartbeat: hb, Unselected: unselected}).Status
	}
	g := NewWithT(t)
	first := check(rgv1.ConsumerRetentionPolicyStatus{}, statusNow, nil)
	same := check(first, statusNow.Add(time.Minute), nil)
	g.Expect(same).To(Equal(first), "nothing changed: not rewritten")

	u := gather.UnselectedConsumer{
		Message: "Deployment shop/fraud-scorer consumes the group (a live member at 10.0.0.7) but spec.selector does not select its pod template",
		Fact:    rgv1.WarningFact{Type: gather.WarningConsumerWorkload, Reason: gather.WarningReasonNotSelected, Subject: "Deployment shop/fraud-scorer"},
	}
	found := check(first, statusNow.Add(time.Minute), []gather.UnselectedConsumer{u})
	g.Expect(found.Proof.CheckedAt.Time).To(Equal(statusNow.Add(time.Minute)), "a new unselected consumer is written at once")
	g.Expect(found.Proof.ConfigWarnings).To(ContainElement(u.Message))
	g.Expect(found.Proof.WarningFacts).To(ContainElement(u.Fact))

	gone := check(found, statusNow.Add(2*time.Minute), nil)
	g.Expect(gone.Proof.CheckedAt.Time).To(Equal(statusNow.Add(2*time.Minute)), "one selected since is written at once")
	g.Expect(gone.Proof.WarningFacts).NotTo(ContainElement(u.Fact))
}
