package chart_test

import (
	"fmt"
	"maps"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/retentionguard/retention-guard/internal/proof"
)

// The histories promtool replays against the rendered alerts. Each firing
// history names the step its condition starts at and expects nothing one
// step before, nothing one step before its `for` has passed, and the alert
// with its exact labels and text once it has; each silent history expects
// nothing at every step. Times and values scale with the combination's
// step, `for` and rate interval.

// headroomDescription is RetentionGuardRecoveryHeadroomLow's description
// for a headroom of left (as Prometheus humanizes it): the record at the
// committed offset, or a tombstone the group has not read on a compacted
// topic (TombstoneHeadroomShorterThanWindow), goes then.
func headroomDescription(left string) string {
	return "The record at its committed offset is deleted by retention, or on a compacted topic a tombstone it has not read " +
		"may be dropped by the log cleaner, in " + left + ": a consumer that goes down now loses records or deletes " +
		"before the downtime the policy promises to survive ends. The consumer is lagging (or its records carry old timestamps): " +
		"let it catch up, or raise the topic's retention.ms (delete.retention.ms on a compacted topic)."
}

// emptyGroupDescription is RetentionGuardEmptyGroupNearingOffsetsRetention's
// description.
const emptyGroupDescription = "Kafka deletes a classic group's committed offsets offsets.retention.minutes after the group became Empty; " +
	"a consumer started after that resumes wherever auto.offset.reset says and skips what it never read. " +
	"Start a consumer of the group before then (a member stops the clock). A consumer KEDA holds at zero starts only on new lag: " +
	"give its ScaledObject minReplicaCount 1 or a cron trigger (the policy's status.proof.scaledToZero names it, with KEDA's lastActiveTime)."

type alertCase struct {
	alert  string
	what   string
	fires  bool
	series []promSeries
	evals  []promAlertTest
}

// The policy every policy history is about: seed 003's settlement batch
// consumer.
const (
	caseNS     = "settlement"
	casePolicy = "ledger-settle"
	caseGroup  = "ledger-settle-consumer"
	webhookRef = "workloads.retentionguard.io" // the webhook's name, as the API server's metrics label it
)

type caseBuilder struct {
	t   *testing.T
	c   alertCombo
	pre int // steps of history before a condition starts
}

// n is d in steps of the combination.
func (b caseBuilder) n(d time.Duration) int {
	b.t.Helper()
	if d%b.c.step != 0 {
		b.t.Fatalf("%s is not a multiple of the step %s", d, b.c.step)
	}
	return int(d / b.c.step)
}

// secs is n steps in seconds.
func (b caseBuilder) secs(n int) float64 { return float64(n) * b.c.step.Seconds() }

func (b caseBuilder) at(step int) string { return promDur(time.Duration(step) * b.c.step) }

// length is how many samples each series of a history has: enough for
// every alert's `for` and the rate interval to pass after pre.
func (b caseBuilder) length() int {
	longest := b.c.rate
	for _, d := range b.c.forOf {
		longest = max(longest, d)
	}
	return b.pre + 2*b.n(longest) + 10
}

// managerSeries is a series scraped from the manager: the ServiceMonitor
// keeps the policy's namespace label (honorLabels) and adds job and
// instance.
func (b caseBuilder) managerSeries(name string, labels map[string]string, values []string) promSeries {
	l := maps.Clone(labels)
	job := b.c.job
	if job == "" {
		job = "retention-guard"
	}
	l["job"], l["instance"] = job, "10.0.3.7:8080"
	return promSeries{Series: seriesName(name, l), Values: join(values)}
}

func apiserverSeries(name string, labels map[string]string, values []string) promSeries {
	l := maps.Clone(labels)
	l["job"], l["instance"] = "apiserver", "10.0.0.1:6443"
	return promSeries{Series: seriesName(name, l), Values: join(values)}
}

func policyLabels(extra ...string) map[string]string {
	l := map[string]string{"namespace": caseNS, "policy": casePolicy}
	for i := 0; i < len(extra); i += 2 {
		l[extra[i]] = extra[i+1]
	}
	return l
}

func join(vs []string) string {
	out := ""
	for i, v := range vs {
		if i > 0 {
			out += " "
		}
		out += v
	}
	return out
}

// Value builders: n samples each.
func flat(n int, v float64) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = strconv.FormatFloat(v, 'f', -1, 64)
	}
	return out
}

func missing(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = "_"
	}
	return out
}

// then concatenates value runs.
func then(runs ...[]string) []string {
	var out []string
	for _, r := range runs {
		out = append(out, r...)
	}
	return out
}

// counter is a counter at 0 for before samples, then rising by one per
// sample for rising samples, then flat, n samples in all.
func counter(n, before, rising int) []string {
	out := make([]string, n)
	v := 0
	for i := range out {
		if i >= before && i < before+rising {
			v++
		}
		out[i] = strconv.Itoa(v)
	}
	return out
}

// countdown is a time left that is start at sample from and falls by one
// step per sample; missing before from.
func (b caseBuilder) countdown(n, from int, start float64) []string {
	out := missing(from)
	for i := from; i < n; i++ {
		out = append(out, strconv.FormatFloat(start-b.secs(i-from), 'f', -1, 64))
	}
	return out
}

// expiresAt turns the time left each sample's check saw (what the
// deprecated relative gauges said) into the series the manager exports
// and the alerts read: when, in unix seconds, the sample's time plus the
// time left; promtool's time() is the seconds since its start. A manager
// that checks every step exports a time left that stays flat as a rising
// series, one that counts down as a flat one; "_" and "stale" stay.
func (b caseBuilder) expiresAt(left []string) []string {
	b.t.Helper()
	out := make([]string, len(left))
	for i, v := range left {
		if v == "_" || v == "stale" {
			out[i] = v
			continue
		}
		f, err := strconv.ParseFloat(v, 64)
		if err != nil {
			b.t.Fatalf("sample %d: %q is not a number", i, v)
		}
		out[i] = strconv.FormatFloat(b.secs(i)+f, 'f', -1, 64)
	}
	return out
}

// Absolute series of the policy: time left as each sample's check saw it.
func (b caseBuilder) headroomSeries(left []string) promSeries {
	return b.managerSeries("retentionguard_recovery_headroom_expiration_timestamp_seconds", policyLabels(), b.expiresAt(left))
}

