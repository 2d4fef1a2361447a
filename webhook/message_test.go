package webhook

import (
	"fmt"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	rgv1 "github.com/retentionguard/retention-guard/api/v1alpha1"
	"github.com/retentionguard/retention-guard/internal/proof"
)

var settleTarget = target{Kind: "Deployment", Namespace: "settlement", Name: "settle", Rollout: rolloutScaleFromZero, User: "alice"}

// Admission contract, "denial message": seed 003's batch consumer scaled
// from zero after 8 days down. The message names the policy and the group,
// lists the findings with their numbers (partitions that share a reason on
// one line, with the count and the worst example), and says the way out:
// reset the offsets and retry, or override with the proof ID.
func TestDenyMessageSeed003(t *testing.T) {
	p := settlePolicy(withProof(noCommittedOffset(), 40*time.Second))
	d := decide([]policyEval{{Policy: p, Proof: p.Status.Proof}}, "")
	msg := denyMessage(settleTarget, &d, testNow)
	t.Logf("%d bytes:\n%s", len(msg), msg)

	for _, want := range []string{
		"refused this rollout (scale from zero) of Deployment settlement/settle",
		"policy ledger-settle-consumer (group ledger-settle-consumer) is Violated (proof 7f3a9c21, checked 40s ago)",
		"24 partitions, 24 without a committed offset",
		// 20 listed in status + 4 omitted, counted by the summary; the
		// worst example has the highest log start.
		"- NoCommittedOffset on 24 partitions of settle-task, e.g. settle-task[19]: no committed offset while log start is 193946",
		"kafka-consumer-groups --bootstrap-server kafka-0.kafka.kafka.svc:9093 --group ledger-settle-consumer --topic settle-task --reset-offsets --to-earliest --execute",
		"then retry",
		"kubectl annotate --overwrite deployment settle -n settlement retentionguard.io/override-proof=7f3a9c21",
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("message lacks %q", want)
		}
	}
	// One line for the 24 partitions: nothing is hidden behind "and N more".
	if n := strings.Count(msg, "\n- "); n != 1 || strings.Contains(msg, "- and ") {
		t.Errorf("%d findings listed, want the one NoCommittedOffset line and no count", n)
	}
	checkMessageShape(t, msg)
}

// Seed 003 as the operator writes its status: the proof sorts by clause,
// so OffsetsRetentionShorterThanWindow comes first and the status keeps 19
// of the 24 NoCommittedOffset violations. The denial shows the data loss
// first, with all 24 partitions counted, then the configuration, with
// nothing hidden behind "and N more", and both ways out.
func TestDenyMessageListsDataLossFirst(t *testing.T) {
	ps := noCommittedOffset()
	ps.Violations = append([]rgv1.ViolationStatus{{Reason: "OffsetsRetentionShorterThanWindow",
		Message: "offsets.retention.minutes 10080 (7d) is shorter than recoveryWindow 240h (10d): an empty group's committed offsets expire before the window ends"}},
		ps.Violations[:19]...)
	ps.ViolationsOmitted = 5
	p := settlePolicy(withProof(ps, 40*time.Second))
	d := decide([]policyEval{{Policy: p, Proof: p.Status.Proof}}, "")
	msg := denyMessage(settleTarget, &d, testNow)
	t.Logf("%d bytes:\n%s", len(msg), msg)

	var findings []string
	for _, l := range strings.Split(msg, "\n") {
		if strings.HasPrefix(l, "- ") {
			findings = append(findings, l)
		}
	}
	if len(findings) != 2 ||
		!strings.HasPrefix(findings[0], "- NoCommittedOffset on 24 partitions of settle-task, e.g. settle-task[18]: no committed offset while log start is 193945") ||
		!strings.HasPrefix(findings[1], "- OffsetsRetentionShorterThanWindow: offsets.retention.minutes 10080 (7d) is shorter than recoveryWindow 240h") {
		t.Errorf("findings, want NoCommittedOffset (24) then OffsetsRetentionShorterThanWindow:\n%s", strings.Join(findings, "\n"))
	}
	for _, want := range []string{"24 partitions, 24 without a committed offset", "--reset-offsets", "make retention.ms and offsets.retention.minutes cover"} {
		if !strings.Contains(msg, want) {
			t.Errorf("message lacks %q", want)
		}
	}
	checkMessageShape(t, msg)
}