func (b caseBuilder) offsetsSeries(clock string, left []string) promSeries {
	return b.managerSeries("retentionguard_group_offsets_expiration_timestamp_seconds", policyLabels("clock", clock), b.expiresAt(left))
}

func none() []promAlert { return []promAlert{} }

// firing: nothing at from-1, nothing one step before `for` has passed, the
// alert once it has.
func (b caseBuilder) firing(alert string, from int, want promAlert) []promAlertTest {
	f := b.n(b.c.forOf[alert])
	evals := []promAlertTest{{EvalTime: b.at(from - 1), AlertName: alert, ExpAlerts: none()}}
	if f > 0 {
		evals = append(evals, promAlertTest{EvalTime: b.at(from + f - 1), AlertName: alert, ExpAlerts: none()})
	}
	return append(evals, promAlertTest{EvalTime: b.at(from + f), AlertName: alert, ExpAlerts: []promAlert{want}})
}

// silent: nothing at any step.
func (b caseBuilder) silent(alert string) []promAlertTest {
	var evals []promAlertTest
	for i := range b.length() {
		evals = append(evals, promAlertTest{EvalTime: b.at(i), AlertName: alert, ExpAlerts: none()})
	}
	return evals
}

func (b caseBuilder) runbook(alert string) string {
	return b.c.runbook + "#" + lower(alert)
}

func lower(s string) string {
	out := []byte(s)
	for i, c := range out {
		if c >= 'A' && c <= 'Z' {
			out[i] = c + 'a' - 'A'
		}
	}
	return string(out)
}

const (
	hour = 3600.0
	day  = 24 * hour
)

func alertCases(t *testing.T, c alertCombo) []alertCase {
	b := caseBuilder{t: t, c: c, pre: 10}
	var cases []alertCase
	cases = append(cases, b.verdictCases()...)
	cases = append(cases, b.headroomCases()...)
	cases = append(cases, b.offsetsExpiryCases()...)
	cases = append(cases, b.parkedByKEDACases()...)
	cases = append(cases, b.offsetsTopicCases()...)
	cases = append(cases, b.riskCases()...)
	cases = append(cases, b.divergedCases()...)
	cases = append(cases, b.admissionCases()...)
	cases = append(cases, b.liveChecksBusyCases()...)
	cases = append(cases, b.apiserverCases()...)
	cases = append(cases, b.managerDownCases()...)
	return cases
}

// verdict is a policy's three verdict series and its info series: verdict
// good until from, bad for bad steps, good again; Ready's reason follows
// (a new info series: the reason is a label).
func (b caseBuilder) verdict(bad string, from, badSteps int, enforcement, reason string) []promSeries {
	n := b.length()
	badVals := then(flat(from, 0), flat(badSteps, 1), flat(n-from-badSteps, 0))
	goodVals := then(flat(from, 1), flat(badSteps, 0), flat(n-from-badSteps, 1))
	out := []promSeries{
		b.managerSeries("retentionguard_policy_verdict", policyLabels("verdict", bad), badVals),
		b.managerSeries("retentionguard_policy_verdict", policyLabels("verdict", "Proven"), goodVals),
	}
	other := "Violated"
	if bad == "Violated" {
		other = "Unknown"
	}
	out = append(out, b.managerSeries("retentionguard_policy_verdict", policyLabels("verdict", other), flat(n, 0)))
	info := func(reason string) map[string]string {
		return policyLabels("consumer_group", caseGroup, "enforcement", enforcement, "reason", reason)
	}
	if badSteps == 0 {
		return append(out, b.managerSeries("retentionguard_policy_info", info("Proven"), flat(n, 1)))
	}
	// A series that leaves a scrape is marked stale, as Prometheus does.
	rest := n - from - badSteps
	gone := func(k int) []string {
		if k == 0 {
			return nil
		}
		return then([]string{"stale"}, missing(k-1))
	}
	return append(out,
		b.managerSeries("retentionguard_policy_info", info("Proven"), then(flat(from, 1), gone(badSteps), flat(rest, 1))),
		b.managerSeries("retentionguard_policy_info", info(reason), then(missing(from), flat(badSteps, 1), gone(rest))))
}

func (b caseBuilder) verdictCases() []alertCase {
	n := b.length()
	describe := " kubectl describe crp -n " + caseNS + " " + casePolicy
	cases := []alertCase{
		{
			alert: "RetentionGuardPolicyViolated", what: "Violated (NoCommittedOffset), Deny", fires: true,
			series: b.verdict("Violated", b.pre, n-b.pre, "Deny", "NoCommittedOffset"),
			evals: b.firing("RetentionGuardPolicyViolated", b.pre, promAlert{
				ExpLabels: policyLabels("severity", "critical", "consumer_group", caseGroup, "enforcement", "Deny"),
				ExpAnnotations: map[string]string{
					"summary":     "The consumer group " + caseGroup + " (policy " + caseNS + "/" + casePolicy + ") has lost, or can lose, records to retention: NoCommittedOffset.",
					"description": "Rollouts of its consumers are refused until the proof holds again." + describe + " names each violation with its numbers.",
					"runbook_url": b.runbook("RetentionGuardPolicyViolated"),
				},
			}),
		},
		{
			alert: "RetentionGuardPolicyViolated", what: "Proven throughout",
			series: b.verdict("Violated", b.pre, 0, "Deny", ""),
			evals:  b.silent("RetentionGuardPolicyViolated"),
		},
		{
			alert: "RetentionGuardPolicyUnknown", what: "Unknown (BrokerUnreachable), Warn", fires: true,
			series: b.verdict("Unknown", b.pre, n-b.pre, "Warn", "BrokerUnreachable"),
			evals: b.firing("RetentionGuardPolicyUnknown", b.pre, promAlert{
				ExpLabels: policyLabels("severity", "warning", "consumer_group", caseGroup, "enforcement", "Warn"),
				ExpAnnotations: map[string]string{
					"summary": "retention-guard cannot prove that the consumer group " + caseGroup + " (policy " + caseNS + "/" + casePolicy + ") keeps its records: BrokerUnreachable.",
					"description": "Kafka unreachable, credentials or ACLs refused, a topic missing, or commits that cannot be dated. " +
						"Enforcement Warn: rollouts of its consumers are not refused." + describe + " says what failed.",
					"runbook_url": b.runbook("RetentionGuardPolicyUnknown"),
				},
			}),
		},
		{
			alert: "RetentionGuardPolicyUnknown", what: "Proven throughout",
			series: b.verdict("Unknown", b.pre, 0, "Deny", ""),
			evals:  b.silent("RetentionGuardPolicyUnknown"),
		},
	}
	// A verdict that recovers before `for` has passed pages no one.
	for alert, bad := range map[string]string{"RetentionGuardPolicyViolated": "Violated", "RetentionGuardPolicyUnknown": "Unknown"} {
		if f := b.n(b.c.forOf[alert]); f >= 2 {
			cases = append(cases, alertCase{
				alert: alert, what: bad + " for less than its for",
				series: b.verdict(bad, b.pre, f-1, "Deny", "BrokerUnreachable"),
				evals:  b.silent(alert),
			})
		}
	}
	return cases
}