// Findings are ordered data loss, then access, then configuration, then
// the rest, stable within a group; expired records stay visible.
func TestDenyMessageOrdersFindings(t *testing.T) {
	ps := &rgv1.ProofStatus{Verdict: rgv1.VerdictViolated, ProofID: "12345678", ExpiredRecords: 4201,
		PartitionSummary: rgv1.PartitionSummary{Total: 3, Expired: 2, InRange: 1},
		Violations: []rgv1.ViolationStatus{
			{Reason: "AuthorizationFailed", Topic: "audit", Message: "audit: DescribeConfigs: denied"},
			{Reason: "RetentionShorterThanWindow", Topic: "outbox", Message: "outbox: retention.ms 3600000 (1h) is shorter"},
			{Reason: "CommittedOffsetExpired", Topic: "outbox", Partition: ptr[int32](0),
				Committed: ptr[int64](9), LogStart: ptr[int64](10), ExpiredRecords: ptr[int64](1),
				Message: "outbox[0]: committed offset 9 is below log start 10: 1 record expired before this group read them"},
			{Reason: "CommittedOffsetExpired", Topic: "outbox", Partition: ptr[int32](1),
				Committed: ptr[int64](1200), LogStart: ptr[int64](5400), ExpiredRecords: ptr[int64](4200),
				Message: "outbox[1]: committed offset 1200 is below log start 5400: 4200 records expired before this group read them"},
		}}
	p := settlePolicy(withProof(ps, time.Second))
	d := decide([]policyEval{{Policy: p, Proof: p.Status.Proof}}, "")
	msg := denyMessage(settleTarget, &d, testNow)
	t.Logf("\n%s", msg)
	want := []string{
		"- CommittedOffsetExpired on 2 partitions of outbox, e.g. outbox[1]: committed offset 1200 is below log start 5400: 4200 records",
		"- AuthorizationFailed audit: DescribeConfigs: denied",
		"- RetentionShorterThanWindow outbox: retention.ms 3600000 (1h) is shorter",
	}
	var got []string
	for _, l := range strings.Split(msg, "\n") {
		if strings.HasPrefix(l, "- ") {
			got = append(got, l)
		}
	}
	if len(got) != len(want) {
		t.Fatalf("findings:\n%s", strings.Join(got, "\n"))
	}
	for i := range want {
		if !strings.HasPrefix(got[i], want[i]) {
			t.Errorf("finding %d = %q, want %q", i, got[i], want[i])
		}
	}
	if !strings.Contains(msg, "3 partitions, 2 expired; 4201 records expired unread") {
		t.Errorf("the numbers are not visible")
	}
	checkMessageShape(t, msg)
}

// Counts are pluralised: one partition, one record, one more policy.
func TestDenyMessagePluralises(t *testing.T) {
	ps := &rgv1.ProofStatus{Verdict: rgv1.VerdictViolated, ProofID: "12345678", ExpiredRecords: 1,
		PartitionSummary: rgv1.PartitionSummary{Total: 1, Expired: 1},
		Violations: []rgv1.ViolationStatus{{Reason: "CommittedOffsetExpired", Topic: "outbox", Partition: ptr[int32](0),
			Message: "outbox[0]: committed offset 9 is below log start 10: 1 record expired before this group read them"}}}
	var evals []policyEval
	for i := range 2 {
		p := settlePolicy(withProof(ps, time.Second), func(p *rgv1.ConsumerRetentionPolicy) {
			p.Name = fmt.Sprintf("a-policy-with-a-name-long-enough-to-be-counted-not-listed-%d", i)
			p.Spec.GroupID = strings.Repeat("g", 300)
		})
		evals = append(evals, policyEval{Policy: p, Proof: p.Status.Proof})
	}
	d := decide(evals, "")
	msg := denyMessage(settleTarget, &d, testNow)
	t.Logf("\n%s", msg)
	if !strings.Contains(msg, "1 partition, 1 expired; 1 record expired unread") {
		t.Errorf("summary not pluralised")
	}
	for _, bad := range []string{"1 partitions", "1 records", "1 more refusing policies"} {
		if strings.Contains(msg, bad) {
			t.Errorf("message says %q", bad)
		}
	}
	if strings.Count(msg, "\npolicy ") == 1 && !strings.Contains(msg, "And 1 more refusing policy:") {
		t.Errorf("the second policy is neither listed nor counted as %q", "And 1 more refusing policy:")
	}
	checkMessageShape(t, msg)
}

// A broker that cannot be reached makes the proof Unknown with only the
// failure listed; the way out is the connection, never retention settings.
// Unknown proofs that list unreadable facts get access advice too.
func TestDenyMessageWayOutForUnknownProofs(t *testing.T) {
	cases := []struct {
		name       string
		violations []rgv1.ViolationStatus
		want       string
	}{
		{"broker unreachable", []rgv1.ViolationStatus{{Reason: "BrokerUnreachable",
			Message: "Metadata: cannot reach the cluster at kafka-0.kafka.kafka.svc:9093: dial tcp: connection refused"}},
			"check the bootstrap servers and network, then retry"},
		{"authentication failed", []rgv1.ViolationStatus{{Reason: "AuthenticationFailed", Message: "Metadata: SASL failed"}},
			"check the credentials, then retry"},
		{"configs unreadable", []rgv1.ViolationStatus{
			{Reason: "RetentionUnreadable", Topic: "settle-task", Message: "settle-task: retention.ms is null"},
			{Reason: "OffsetsRetentionUnreadable", Message: "offsets.retention.minutes could not be read (not in the broker's answer)"}},
			"check the ACLs (Describe, DescribeConfigs), then retry"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ps := &rgv1.ProofStatus{Verdict: rgv1.VerdictUnknown, ProofID: "12345678", Violations: tc.violations}
			p := settlePolicy(withProof(ps, time.Second))
			d := decide([]policyEval{{Policy: p, Proof: p.Status.Proof}}, "")
			msg := denyMessage(settleTarget, &d, testNow)
			t.Logf("\n%s", msg)
			if n := strings.Count(msg, "Way out:"); n != 1 {
				t.Errorf("%d ways out, want 1", n)
			}
			if !strings.Contains(msg, "Way out: "+tc.want+"; details: kubectl describe crp ledger-settle-consumer -n settlement") {
				t.Errorf("way out lacks %q", tc.want)
			}
			if strings.Contains(msg, "cover recoveryWindow") || strings.Contains(msg, "kafka-consumer-groups") {
				t.Errorf("an Unknown proof gets retention or offsets advice")
			}
			checkMessageShape(t, msg)
		})
	}
}