// policySeries are the window and info series of a Proven policy.
func (b caseBuilder) policySeries(window float64) []promSeries {
	n := b.length()
	return []promSeries{
		b.managerSeries("retentionguard_policy_recovery_window_seconds", policyLabels(), flat(n, window)),
		b.managerSeries("retentionguard_policy_info",
			policyLabels("consumer_group", caseGroup, "enforcement", "Deny", "reason", "Proven"), flat(n, 1)),
	}
}

func (b caseBuilder) headroomCases() []alertCase {
	n := b.length()
	const alert = "RetentionGuardRecoveryHeadroomLow"
	// What is left when the alert fires in the history checked only once.
	betweenLeft := 3*day - b.secs(1+b.n(b.c.forOf[alert]))
	headroom := func(window float64, values []string) []promSeries {
		return append(b.policySeries(window), b.headroomSeries(values))
	}
	cases := []alertCase{
		{
			// 2 days of headroom is more than the fixed day earlier
			// versions compared with, and less than this policy's window.
			alert: alert, what: "headroom 2d under a 3d window", fires: true,
			series: headroom(3*day, then(flat(b.pre, 10*day), flat(n-b.pre, 2*day))),
			evals: b.firing(alert, b.pre, promAlert{
				ExpLabels: policyLabels("severity", "warning", "consumer_group", caseGroup),
				ExpAnnotations: map[string]string{
					"summary":     "The consumer group " + caseGroup + " (policy " + caseNS + "/" + casePolicy + ") has 2d 0h 0m 0s of headroom, less than its recoveryWindow of 3d 0h 0m 0s.",
					"description": headroomDescription("2d 0h 0m 0s"),
					"runbook_url": b.runbook(alert),
				},
			}),
		},
		{
			// Checked once at pre with 5 steps more than the 3-day window
			// left, and not again (a long checkInterval, or checks that
			// keep timing out): the series says when, so the time left
			// keeps falling between checks and the condition holds from
			// pre+6 on. A time left exported as of the check would have
			// stayed above the window.
			alert: alert, what: "checked once with the window and 5 steps left, not since", fires: true,
			series: append(b.policySeries(3*day), b.managerSeries("retentionguard_recovery_headroom_expiration_timestamp_seconds",
				policyLabels(), then(missing(b.pre), flat(n-b.pre, b.secs(b.pre)+3*day+b.secs(5))))),
			evals: b.firing(alert, b.pre+6, promAlert{
				ExpLabels: policyLabels("severity", "warning", "consumer_group", caseGroup),
				ExpAnnotations: map[string]string{
					"summary": "The consumer group " + caseGroup + " (policy " + caseNS + "/" + casePolicy + ") has " + humanizeDuration(betweenLeft) +
						" of headroom, less than its recoveryWindow of 3d 0h 0m 0s.",
					"description": headroomDescription(humanizeDuration(betweenLeft)),
					"runbook_url": b.runbook(alert),
				},
			}),
		},
		{
			// Under a day, which earlier versions alerted on, and above
			// this policy's 12h window: inside its promise.
			alert: alert, what: "headroom 20h over a 12h window",
			series: headroom(12*hour, then(flat(b.pre, 10*day), flat(n-b.pre, 20*hour))),
			evals:  b.silent(alert),
		},
	}
	if f := b.n(b.c.forOf[alert]); f >= 2 {
		cases = append(cases, alertCase{
			alert: alert, what: "headroom under the window for less than its for",
			series: headroom(3*day, then(flat(b.pre, 10*day), flat(f-1, 2*day), flat(n-b.pre-f+1, 10*day))),
			evals:  b.silent(alert),
		})
	}
	return cases
}