// checkMessageShape: under 1 KiB, valid UTF-8, lines that fit a terminal.
func checkMessageShape(t *testing.T, msg string) {
	t.Helper()
	const prefix = `Error from server (Forbidden): admission webhook "workloads.retentionguard.io" denied the request: `
	if len(prefix+msg) > 1024 {
		t.Errorf("the client prints %d bytes, over 1 KiB", len(prefix+msg))
	}
	if !utf8.ValidString(msg) {
		t.Errorf("message is not valid UTF-8")
	}
	for _, l := range strings.Split(msg, "\n") {
		if strings.HasPrefix(l, "  kafka-consumer-groups ") || strings.HasPrefix(l, "  retention-guard check ") || strings.HasPrefix(l, "  kubectl ") ||
			strings.HasPrefix(l, "  "+OverrideAnnotation+": ") {
			if strings.HasSuffix(l, "...") {
				t.Errorf("a command was cut: %q", l)
			}
			continue
		}
		if len(l) > maxLine {
			t.Errorf("line of %d bytes: %q", len(l), l)
		}
	}
}

// The consumer clause is named with the container and the value; its way
// out is fixing the pod template, and no override is offered for it.
func TestDenyMessageConsumerClause(t *testing.T) {
	p := settlePolicy(withProof(proven(), time.Second), withConsumer("settle", resetEnv, commitEnv))
	e := policyEval{Policy: p, Proof: p.Status.Proof, Consumer: []containerEnv{{Container: "settle",
		OffsetReset: envValue{Declared: true, Value: "earliest", From: "env"},
		AutoCommit:  envValue{Declared: true, Value: "false", From: "env"}}}}
	d := decide([]policyEval{e}, "")
	tt := settleTarget
	tt.Rollout = rolloutTemplateChanged
	msg := denyMessage(tt, &d, testNow)
	t.Logf("\n%s", msg)
	for _, want := range []string{
		"policy ledger-settle-consumer (group ledger-settle-consumer) has a proven group but not its consumer settings",
		`- OffsetResetSilent container settle: KAFKA_AUTO_OFFSET_RESET="earliest" (env): the client skips silently; set none`,
		"Fix: set KAFKA_AUTO_OFFSET_RESET=none (error for librdkafka) and KAFKA_ENABLE_AUTO_COMMIT=false in the pod template",
		"cannot be overridden",
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("message lacks %q", want)
		}
	}
	if strings.Contains(msg, "annotate") || strings.Contains(msg, "kafka-consumer-groups") {
		t.Errorf("a consumer-clause denial offers an override or an offset reset:\n%s", msg)
	}
	checkMessageShape(t, msg)
}

// Retention and reachability failures get their own way out.
func TestDenyMessageWayOutByReason(t *testing.T) {
	cases := []struct {
		reason, want, notWant string
	}{
		{"RetentionShorterThanWindow", "make retention.ms and offsets.retention.minutes cover recoveryWindow 240h", "kafka-consumer-groups"},
		{"OffsetsRetentionShorterThanWindow", "cover recoveryWindow", "kafka-consumer-groups"},
		{"CommittedOffsetExpired", "kafka-consumer-groups", "cover recoveryWindow"},
		{"NoCommittedOffset", "retention-guard check --bootstrap-server kafka-0.kafka.kafka.svc:9093 --group ledger-settle-consumer --topic settle-task --recovery-window 240h", ""},
		{"AuthorizationFailed", "Way out: check the ACLs (Describe, DescribeConfigs), then retry; details: kubectl describe crp ledger-settle-consumer -n settlement", "kafka-consumer-groups"},
		{ReasonLiveCheckFailed, "fix what keeps the proof from being made", "kafka-consumer-groups"},
		// Lost or misplaced records have a way out of their own, never
		// "fix what keeps the proof from being made": the proof was made.
		{"ShareRecordsExpired", "reconcile from their source the records the share group may never have acknowledged", "fix what keeps the proof"},
		{"NoShareStartOffset", "reconcile from their source the records the share group may never have acknowledged", "fix what keeps the proof"},
		{"CommittedOffsetOfDeletedTopic", "the topic was recreated: reset the group's offsets on it to where the business really is", "--to-earliest"},
		{"ExplicitOffsetExpiryBeforeWindow", "commit the group's offsets again without a retention time", "fix what keeps the proof"},
		// Issue 33 item 1: a log that diverged below the group; the way out
		// is a reset to where it diverged, never to earliest.
		{"CommittedOffsetDiverged", "decide whether to re-read from where it diverged", "--to-earliest"},
		{"CommittedOffsetOnDivergedLog", "--reset-offsets --to-offset", "fix what keeps the proof"},
		{"CommittedLeaderEpochUnknown", "--reset-offsets --to-offset", "fix what keeps the proof"},
	}
	for _, tc := range cases {
		t.Run(tc.reason, func(t *testing.T) {
			proof := &rgv1.ProofStatus{Verdict: rgv1.VerdictViolated, ProofID: "12345678",
				Violations: []rgv1.ViolationStatus{{Reason: tc.reason, Topic: "settle-task", Message: "numbers here"}}}
			p := settlePolicy(withProof(proof, time.Second))
			d := decide([]policyEval{{Policy: p, Proof: p.Status.Proof}}, "")
			msg := denyMessage(settleTarget, &d, testNow)
			if !strings.Contains(msg, tc.want) || (tc.notWant != "" && strings.Contains(msg, tc.notWant)) {
				t.Errorf("message for %s should say %q and not %q:\n%s", tc.reason, tc.want, tc.notWant, msg)
			}
			checkMessageShape(t, msg)
		})
	}
}

// Issue 32: seed 000's diverged log under two partitions' commits, one
// with its leader epoch (a risk: the consumer rewinds by itself), one
// without (a loss: it resumes past replaced records). The denial the loss
// makes lists the loss first and gives each its own way out: a reset for
// the epoch-less commit, none for the one with its epoch.
func TestDenyMessageWayOutOfADivergedLog(t *testing.T) {
	ps := &rgv1.ProofStatus{Verdict: rgv1.VerdictViolated, ProofID: "12345678",
		Violations: []rgv1.ViolationStatus{
			{Reason: proof.ReasonCommittedEpochDiverged, Topic: "settle-task", Partition: ptr[int32](0), Message: "settle-task[0]: rewinds to 5"},
			{Reason: proof.ReasonCommittedOffsetDiverged, Topic: "settle-task", Partition: ptr[int32](1), Message: "settle-task[1]: resumes past 5"},
		}}
	p := settlePolicy(withProof(ps, time.Second))
	d := decide([]policyEval{{Policy: p, Proof: p.Status.Proof}}, "")
	if d.Outcome != outcomeDenied {
		t.Fatalf("outcome %s, want denied (an epoch-less commit past a diverged log is a loss)", d.Outcome)
	}
	msg := denyMessage(settleTarget, &d, testNow)
	// The way out wraps: read it as words.
	mustContain(t, strings.Join(strings.Fields(msg), " "), "reset the group's offsets on the diverged partition",
		"none where the commit carries its leader epoch: the consumer rewinds to where the log diverged")
	if i, j := strings.Index(msg, "CommittedOffsetDiverged"), strings.Index(msg, "CommittedEpochDiverged"); i < 0 || j < 0 || i > j {
		t.Errorf("the loss is not listed before the risk:\n%s", msg)
	}
	checkMessageShape(t, msg)
}

// A policy that names a connection has no servers of its own: the way out
// names the connection whose status holds them.
func TestDenyMessageWayOutThroughAConnection(t *testing.T) {
	proof := &rgv1.ProofStatus{Verdict: rgv1.VerdictViolated, ProofID: "12345678",
		Violations: []rgv1.ViolationStatus{{Reason: "NoCommittedOffset", Topic: "settle-task", Message: "numbers here"}}}
	p := settlePolicy(withProof(proof, time.Second))
	p.Spec.Kafka = rgv1.PolicyKafka{ConnectionRef: &rgv1.ConnectionReference{Kind: rgv1.KindClusterKafkaConnection, Name: "prod"}}
	d := decide([]policyEval{{Policy: p, Proof: p.Status.Proof}}, "")
	msg := denyMessage(settleTarget, &d, testNow)
	if !strings.Contains(msg, "retention-guard check --bootstrap-server <ClusterKafkaConnection/prod> --group ledger-settle-consumer") {
		t.Errorf("the way out does not name the connection:\n%s", msg)
	}
	checkMessageShape(t, msg)
}

// However many policies and long messages, the denial stays under 1 KiB,
// dropping listed violations first.
func TestDenyMessageStaysUnderOneKiB(t *testing.T) {
	var evals []policyEval
	for i := range 6 {
		proof := noCommittedOffset()
		for j := range proof.Violations {
			proof.Violations[j].Message = strings.Repeat("a very long explanation é ", 20)
		}
		p := settlePolicy(withProof(proof, time.Second), func(p *rgv1.ConsumerRetentionPolicy) {
			p.Name = fmt.Sprintf("policy-with-a-rather-long-name-%d", i)
			p.Spec.GroupID = fmt.Sprintf("group-with-a-rather-long-name-%d", i)
		})
		evals = append(evals, policyEval{Policy: p, Proof: p.Status.Proof})
	}
	// An update is told the kubectl command; a refused create (a CronJob's
	// the longest) the manifest line.
	createCronJob := target{Kind: "CronJob", Namespace: "settlement", Name: "settle", Rollout: rolloutCreate, User: "alice"}
	for _, tgt := range []target{settleTarget, createCronJob} {
		for n := 1; n <= len(evals); n++ {
			d := decide(evals[:n], "")
			msg := denyMessage(tgt, &d, testNow)
			checkMessageShape(t, msg)
			if !strings.Contains(msg, "policy-with-a-rather-long-name-0") {
				t.Errorf("%s, %d policies: the first policy is not named", tgt.Rollout, n)
			}
			// Every refusing policy shares the proof ID in this test: the
			// override names it once per policy, listed or counted.
			ids := strings.TrimSuffix(strings.Repeat("7f3a9c21,", n), ",")
			want := "override-proof=" + ids
			if tgt.Rollout == rolloutCreate {
				want = "override-proof: \"" + ids + "\""
			}
			if !strings.Contains(msg, want) {
				t.Errorf("%s, %d policies: the override %q is missing:\n%s", tgt.Rollout, n, want, msg)
			}
			if n > 1 && !strings.Contains(msg, fmt.Sprintf("And %d more refusing polic", n-strings.Count(msg, "\npolicy "))) && strings.Count(msg, "\npolicy ") != n {
				t.Errorf("%s, %d policies, neither listed nor counted:\n%s", tgt.Rollout, n, msg)
			}
		}
	}
}