func (b caseBuilder) offsetsExpiryCases() []alertCase {
	n := b.length()
	expiry := func(window float64, clock string, values []string) []promSeries {
		return append(b.policySeries(window), b.offsetsSeries(clock, values))
	}
	who := "The consumer group " + caseGroup + " (policy " + caseNS + "/" + casePolicy + ")"

	// Seed 003: the batch consumer's last member leaves at pre; from then
	// its offsets count down on the Empty clock, from 5 steps above the
	// 3-day window plus the warning's `for`: its condition holds from
	// pre+6 on, and it fires as the time left falls below the window (one
	// step under it), not `for` later.
	const nearing = "RetentionGuardEmptyGroupNearingOffsetsRetention"
	from := b.pre + 6
	left := 3*day - b.secs(1)
	cases := []alertCase{
		{
			alert: nearing, what: "seed 003: Empty group counting down past its 3d window", fires: true,
			series: expiry(3*day, "GroupEmpty", b.countdown(n, b.pre, 3*day+b.c.forOf[nearing].Seconds()+b.secs(5))),
			evals: b.firing(nearing, from, promAlert{
				ExpLabels: policyLabels("severity", "warning", "consumer_group", caseGroup),
				ExpAnnotations: map[string]string{
					"summary": who + " has had no members for long: its committed offsets expire in " + humanizeDuration(left) +
						", sooner than its recoveryWindow of 3d 0h 0m 0s.",
					"description": emptyGroupDescription,
					"runbook_url": b.runbook(nearing),
				},
			}),
		},
		{
			// Offsets that expire per commit inside the window make the
			// proof fail (OffsetsExpireBeforeWindow): the verdict alerts'
			// business, not this one's.
			alert: nearing, what: "LastCommit clock under the window",
			series: expiry(3*day, "LastCommit", then(missing(b.pre), flat(n-b.pre, 2*day))),
			evals:  b.silent(nearing),
		},
		{
			alert: nearing, what: "Empty group with 6d left over a 3d window",
			series: expiry(3*day, "GroupEmpty", then(missing(b.pre), flat(n-b.pre, 6*day))),
			evals:  b.silent(nearing),
		},
	}

	const withinADay = "RetentionGuardGroupOffsetsExpireWithinADay"
	leftDay := day - b.secs(1+b.n(b.c.forOf[withinADay]))
	cases = append(cases,
		alertCase{
			alert: withinADay, what: "Empty group counting down past one day, 3d window", fires: true,
			series: expiry(3*day, "GroupEmpty", b.countdown(n, b.pre, day+b.secs(5))),
			evals: b.firing(withinADay, b.pre+6, promAlert{
				ExpLabels: policyLabels("severity", "critical", "consumer_group", caseGroup, "clock", "GroupEmpty"),
				ExpAnnotations: map[string]string{
					"summary": who + " loses its committed offsets in " + humanizeDuration(leftDay) +
						" (GroupEmpty clock), sooner than its recoveryWindow of 3d 0h 0m 0s.",
					"description": "The classic group has had no members for nearly offsets.retention.minutes: start a consumer of the group now " +
						"(a member stops the clock). A consumer started after the offsets expire resumes wherever auto.offset.reset says.",
					"runbook_url": b.runbook(withinADay),
				},
			}),
		},
		alertCase{
			alert: withinADay, what: "an offset last committed long ago, 10h left, 3d window", fires: true,
			series: expiry(3*day, "LastCommit", then(missing(b.pre), flat(n-b.pre, 10*hour))),
			evals: b.firing(withinADay, b.pre, promAlert{
				ExpLabels: policyLabels("severity", "critical", "consumer_group", caseGroup, "clock", "LastCommit"),
				ExpAnnotations: map[string]string{
					"summary": who + " loses its committed offsets in 10h 0m 0s (LastCommit clock), sooner than its recoveryWindow of 3d 0h 0m 0s.",
					"description": "Each of these offsets expires offsets.retention.minutes after its own last commit: commit them again " +
						"(kafka-consumer-groups --reset-offsets --to-current; the guard reads the new commit's time from __consumer_offsets). " +
						"A consumer started after the offsets expire resumes wherever auto.offset.reset says.",
					"runbook_url": b.runbook(withinADay),
				},
			}),
		},
		alertCase{
			alert: withinADay, what: "20h left over a 12h window",
			series: expiry(12*hour, "GroupEmpty", then(missing(b.pre), flat(n-b.pre, 20*hour))),
			evals:  b.silent(withinADay),
		},
		alertCase{
			alert: withinADay, what: "30h left under a 3d window",
			series: expiry(3*day, "GroupEmpty", then(missing(b.pre), flat(n-b.pre, 30*hour))),
			evals:  b.silent(withinADay),
		},
	)
	return cases
}

// Seed 000 and seed 003 before the loss: the proof is Violated by a risk
// only (Ready's reason RecoveryHeadroomShorterThanWindow or
// EmptyGroupOffsetsExpireBeforeWindow: nothing lost yet). Admission allows
// the rollout with a warning, so the critical page that says rollouts are
// refused stays quiet and the risk's own warning alert speaks; once a
// record is lost beside the risk, Ready's reason is the loss and it pages.
func (b caseBuilder) riskCases() []alertCase {
	n := b.length()
	const (
		violated = "RetentionGuardPolicyViolated"
		headroom = "RetentionGuardRecoveryHeadroomLow"
		nearing  = "RetentionGuardEmptyGroupNearingOffsetsRetention"
		lowRoom  = "RecoveryHeadroomShorterThanWindow"
		empty    = "EmptyGroupOffsetsExpireBeforeWindow"
	)
	who := "The consumer group " + caseGroup + " (policy " + caseNS + "/" + casePolicy + ")"
	window := func() promSeries {
		return b.managerSeries("retentionguard_policy_recovery_window_seconds", policyLabels(), flat(n, 3*day))
	}
	// 2 days of headroom under a 3-day window from pre on.
	room := func() promSeries {
		return b.headroomSeries(then(flat(b.pre, 10*day), flat(n-b.pre, 2*day)))
	}
	lagging := append(b.verdict("Violated", b.pre, n-b.pre, "Deny", lowRoom), window(), room())
	emptyGroup := append(b.verdict("Violated", b.pre, n-b.pre, "Deny", empty), window(),
		b.offsetsSeries("GroupEmpty", then(missing(b.pre), flat(n-b.pre, 2*day))))

	// Seed 000 after the loss: Violated by the headroom from pre, records
	// lost (CommittedOffsetExpired) from lossAt on; the verdict does not
	// change, Ready's reason does.
	lossAt := b.pre + 5
	info := func(reason string) map[string]string {
		return policyLabels("consumer_group", caseGroup, "enforcement", "Deny", "reason", reason)
	}
	gone := func(k int) []string { return then([]string{"stale"}, missing(k-1)) }
	lost := []promSeries{
		b.managerSeries("retentionguard_policy_verdict", policyLabels("verdict", "Violated"), then(flat(b.pre, 0), flat(n-b.pre, 1))),
		b.managerSeries("retentionguard_policy_verdict", policyLabels("verdict", "Proven"), then(flat(b.pre, 1), flat(n-b.pre, 0))),
		b.managerSeries("retentionguard_policy_verdict", policyLabels("verdict", "Unknown"), flat(n, 0)),
		b.managerSeries("retentionguard_policy_info", info("Proven"), then(flat(b.pre, 1), gone(n-b.pre))),
		b.managerSeries("retentionguard_policy_info", info(lowRoom), then(missing(b.pre), flat(lossAt-b.pre, 1), gone(n-lossAt))),
		b.managerSeries("retentionguard_policy_info", info("CommittedOffsetExpired"), then(missing(lossAt), flat(n-lossAt, 1))),
		window(), room(),
	}

	var cases []alertCase
	// Every risk the proof knows: a new one the rule does not exclude
	// fails here.
	for _, risk := range proof.RiskReasons() {
		cases = append(cases, alertCase{
			alert: violated, what: "Violated by " + risk + " only, Deny",
			series: b.verdict("Violated", b.pre, n-b.pre, "Deny", risk), evals: b.silent(violated),
		})
	}
	return append(cases, []alertCase{
		{
			alert: violated, what: "seed 000 before the loss: Violated by " + lowRoom + " only, Deny",
			series: lagging, evals: b.silent(violated),
		},
		{
			alert: headroom, what: "seed 000 before the loss: Violated by " + lowRoom + " only, Deny", fires: true,
			series: lagging,
			evals: b.firing(headroom, b.pre, promAlert{
				ExpLabels: policyLabels("severity", "warning", "consumer_group", caseGroup),
				ExpAnnotations: map[string]string{
					"summary":     who + " has 2d 0h 0m 0s of headroom, less than its recoveryWindow of 3d 0h 0m 0s.",
					"description": headroomDescription("2d 0h 0m 0s"),
					"runbook_url": b.runbook(headroom),
				},
			}),
		},
		{
			alert: violated, what: "seed 003 before the loss: Violated by " + empty + " only, Deny",
			series: emptyGroup, evals: b.silent(violated),
		},
		{
			alert: nearing, what: "seed 003 before the loss: Violated by " + empty + " only, Deny", fires: true,
			series: emptyGroup,
			evals: b.firing(nearing, b.pre, promAlert{
				ExpLabels: policyLabels("severity", "warning", "consumer_group", caseGroup),
				ExpAnnotations: map[string]string{
					"summary":     who + " has had no members for long: its committed offsets expire in 2d 0h 0m 0s, sooner than its recoveryWindow of 3d 0h 0m 0s.",
					"description": emptyGroupDescription,
					"runbook_url": b.runbook(nearing),
				},
			}),
		},
		{
			alert: violated, what: "seed 000: Violated by " + lowRoom + ", then records lost beside it, Deny", fires: true,
			series: lost,
			evals: b.firing(violated, lossAt, promAlert{
				ExpLabels: policyLabels("severity", "critical", "consumer_group", caseGroup, "enforcement", "Deny"),
				ExpAnnotations: map[string]string{
					"summary":     who + " has lost, or can lose, records to retention: CommittedOffsetExpired.",
					"description": "Rollouts of its consumers are refused until the proof holds again. kubectl describe crp -n " + caseNS + " " + casePolicy + " names each violation with its numbers.",
					"runbook_url": b.runbook(violated),
				},
			}),
		},
	}...)
}