// Admission contract, "Warn": warnings name the policy, the verdict and the
// proof ID, list some violations, and are each at most 120 bytes.
func TestWarnings(t *testing.T) {
	proof := noCommittedOffset()
	proof.Warnings = []string{"recoveryHeadroom 52h is below recoveryWindow 240h", "second", "third is not shown"}
	p := settlePolicy(withEnforcement(rgv1.EnforcementWarn), withProof(proof, time.Second))
	d := decide([]policyEval{{Policy: p, Proof: p.Status.Proof}}, "")
	ws := warnings(&d)
	t.Logf("%q", ws)
	if len(ws) != 1+3+1+2 {
		t.Fatalf("%d warnings, want head + 3 violations + count + 2 proof warnings: %q", len(ws), ws)
	}
	if ws[0] != "retention-guard: ledger-settle-consumer is Violated (proof 7f3a9c21); allowed by enforcement Warn" {
		t.Errorf("first warning %q", ws[0])
	}
	if !strings.Contains(ws[4], "and 21 more") {
		t.Errorf("count warning %q", ws[4])
	}
	for _, w := range ws {
		if len(w) > maxWarning || !strings.HasPrefix(w, "retention-guard: ") {
			t.Errorf("warning of %d bytes: %q", len(w), w)
		}
	}
	// An Audit policy shows the client nothing, not even proof warnings.
	audit := settlePolicy(withEnforcement(rgv1.EnforcementAudit), withProof(proof, time.Second))
	d = decide([]policyEval{{Policy: audit, Proof: audit.Status.Proof}}, "")
	if ws := warnings(&d); len(ws) != 0 {
		t.Errorf("Audit policy warnings %q", ws)
	}
	// A proven Deny policy adds only its proof warnings.
	ok := settlePolicy(withProof(proven(), time.Second))
	ok.Status.Proof.Warnings = []string{"groupOffsetsExpireIn 2d"}
	d = decide([]policyEval{{Policy: ok, Proof: ok.Status.Proof}}, "")
	if ws := warnings(&d); len(ws) != 1 || !strings.Contains(ws[0], "groupOffsetsExpireIn 2d") {
		t.Errorf("proven policy warnings %q", ws)
	}
}

// Event notes name the workload and, for overrides, the user.
func TestEventNotes(t *testing.T) {
	p := settlePolicy(withProof(noCommittedOffset(), time.Second))
	d := decide([]policyEval{{Policy: p, Proof: p.Status.Proof}}, "7f3a9c21")
	note := eventNote(settleTarget, &d.Policies[0], EventProofOverridden)
	for _, want := range []string{"alice", "Deployment settlement/settle", "7f3a9c21", "scale from zero"} {
		if !strings.Contains(note, want) {
			t.Errorf("override note %q lacks %q", note, want)
		}
	}
	note = eventNote(target{Kind: "StatefulSet", Namespace: "n", Name: "s", Rollout: rolloutCreate}, &d.Policies[0], EventRolloutAudited)
	if !strings.Contains(note, "would refuse StatefulSet n/s (create)") || !strings.Contains(note, "and 21 more") {
		t.Errorf("audit note %q", note)
	}
	// A finding about no partition (ProofStale) is named without a
	// dangling space.
	stale := settlePolicy(withProof(proven(), time.Hour))
	d = decide([]policyEval{{Policy: stale, NoProofReason: ReasonProofStale, NoProofDetail: "status proof checked 1h ago"}}, "")
	note = eventNote(settleTarget, &d.Policies[0], EventRolloutDenied)
	if !strings.HasSuffix(note, "; "+ReasonProofStale) {
		t.Errorf("denied note %q, want it to end with %q", note, "; "+ReasonProofStale)
	}
}

// The override goes where it counts: on the workload, or on a CronJob's
// job template for the CronJob and its runs. A refused CREATE stored
// nothing, so `kubectl annotate` (or `kubectl patch cronjob` of the CronJob
// being created) would fail with NotFound: the denial says to add the
// annotation to the manifest and apply again — except for a run of a
// CronJob, whose CronJob exists and is patched.
func TestOverrideInstruction(t *testing.T) {
	const patchSettle = `kubectl patch cronjob settle -n settlement --type merge -p '{"spec":{"jobTemplate":{"metadata":{"annotations":{"retentionguard.io/override-proof":"7f3a9c21"}}}}}'`
	const manifestLine = `  retentionguard.io/override-proof: "7f3a9c21"`
	cases := []struct {
		t            target
		want, reject []string
	}{
		{target{Kind: "Deployment", Namespace: "settlement", Name: "settle", Rollout: rolloutScaleFromZero},
			[]string{"Or roll out knowingly:\n  kubectl annotate --overwrite deployment settle -n settlement retentionguard.io/override-proof=7f3a9c21"},
			[]string{"manifest"}},
		{target{Kind: "Job", Namespace: "settlement", Name: "backfill", Rollout: rolloutUnsuspend},
			[]string{"kubectl annotate --overwrite job backfill -n settlement retentionguard.io/override-proof=7f3a9c21"}, nil},
		{target{Kind: "CronJob", Namespace: "settlement", Name: "settle", Rollout: rolloutJobTemplateChanged},
			[]string{"Or roll out knowingly:\n  " + patchSettle}, []string{"manifest"}},
		{target{Kind: "CronJob", Namespace: "settlement", Name: "settle", Rollout: rolloutUnsuspend},
			[]string{patchSettle}, nil},
		// A run of a CronJob: the CronJob exists.
		{target{Kind: "Job", Namespace: "settlement", Name: "settle-29413560", Rollout: rolloutCreate, CronJob: "settle"},
			[]string{"Or roll out knowingly:\n  " + patchSettle}, []string{"manifest", "kubectl annotate"}},
		// Refused creates: nothing stored to annotate or patch.
		{target{Kind: "Deployment", Namespace: "settlement", Name: "settle", Rollout: rolloutCreate},
			[]string{"Or roll out knowingly: add to the manifest's metadata.annotations, then apply it again:\n" + manifestLine},
			[]string{"kubectl annotate", "kubectl patch"}},
		{target{Kind: "StatefulSet", Namespace: "settlement", Name: "settle", Rollout: rolloutCreate},
			[]string{"the manifest's metadata.annotations", manifestLine}, []string{"kubectl annotate", "kubectl patch"}},
		{target{Kind: "Job", Namespace: "settlement", Name: "backfill", Rollout: rolloutCreate},
			[]string{"the manifest's metadata.annotations", manifestLine}, []string{"kubectl annotate", "kubectl patch"}},
		{target{Kind: "CronJob", Namespace: "settlement", Name: "settle", Rollout: rolloutCreate},
			[]string{"add to the manifest's spec.jobTemplate.metadata.annotations, then apply it again:\n" + manifestLine},
			[]string{"kubectl annotate", "kubectl patch"}},
	}
	p := settlePolicy(withProof(noCommittedOffset(), 40*time.Second))
	d := decide([]policyEval{{Policy: p, Proof: p.Status.Proof}}, "")
	for _, tc := range cases {
		msg := denyMessage(tc.t, &d, testNow)
		checkMessageShape(t, msg)
		for _, w := range tc.want {
			if !strings.Contains(msg, w) {
				t.Errorf("%s (%s): message lacks %q:\n%s", tc.t, tc.t.Rollout, w, msg)
			}
		}
		for _, r := range tc.reject {
			if strings.Contains(msg, r) {
				t.Errorf("%s (%s): message has %q:\n%s", tc.t, tc.t.Rollout, r, msg)
			}
		}
	}
	run := target{Kind: "Job", Namespace: "settlement", Name: "settle-29413560", CronJob: "settle", CronJobUID: "u"}
	if got := run.String(); got != "Job settlement/settle-29413560 (a run of CronJob settle)" {
		t.Errorf("String() = %q", got)
	}
	if r := run.related(); r == nil || r.Kind != "CronJob" || r.Name != "settle" || r.UID != "u" || r.APIVersion != "batch/v1" {
		t.Errorf("related() = %+v", r)
	}
	if r := (target{Kind: "Deployment"}).related(); r != nil {
		t.Errorf("a Deployment's event relates to %+v", r)
	}
}

// A denial never cuts a violation's text mid-word: long findings are
// wrapped at words, and the message shrinks by dropping whole findings
// (counted) and whole wrapped lines (marked), never characters.
func TestDenyMessageNeverCutsAViolation(t *testing.T) {
	var vs []rgv1.ViolationStatus
	words := map[string]bool{}
	for i := range 12 {
		msg := fmt.Sprintf("clicks[%d]: committed offset %d was last committed at or after 2026-11-24T03:00:00Z (bounded by the timestamp of the record before it) "+
			"and expires offsets.retention.minutes 10080 (7d) after its last commit (a simple group: it commits without joining): "+
			"possibly in 24h (1d), before recoveryWindow 72h (3d) ends: commit it again (the offset as it is), raise offsets.retention.minutes", i, 400+i)
		for _, w := range strings.Fields(msg) {
			words[w] = true
		}
		vs = append(vs, rgv1.ViolationStatus{Reason: "OffsetsMayExpireBeforeWindow", Topic: "clicks", Partition: ptr(int32(i)), Message: msg})
	}
	ps := &rgv1.ProofStatus{Verdict: rgv1.VerdictUnknown, ProofID: "0badc0de", Violations: vs,
		PartitionSummary: rgv1.PartitionSummary{Total: 12}}
	p := settlePolicy(withProof(ps, time.Second))
	d := decide([]policyEval{{Policy: p, Proof: p.Status.Proof}}, "")
	msg := denyMessage(settleTarget, &d, testNow)
	t.Logf("\n%s", msg)
	checkMessageShape(t, msg)
	if strings.Contains(msg, "...") {
		t.Errorf("a line was cut with ...")
	}
	inFinding := false
	for _, l := range strings.Split(msg, "\n") {
		switch {
		case strings.HasPrefix(l, "- OffsetsMayExpireBeforeWindow"):
			inFinding = true
			l = strings.TrimPrefix(l, "- OffsetsMayExpireBeforeWindow on 12 partitions of clicks, e.g.")
		case inFinding && strings.HasPrefix(l, "    "):
		default:
			inFinding = false
		}
		if !inFinding {
			continue
		}
		for _, w := range strings.Fields(strings.TrimSuffix(l, " (…)")) {
			if !words[w] {
				t.Errorf("%q is not a whole word of a violation: cut mid-word in %q", w, l)
			}
		}
	}
	if !strings.Contains(msg, "0badc0de") {
		t.Errorf("the override is missing")
	}
}