// divergedCases: issue 32, seed 000's diverged log under a commit that
// carries its leader epoch (an unclean election truncated below it, the
// log grew back). The consumer rewinds on restart, so the page stays quiet
// (riskCases) and this warning says that records the group read are gone
// from the log; the group's next commit (Proven again) ends it. An
// epoch-less commit past the same log (CommittedOffsetDiverged) pages
// instead, and this warning stays quiet.
func (b caseBuilder) divergedCases() []alertCase {
	const (
		diverged = "RetentionGuardLogDivergedBelowGroup"
		violated = "RetentionGuardPolicyViolated"
	)
	who := "consumer group " + caseGroup + " (policy " + caseNS + "/" + casePolicy + ")"
	// Diverged from pre for `for` and 3 steps, then Proven again.
	steps := b.n(b.c.forOf[diverged]) + 3
	return []alertCase{
		{
			alert: diverged, what: "seed 000's diverged log under a commit with its epoch", fires: true,
			series: b.verdict("Violated", b.pre, steps, "Deny", "CommittedEpochDiverged"),
			evals: b.firing(diverged, b.pre, promAlert{
				ExpLabels: policyLabels("severity", "warning", "consumer_group", caseGroup),
				ExpAnnotations: map[string]string{
					"summary": "The log under the " + who + " was truncated below its committed offset and grew back (CommittedEpochDiverged): records it read are gone from Kafka.",
					"description": "Its consumer rewinds to where the log diverged on restart and re-reads what is there now, so rollouts are allowed; " +
						"decide whether what the group did with the records gone must be undone. The group's next commit ends this, " +
						"or reset its offsets to where the log diverged. kubectl describe crp -n " + caseNS + " " + casePolicy + " names the partitions and offsets.",
					"runbook_url": b.runbook(diverged),
				},
			}),
		},
		{
			alert: diverged, what: "the group's next commit: Proven again",
			series: b.verdict("Violated", b.pre, steps, "Deny", "CommittedEpochDiverged"),
			evals:  []promAlertTest{{EvalTime: b.at(b.pre + steps + 1), AlertName: diverged, ExpAlerts: none()}},
		},
		{
			alert: diverged, what: "an epoch-less commit past a diverged log (a loss)",
			series: b.verdict("Violated", b.pre, steps, "Deny", "CommittedOffsetDiverged"),
			evals:  b.silent(diverged),
		},
		{
			alert: violated, what: "an epoch-less commit past a diverged log (a loss) pages", fires: true,
			series: b.verdict("Violated", b.pre, steps, "Deny", "CommittedOffsetDiverged"),
			evals: b.firing(violated, b.pre, promAlert{
				ExpLabels: policyLabels("severity", "critical", "consumer_group", caseGroup, "enforcement", "Deny"),
				ExpAnnotations: map[string]string{
					"summary":     "The " + who + " has lost, or can lose, records to retention: CommittedOffsetDiverged.",
					"description": "Rollouts of its consumers are refused until the proof holds again. kubectl describe crp -n " + caseNS + " " + casePolicy + " names each violation with its numbers.",
					"runbook_url": b.runbook(violated),
				},
			}),
		},
	}
}

// decisions are the webhook's decision counters: every kind and decision
// exists from the start (at 0), rising ones as given.
func (b caseBuilder) decisions(rising map[[2]string][]string) []promSeries {
	n := b.length()
	var out []promSeries
	for _, kind := range []string{"Deployment", "StatefulSet", "Job", "CronJob"} {
		for _, d := range []string{"allowed", "denied", "warned", "audited", "overridden", "skipped", "error"} {
			values, ok := rising[[2]string{kind, d}]
			if !ok {
				values = flat(n, 0)
			}
			out = append(out, b.managerSeries("retentionguard_admission_decisions_total",
				map[string]string{"kind": kind, "decision": d}, values))
		}
	}
	return out
}