// A risk beside a refusing violation gets its own way out too.
func TestDenyMessageWayOutOfRisksBesideALoss(t *testing.T) {
	ps := &rgv1.ProofStatus{Verdict: rgv1.VerdictViolated, ProofID: "12345678", Violations: []rgv1.ViolationStatus{
		{Reason: "CommittedOffsetExpired", Topic: "settle-task", Partition: ptr[int32](0), Message: "settle-task[0]: numbers here"},
		{Reason: "RecoveryHeadroomShorterThanWindow", Topic: "settle-task", Partition: ptr[int32](1), Message: "settle-task[1]: numbers here"},
		{Reason: "EmptyGroupOffsetsExpireBeforeWindow", Message: "group g has been Empty since ..."},
	}}
	p := settlePolicy(withProof(ps, time.Second))
	d := decide([]policyEval{{Policy: p, Proof: p.Status.Proof}}, "")
	msg := denyMessage(settleTarget, &d, testNow)
	t.Logf("\n%s", msg)
	for _, want := range []string{"replay or reset the group's offsets", "let the group catch up", "start the consumer"} {
		if !strings.Contains(msg, want) {
			t.Errorf("message lacks %q", want)
		}
	}
	if strings.Contains(msg, "fix what keeps the proof from being made") {
		t.Errorf("a proof that was made is told to be made:\n%s", msg)
	}
	checkMessageShape(t, msg)
}

// Seed 000's compacted variant beside a loss: the tombstone risk's way out
// is the consumer reading past the tombstones (or delete.retention.ms),
// not retention.ms.
func TestDenyMessageWayOutOfTombstoneHeadroom(t *testing.T) {
	ps := &rgv1.ProofStatus{Verdict: rgv1.VerdictViolated, ProofID: "12345678", Violations: []rgv1.ViolationStatus{
		{Reason: "CommittedOffsetExpired", Topic: "settle-task", Partition: ptr[int32](0), Message: "settle-task[0]: numbers here"},
		{Reason: "TombstoneHeadroomShorterThanWindow", Topic: "settle-task", Partition: ptr[int32](1), Message: "settle-task[1]: numbers here"},
	}}
	p := settlePolicy(withProof(ps, time.Second))
	d := decide([]policyEval{{Policy: p, Proof: p.Status.Proof}}, "")
	msg := denyMessage(settleTarget, &d, testNow)
	t.Logf("\n%s", msg)
	flat := strings.Join(strings.Fields(msg), " ")
	for _, want := range []string{"replay or reset the group's offsets", "let the group catch up past the tombstones it has not read",
		"raise delete.retention.ms"} {
		if !strings.Contains(flat, want) {
			t.Errorf("message lacks %q", want)
		}
	}
	if strings.Contains(flat, "raise retention.ms") {
		t.Errorf("the tombstone risk is told to raise retention.ms:\n%s", msg)
	}
	checkMessageShape(t, msg)
}

// Every loss the proof knows (proof.IsLoss) is listed first, with the
// data-loss findings; every risk after the configuration.
func TestFindingRankFollowsTheProof(t *testing.T) {
	for reason := range adviceFor {
		switch {
		case proof.IsLoss(reason) && findingRank(reason) != int(problemLoss):
			t.Errorf("%s is a loss ranked %d", reason, findingRank(reason))
		case !proof.IsLoss(reason) && findingRank(reason) == int(problemLoss):
			t.Errorf("%s ranks as a loss", reason)
		}
	}
	for _, reason := range proof.RiskReasons() {
		if findingRank(reason) != int(problemOther) {
			t.Errorf("risk %s ranked %d", reason, findingRank(reason))
		}
	}
	for _, reason := range []string{"CursorExpired", "NoCursor", "CursorBeyondLogEnd", "CommittedOffsetExpired", "ShareRecordsExpired",
		"NoCommittedOffset", "NoShareStartOffset", "CommittedOffsetBeyondLogEnd", "CommittedOffsetOfDeletedTopic", "CommittedOffsetDiverged", "GroupAheadOfCursor"} {
		if !proof.IsLoss(reason) || findingRank(reason) != int(problemLoss) {
			t.Errorf("%s: IsLoss %v, rank %d", reason, proof.IsLoss(reason), findingRank(reason))
		}
	}
}