func (b caseBuilder) admissionCases() []alertCase {
	n := b.length()
	const denying, failing = "RetentionGuardWebhookDenying", "RetentionGuardWebhookFailingClosed"
	// One refused scale-up at pre: the alert fires, then resolves once
	// the rate interval has passed without another.
	fired := b.firing(denying, b.pre, promAlert{
		ExpLabels: map[string]string{"severity": "info", "kind": "Deployment"},
		ExpAnnotations: map[string]string{
			"summary":     "retention-guard is refusing Deployment rollouts of consumers whose proof fails.",
			"description": "Each refusal is a RolloutDenied event on its policy, naming the workload: kubectl get events -A --field-selector reason=RolloutDenied.",
			"runbook_url": b.runbook(denying),
		},
	})
	fired = append(fired, promAlertTest{EvalTime: b.at(b.pre + b.n(b.c.rate) + 1), AlertName: denying, ExpAlerts: none()})
	return []alertCase{
		{
			alert: denying, what: "one Deployment rollout denied", fires: true,
			series: b.decisions(map[[2]string][]string{
				{"Deployment", "denied"}:  counter(n, b.pre, 1),
				{"Deployment", "allowed"}: counter(n, 0, n),
			}),
			evals: fired,
		},
		{
			alert: denying, what: "rollouts allowed and skipped, none denied",
			series: b.decisions(map[[2]string][]string{
				{"Deployment", "allowed"}: counter(n, 0, n),
				{"Job", "skipped"}:        counter(n, 0, n),
			}),
			evals: b.silent(denying),
		},
		{
			alert: failing, what: "Job starts refused because the handler cannot judge", fires: true,
			series: b.decisions(map[[2]string][]string{{"Job", "error"}: counter(n, b.pre, n)}),
			evals: b.firing(failing, b.pre, promAlert{
				ExpLabels: map[string]string{"severity": "warning", "kind": "Job"},
				ExpAnnotations: map[string]string{
					"summary": "retention-guard refuses Job rollouts because it cannot judge them.",
					"description": "The handler could not read the policies or the workload (see the manager's log) and refused, failing closed. " +
						"Deleting its ValidatingWebhookConfiguration takes it out of the path in an emergency.",
					"runbook_url": b.runbook(failing),
				},
			}),
		},
		{
			// Refusals because proofs fail are the guard working.
			alert: failing, what: "rollouts denied by failing proofs",
			series: b.decisions(map[[2]string][]string{{"Job", "denied"}: counter(n, b.pre, n)}),
			evals:  b.silent(failing),
		},
	}
}

// liveChecksBusyCases: issue 34, one manager past its ceiling (seed 000
// at scale). Its passes fell behind, every rollout of a stale policy is
// checked live, and the live checks of a connection found every slot busy
// until their deadline: those rollouts are refused as unproven. The alert
// says the guard, not a proof, is the cause.
func (b caseBuilder) liveChecksBusyCases() []alertCase {
	n := b.length()
	const alert = "RetentionGuardLiveChecksBusy"
	busy := func(values []string) []promSeries {
		return []promSeries{b.managerSeries("retentionguard_live_checks_busy_total", map[string]string{}, values)}
	}
	return []alertCase{
		{
			alert: alert, what: "live checks busy from pre on", fires: true,
			series: busy(counter(n, b.pre, n)),
			evals: b.firing(alert, b.pre, promAlert{
				ExpLabels: map[string]string{"severity": "warning"},
				ExpAnnotations: map[string]string{
					"summary": "retention-guard refuses rollouts as unproven because its live checks of Kafka are saturated.",
					"description": "Every live-check slot of a Kafka connection stayed busy until the webhook's deadline: the manager's " +
						"passes are behind (its policies' checkedAt is old) and the cluster answers slowly. Look at " +
						"retentionguard_kafka_request_duration_seconds; past one manager's ceiling, give the connection a shard of its own (docs/scaling.md).",
					"runbook_url": b.runbook(alert),
				},
			}),
		},
		{
			alert: alert, what: "no live check ever busy",
			series: busy(flat(n, 0)),
			evals:  b.silent(alert),
		},
	}
}

func rejections(name, errorType, code string) map[string]string {
	return map[string]string{"name": name, "type": "validating", "operation": "UPDATE", "error_type": errorType, "rejection_code": code}
}

func (b caseBuilder) apiserverCases() []alertCase {
	n := b.length()
	const alert = "RetentionGuardWebhookErrors"
	const gatekeeper = "validation.gatekeeper.sh"
	description := "Check that the manager's pods are ready and that the API server reaches its Service " +
		"(network policies, TLS: the caBundle of the ValidatingWebhookConfiguration)."
	if b.c.failurePolicy == "Ignore" {
		return []alertCase{
			{
				alert: alert, what: "calls fail open (failurePolicy Ignore)", fires: true,
				series: []promSeries{apiserverSeries("apiserver_admission_webhook_fail_open_count",
					map[string]string{"name": webhookRef, "type": "validating"}, counter(n, b.pre, n))},
				evals: b.firing(alert, b.pre, promAlert{
					ExpLabels: map[string]string{"severity": "critical"},
					ExpAnnotations: map[string]string{
						"summary":     "The API server gets no answer from retention-guard's webhook: with failurePolicy Ignore, rollouts of guarded consumers pass unchecked.",
						"description": description,
						"runbook_url": b.runbook(alert),
					},
				}),
			},
			{
				alert: alert, what: "our denials and another webhook failing open",
				series: []promSeries{
					apiserverSeries("apiserver_admission_webhook_rejection_count", rejections(webhookRef, "no_error", "403"), counter(n, b.pre, n)),
					apiserverSeries("apiserver_admission_webhook_fail_open_count",
						map[string]string{"name": gatekeeper, "type": "validating"}, counter(n, b.pre, n)),
				},
				evals: b.silent(alert),
			},
		}
	}
	return []alertCase{
		{
			alert: alert, what: "calls to the webhook fail (failurePolicy Fail)", fires: true,
			series: []promSeries{
				apiserverSeries("apiserver_admission_webhook_rejection_count", rejections(webhookRef, "calling_webhook_error", "500"), counter(n, b.pre, n)),
				apiserverSeries("apiserver_admission_webhook_rejection_count", rejections(webhookRef, "no_error", "403"), counter(n, 0, n)),
			},
			evals: b.firing(alert, b.pre, promAlert{
				ExpLabels: map[string]string{"severity": "critical", "error_type": "calling_webhook_error"},
				ExpAnnotations: map[string]string{
					"summary":     "The API server gets no answer from retention-guard's webhook (calling_webhook_error): with failurePolicy Fail, rollouts of guarded consumers are refused.",
					"description": description,
					"runbook_url": b.runbook(alert),
				},
			}),
		},
		{
			// Denials are rejections without an error; another
			// webhook's failures are not ours.
			alert: alert, what: "our denials and another webhook's failures",
			series: []promSeries{
				apiserverSeries("apiserver_admission_webhook_rejection_count", rejections(webhookRef, "no_error", "403"), counter(n, b.pre, n)),
				apiserverSeries("apiserver_admission_webhook_rejection_count", rejections(gatekeeper, "calling_webhook_error", "500"), counter(n, b.pre, n)),
			},
			evals: b.silent(alert),
		},
	}
}