// The layout gives each listed finding the room left, in order: a first
// finding too long for the message shows its first line, and a short one
// after it is shown whole rather than cut like it.
func TestDenyMessageShowsWhatFitsWhole(t *testing.T) {
	ps := noCommittedOffset()
	ps.Violations = append([]rgv1.ViolationStatus{{Reason: "OffsetsRetentionShorterThanWindow",
		Message: "offsets.retention.minutes 10080 (7d) is shorter than recoveryWindow 240h (10d): an empty group's committed offsets expire before the window ends"}},
		ps.Violations[:19]...)
	ps.ViolationsOmitted = 5
	p := settlePolicy(withProof(ps, 40*time.Second))
	d := decide([]policyEval{{Policy: p, Proof: p.Status.Proof}}, "")
	msg := denyMessage(settleTarget, &d, testNow)
	t.Logf("%d bytes:\n%s", len(msg), msg)
	if !strings.Contains(msg, "nothing proves the group read (…)") {
		t.Errorf("the long first finding is not shown by its first line, marked")
	}
	if !strings.Contains(msg, "an empty group's committed offsets\n    expire before the window ends") {
		t.Errorf("the short second finding is not shown whole")
	}
	checkMessageShape(t, msg)

	// Three findings of three kinds, short enough: all three are listed,
	// none counted.
	ps = &rgv1.ProofStatus{Verdict: rgv1.VerdictViolated, ProofID: "12345678", Violations: []rgv1.ViolationStatus{
		{Reason: "CommittedOffsetExpired", Topic: "settle-task", Partition: ptr[int32](0), Message: "settle-task[0]: numbers here"},
		{Reason: "RecoveryHeadroomShorterThanWindow", Topic: "settle-task", Partition: ptr[int32](1), Message: "settle-task[1]: numbers here"},
		{Reason: "EmptyGroupOffsetsExpireBeforeWindow", Message: "group g has been Empty since ..."},
	}}
	p = settlePolicy(withProof(ps, time.Second))
	d = decide([]policyEval{{Policy: p, Proof: p.Status.Proof}}, "")
	msg = denyMessage(settleTarget, &d, testNow)
	t.Logf("%d bytes:\n%s", len(msg), msg)
	if n := strings.Count(msg, "\n- "); n != 3 || strings.Contains(msg, "- and ") {
		t.Errorf("%d findings listed, want all 3 and no count", n)
	}
	checkMessageShape(t, msg)
}

// Issue 32: the way out of an undated commit (OffsetsMayExpireBeforeWindow)
// is only what changes the next proof. Where the guard reads
// __consumer_offsets (the default, no offsetsTopic warning) a re-commit of
// the same offset is dated: that and raising offsets.retention.minutes.
// Where its principal may not read it (the warning's reason Denied), a
// re-commit is invisible: the grant comes first. Where the policy turned
// the read off, turning it back on. Never a way that changes nothing.
func TestDenyMessageWayOutOfUndatedCommits(t *testing.T) {
	undated := func(facts ...rgv1.WarningFact) *rgv1.ConsumerRetentionPolicy {
		ps := &rgv1.ProofStatus{Verdict: rgv1.VerdictUnknown, ProofID: "12345678", WarningFacts: facts,
			Violations: []rgv1.ViolationStatus{{Reason: "OffsetsMayExpireBeforeWindow", Topic: "settle-task", Message: "numbers here"}}}
		return settlePolicy(withProof(ps, time.Second))
	}
	off := undated()
	off.Spec.Kafka.ReadOffsetsTopic = ptr(false)
	for _, c := range []struct {
		name          string
		p             *rgv1.ConsumerRetentionPolicy
		want, notWant []string
	}{
		{"exact times read", undated(), []string{"commit the group's offsets again as they are", "raise offsets.retention.minutes"},
			[]string{"grant", "readOffsetsTopic"}},
		{"read denied", undated(rgv1.WarningFact{Type: "offsetsTopic", Reason: "Denied"}),
			[]string{"grant the guard's principal Read on topic __consumer_offsets", "kafka-acls.sh", "commit newer offsets while the manager watches"},
			[]string{"again as they are", "raise offsets.retention.minutes"}},
		{"read off", off, []string{"remove spec.kafka.readOffsetsTopic: false"}, []string{"again as they are", "grant"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			d := decide([]policyEval{{Policy: c.p, Proof: c.p.Status.Proof}}, "")
			msg := denyMessage(settleTarget, &d, testNow)
			for _, w := range c.want {
				if !strings.Contains(msg, w) {
					t.Errorf("message lacks %q:\n%s", w, msg)
				}
			}
			for _, w := range c.notWant {
				if strings.Contains(msg, w) {
					t.Errorf("message offers %q, which changes nothing here:\n%s", w, msg)
				}
			}
			checkMessageShape(t, msg)
		})
	}
}

// Seed 003's way out: the kafka-consumer-groups command a person copies is
// shown whole however long, and the prose around it is wrapped at words to
// maxLine. The layout tells them apart by the line's kind, not by its
// indentation: prose that starts with two spaces is still wrapped.
func TestWayOutLinesByKind(t *testing.T) {
	topics := strings.Repeat(" --topic settle-task-of-the-ledger-settlement-domain", 5)
	cmd := commandLine("kafka-consumer-groups --group ledger-settle-consumer" + topics + " --reset-offsets --to-earliest --execute")
	var got []string
	emitLines([]line{proseLine("  Way out: replay or reset the offsets of" + topics + ", then retry, e.g."), cmd},
		func(l string) { got = append(got, l) })
	if len(got) < 3 {
		t.Fatalf("got %d lines, want the prose wrapped and the command: %q", len(got), got)
	}
	for _, l := range got[:len(got)-1] {
		if len(l) > maxLine {
			t.Errorf("prose line of %d bytes, over %d: %q", len(l), maxLine, l)
		}
	}
	if !strings.HasPrefix(got[0], "Way out: replay") {
		t.Errorf("first prose line %q: want it wrapped from its first word", got[0])
	}
	want := "  kafka-consumer-groups --group ledger-settle-consumer" + topics + " --reset-offsets --to-earliest --execute"
	if last := got[len(got)-1]; last != want || len(last) <= maxLine {
		t.Errorf("command line %q (%d bytes): want it whole, indented, over %d bytes", last, len(last), maxLine)
	}
}