func (b caseBuilder) managerDownCases() []alertCase {
	if b.c.job == "" {
		return nil
	}
	n := b.length()
	const alert = "RetentionGuardManagerDown"
	up := func(instance string, values []string) promSeries {
		return promSeries{
			Series: seriesName("up", map[string]string{"job": b.c.job, "namespace": releaseNS, "instance": instance}),
			Values: join(values),
		}
	}
	// With shards, each shard's pods are scraped through the shards
	// Service, their targets labelled with their shard; healthy unless a
	// case says otherwise.
	shardsJob := strings.TrimSuffix(b.c.job, "-webhook") + "-shards"
	shardUp := func(shard, instance string, values []string) promSeries {
		return promSeries{
			Series: seriesName("up", map[string]string{"job": shardsJob, "namespace": releaseNS, "shard": shard, "instance": instance}),
			Values: join(values),
		}
	}
	healthyShards := func(except string) []promSeries {
		var out []promSeries
		for i, sh := range b.c.shards {
			if sh != except {
				out = append(out, shardUp(sh, fmt.Sprintf("10.0.5.%d:8080", i+1), flat(n, 1)))
			}
		}
		return out
	}
	want := func(labels ...string) promAlert {
		l := map[string]string{"severity": "critical", "namespace": releaseNS}
		for i := 0; i < len(labels); i += 2 {
			l[labels[i]] = labels[i+1]
		}
		return promAlert{
			ExpLabels: l,
			ExpAnnotations: map[string]string{
				"summary":     "No retention-guard manager is scraped up: proofs are not refreshed, and with failurePolicy Fail rollouts of guarded consumers are refused.",
				"description": "kubectl -n " + releaseNS + " get pods -l app.kubernetes.io/instance=" + releaseName + " shows why.",
				"runbook_url": b.runbook(alert),
			},
		}
	}
	cases := []alertCase{
		{
			alert: alert, what: "the only replica stops answering scrapes", fires: true,
			series: append(healthyShards(""), up("10.0.3.7:8080", then(flat(b.pre, 1), flat(n-b.pre, 0)))),
			evals:  b.firing(alert, b.pre, want("job", b.c.job)),
		},
		{
			alert: alert, what: "one of two replicas down",
			series: append(healthyShards(""),
				up("10.0.3.7:8080", then(flat(b.pre, 1), flat(n-b.pre, 0))),
				up("10.0.4.2:8080", flat(n, 1)),
			),
			evals: b.silent(alert),
		},
	}
	if len(b.c.shards) < 2 {
		return cases
	}
	// Issue 34: a shard's manager down leaves its policies' proofs
	// unrefreshed (seed 003's settlement policy among them) while the
	// webhook-serving pods are up.
	a, other := b.c.shards[0], b.c.shards[1]
	return append(cases,
		alertCase{
			alert: alert, what: "shard " + a + "'s only pod stops answering scrapes", fires: true,
			series: append(healthyShards(a), up("10.0.3.7:8080", flat(n, 1)),
				shardUp(a, "10.0.6.1:8080", then(flat(b.pre, 1), flat(n-b.pre, 0)))),
			evals: b.firing(alert, b.pre, want("job", shardsJob, "shard", a)),
		},
		alertCase{
			alert: alert, what: "shard " + other + "'s pod gone from the targets", fires: true,
			series: append(healthyShards(other), up("10.0.3.7:8080", flat(n, 1)),
				shardUp(other, "10.0.6.2:8080", then(flat(b.pre, 1), []string{"stale"}, missing(n-b.pre-1)))),
			evals: b.firing(alert, b.pre, want("job", shardsJob, "shard", other)),
		},
		alertCase{
			alert: alert, what: "one of shard " + a + "'s two pods down",
			series: append(healthyShards(""), up("10.0.3.7:8080", flat(n, 1)),
				shardUp(a, "10.0.6.1:8080", then(flat(b.pre, 1), flat(n-b.pre, 0)))),
			evals: b.silent(alert),
		},
	)
}

// Issue 32: seed 003's batch consumer guarded by a principal that may not
// read __consumer_offsets. The guard falls back to bounds and the status
// says why; the alert tells the platform team once it has lasted (a
// denial does not heal by itself), with the grant. A read that merely did
// not finish this time (NotRead) or a cluster without the topic (Absent)
// has nothing to grant: silent. So is a read that works.
func (b caseBuilder) offsetsTopicCases() []alertCase {
	n := b.length()
	const unreadable = "RetentionGuardOffsetsTopicUnreadable"
	who := "retention-guard cannot read exact commit times of the consumer group " + caseGroup + " (policy " + caseNS + "/" + casePolicy + ")"
	readable := func(reason string, vals []string) []promSeries {
		return []promSeries{
			b.managerSeries("retentionguard_offsets_topic_readable", policyLabels("reason", reason), vals),
			b.managerSeries("retentionguard_policy_info", policyLabels("consumer_group", caseGroup, "enforcement", "Deny", "reason", "Proven"), flat(n, 1)),
		}
	}
	// Read until pre, then denied: the Read series leaves (stale), the
	// Denied one starts at 0.
	denied := append(readable("Read", then(flat(b.pre, 1), []string{"stale"}, missing(n-b.pre-1))),
		readable("Denied", then(missing(b.pre), flat(n-b.pre, 0)))[0])
	return []alertCase{
		{
			alert: unreadable, what: "Read on __consumer_offsets denied", fires: true,
			series: denied,
			evals: b.firing(unreadable, b.pre, promAlert{
				ExpLabels: policyLabels("severity", "warning", "consumer_group", caseGroup, "reason", "Denied"),
				ExpAnnotations: map[string]string{
					"summary": who + " from __consumer_offsets (Denied): it bounds them, and may not prove idle partitions or Empty groups.",
					"description": "Grant the guard's principal Read on topic __consumer_offsets (kafka-acls.sh --add --allow-principal " +
						"User:PRINCIPAL --operation Read --topic __consumer_offsets; Strimzi and MSK: docs/install.md). " +
						"kubectl describe crp -n " + caseNS + " " + casePolicy + " shows the offsetsTopic warning.",
					"runbook_url": b.runbook(unreadable),
				},
			}),
		},
		{
			alert: unreadable, what: "a read that did not finish this time",
			series: readable("NotRead", flat(n, 0)),
			evals:  b.silent(unreadable),
		},
		{
			alert: unreadable, what: "a cluster without __consumer_offsets",
			series: readable("Absent", flat(n, 0)),
			evals:  b.silent(unreadable),
		},
		{
			alert: unreadable, what: "exact times read",
			series: readable("Read", flat(n, 1)),
			evals:  b.silent(unreadable),
		},
	}
}

// parkedByKEDACases: seed 003 under KEDA (issue 36). KEDA scales the
// batch consumer in when its lag is gone; the group is Empty from pre on
// and its offsets expire 7 days later (offsets.retention.minutes' default)
// unless KEDA sees lag first. The manager exports the expiry as one
// timestamp for the whole spell. Six days into a seven-day park, with a
// 3-day window, the warning has long fired (from the fourth day) and the
// page fires as the last day begins: both before the loss.
//
// Only for the combinations sampled each minute: a week sampled each
// second (the short-durations combination) is 600,000 rule evaluations,
// and that combination changes only the alerts' `for`, names and runbook,
// which the other cases cover.
func (b caseBuilder) parkedByKEDACases() []alertCase {
	if b.c.step < time.Minute {
		return nil
	}
	const (
		nearing    = "RetentionGuardEmptyGroupNearingOffsetsRetention"
		withinADay = "RetentionGuardGroupOffsetsExpireWithinADay"
		window     = 3 * day
		park       = 7 * day // offsets.retention.minutes: 10080
	)
	sixDays := b.pre + b.n(6*24*time.Hour)
	steps := sixDays + b.n(2*time.Hour) // the history runs past the sixth day
	// Expanding notation (promtool's "a+bxn": n+1 samples): a week is
	// thousands of samples.
	expanding := func(v float64, n int) string {
		return strconv.FormatFloat(v, 'f', -1, 64) + "+0x" + strconv.Itoa(n-1)
	}
	series := []promSeries{
		b.managerSeries("retentionguard_policy_recovery_window_seconds", policyLabels(), []string{expanding(window, steps)}),
		b.managerSeries("retentionguard_policy_info",
			policyLabels("consumer_group", caseGroup, "enforcement", "Deny", "reason", "Proven"), []string{expanding(1, steps)}),
		// While a member runs no clock is exported; from pre, the Empty
		// clock's expiry, when KEDA parked it plus a week.
		b.managerSeries("retentionguard_group_offsets_expiration_timestamp_seconds", policyLabels("clock", "GroupEmpty"),
			[]string{"_x" + strconv.Itoa(b.pre), expanding(b.secs(b.pre)+park, steps-b.pre)}),
	}
	who := "The consumer group " + caseGroup + " (policy " + caseNS + "/" + casePolicy + ")"
	// The warning's condition holds once less than the window and its
	// `for` is left, so that it fires at the first step past four days
	// parked: the first with less than the window left, three days before
	// the loss. At four days exactly (the window left) it is pending.
	fourDays := b.pre + b.n(4*24*time.Hour)
	warn := b.firing(nearing, fourDays+1-b.n(b.c.forOf[nearing]), promAlert{
		ExpLabels: policyLabels("severity", "warning", "consumer_group", caseGroup),
		ExpAnnotations: map[string]string{
			"summary": who + " has had no members for long: its committed offsets expire in " +
				humanizeDuration(window-b.secs(1)) + ", sooner than its recoveryWindow of 3d 0h 0m 0s.",
			"description": emptyGroupDescription,
			"runbook_url": b.runbook(nearing),
		},
	})
	// Six days parked: still firing, one day left.
	warn = append(warn, promAlertTest{EvalTime: b.at(sixDays), AlertName: nearing, ExpAlerts: []promAlert{{
		ExpLabels: policyLabels("severity", "warning", "consumer_group", caseGroup),
		ExpAnnotations: map[string]string{
			"summary":     who + " has had no members for long: its committed offsets expire in 1d 0h 0m 0s, sooner than its recoveryWindow of 3d 0h 0m 0s.",
			"description": emptyGroupDescription,
			"runbook_url": b.runbook(nearing),
		},
	}}})
	page := b.firing(withinADay, sixDays+1, promAlert{
		ExpLabels: policyLabels("severity", "critical", "consumer_group", caseGroup, "clock", "GroupEmpty"),
		ExpAnnotations: map[string]string{
			"summary": who + " loses its committed offsets in " + humanizeDuration(day-b.secs(1+b.n(b.c.forOf[withinADay]))) +
				" (GroupEmpty clock), sooner than its recoveryWindow of 3d 0h 0m 0s.",
			"description": "The classic group has had no members for nearly offsets.retention.minutes: start a consumer of the group now " +
				"(a member stops the clock). A consumer started after the offsets expire resumes wherever auto.offset.reset says.",
			"runbook_url": b.runbook(withinADay),
		},
	})
	return []alertCase{
		{alert: nearing, what: "seed 003 under KEDA: parked at zero six days of seven, 3d window", fires: true, series: series, evals: warn},
		{alert: withinADay, what: "seed 003 under KEDA: parked at zero six days of seven, 3d window", fires: true, series: series, evals: page},
	}
}
