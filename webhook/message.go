package webhook

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	rgv1 "github.com/retentionguard/retention-guard/api/v1alpha1"
	"github.com/retentionguard/retention-guard/internal/proof"
)

const (
	// maxMessage bounds the denial message so that what kubectl prints,
	// `Error from server (Forbidden): admission webhook
	// "workloads.retentionguard.io" denied the request: ` (100 bytes) and
	// the message, stays under 1 KiB.
	maxMessage = 1024 - 110
	// maxLine bounds one prose line of the denial message, so it reads in
	// a terminal; command lines are never cut (they must stay runnable).
	maxLine = 160
	// maxWarning bounds one admission warning.
	maxWarning = 120
	// maxFindingsShown is how many findings a policy lists before "and N
	// more".
	maxFindingsShown = 5
	// maxEventNote bounds an event's note (events.k8s.io allows 1 KiB).
	maxEventNote = 1000
)

// target is the workload a request is about.
type target struct {
	Kind      string // Deployment | StatefulSet | Job | CronJob
	Namespace string
	Name      string
	Rollout   rollout
	User      string
	// CronJob names the CronJob that owns a Job (a scheduled run), with
	// its UID; empty otherwise.
	CronJob, CronJobUID string
	// ScaledJob names the KEDA ScaledJob that owns a Job (a run KEDA
	// started on the group's lag), with its UID; empty otherwise.
	ScaledJob, ScaledJobUID string
}

func (t target) String() string {
	s := t.Kind + " " + t.Namespace + "/" + t.Name
	switch {
	case t.CronJob != "":
		s += " (a run of CronJob " + t.CronJob + ")"
	case t.ScaledJob != "":
		s += " (a run of KEDA ScaledJob " + t.ScaledJob + ")"
	}
	return s
}

// related is the object an event on the policy relates to: the CronJob of
// a scheduled run or the ScaledJob of a KEDA run (so `kubectl get events`
// shows it with the policy's event), else nothing.
func (t target) related() *corev1.ObjectReference {
	switch {
	case t.CronJob != "":
		return &corev1.ObjectReference{APIVersion: "batch/v1", Kind: kindCronJob, Namespace: t.Namespace,
			Name: t.CronJob, UID: types.UID(t.CronJobUID)}
	case t.ScaledJob != "":
		return &corev1.ObjectReference{APIVersion: "keda.sh/v1alpha1", Kind: "ScaledJob", Namespace: t.Namespace,
			Name: t.ScaledJob, UID: types.UID(t.ScaledJobUID)}
	}
	return nil
}

// overrideLines say how to set the override annotation where it counts:
// on the workload itself, or, for a CronJob and its runs, on the CronJob's
// job template (the annotations its Jobs are created with), for a KEDA
// ScaledJob's runs on the ScaledJob (whose annotations its Jobs get). A refused
// CREATE stored nothing, so no kubectl command can annotate the object:
// the annotation goes into the manifest, which is applied again. A run of
// a CronJob is the exception: the CronJob exists and is patched.
func (t target) overrideLines(ids string) []line {
	cronJob := t.CronJob
	if t.Kind == kindCronJob && t.Rollout != rolloutCreate {
		cronJob = t.Name
	}
	knowingly := proseLine("Or roll out knowingly:")
	switch {
	case cronJob != "":
		return []line{knowingly, commandLine("kubectl patch cronjob " + cronJob + " -n " + t.Namespace +
			` --type merge -p '{"spec":{"jobTemplate":{"metadata":{"annotations":{"` + OverrideAnnotation + `":"` + ids + `"}}}}}'`)}
	case t.ScaledJob != "":
		// KEDA's generateJobs copies the ScaledJob's own
		// metadata.annotations onto every Job it creates.
		return []line{knowingly, commandLine("kubectl annotate --overwrite scaledjob " + t.ScaledJob + " -n " + t.Namespace + " " +
			OverrideAnnotation + "=" + ids)}
	case t.Rollout == rolloutCreate:
		where := "metadata.annotations"
		if t.Kind == kindCronJob {
			where = "spec.jobTemplate.metadata.annotations"
		}
		// Quoted: an all-digit or exponent-like ID would otherwise be a
		// YAML number, which the API server refuses as an annotation.
		return []line{proseLine("Or roll out knowingly: add to the manifest's " + where + ", then apply it again:"),
			commandLine(OverrideAnnotation + `: "` + ids + `"`)}
	}
	return []line{knowingly, commandLine("kubectl annotate --overwrite " + strings.ToLower(t.Kind) + " " + t.Name + " -n " + t.Namespace + " " + OverrideAnnotation + "=" + ids)}
}

// denyMessage says which policies refuse the rollout, why, with the
// numbers, and the way out, in at most maxMessage bytes (see
// denial.layout).
func denyMessage(t target, d *decision, now time.Time) string {
	m := denial{header: proof.Truncate("retention-guard refused this rollout ("+string(t.Rollout)+") of "+t.String()+":", maxLine)}
	overridable := true
	var ids []string
	for i := range d.Policies {
		r := &d.Policies[i]
		if !r.refuses() {
			continue
		}
		m.policies = append(m.policies, denialParts(r, now))
		if len(r.Consumer) > 0 || r.ProofID == "" {
			overridable = false
		} else {
			ids = append(ids, r.ProofID)
		}
	}
	m.moreLine = func(n int) string {
		noun := " more refusing policies"
		if n == 1 {
			noun = " more refusing policy"
		}
		return "And " + strconv.Itoa(n) + noun + ": kubectl get crp -n " + t.Namespace
	}
	if overridable && len(ids) > 0 {
		m.override = t.overrideLines(strings.Join(ids, ","))
	}
	return m.layout(maxMessage)
}

// policyParts are one refusing policy's lines.
type policyParts struct {
	name, namespace string
	head            []string   // the policy line and the numbers
	findings        [][]string // at most maxFindingsShown, each wrapped
	total           int        // findings in all, listed or not
	// distinct is how many findings must be shown for every kind of
	// problem (findingRank) to have its first line shown.
	distinct int
	moreLine func(n int) string
	// way out: with the `retention-guard check` hint, without, in words only
	way, wayNoCheck, wayCompact []line
	refused                     []string
}

func denialParts(r *policyResult, now time.Time) policyParts {
	p := r.Policy
	pp := policyParts{name: p.Name, namespace: p.Namespace,
		head: []string{proof.Truncate("policy "+p.Name+" (group "+p.Spec.GroupID+") "+verdictPhrase(r, now), maxLine)}}
	if s := summaryPhrase(r); s != "" {
		pp.head = append(pp.head, proof.Truncate("  "+s, maxLine))
	}
	lines, ranks, omitted := findingLines(r)
	pp.total = len(lines) + omitted
	// A finding is never cut mid-word: a long one is wrapped at words, and
	// the message shrinks by dropping whole findings (counted), then whole
	// wrapped lines.
	for i, l := range lines[:min(len(lines), maxFindingsShown)] {
		pp.findings = append(pp.findings, wrapFinding("- "+l, maxLine-6)) // room for " (…)"
		if i == 0 || ranks[i] != ranks[i-1] {
			pp.distinct = i + 1
		}
	}
	pp.moreLine = func(n int) string {
		return proof.Truncate("- and "+strconv.Itoa(n)+" more: kubectl describe crp "+p.Name+" -n "+p.Namespace, maxLine)
	}
	pp.way, pp.wayNoCheck, pp.wayCompact = wayOut(r, true, false), wayOut(r, false, false), wayOut(r, false, true)
	if r.OverrideRefused != "" {
		pp.refused = []string{proof.Truncate("Override refused: "+r.OverrideRefused+".", maxLine)}
	}
	return pp
}

// orderedFindings are the policy's findings, Kafka and consumer, ordered
// by findingRank, data loss by proof.LossRank (the business cursor's
// facts first: it is the authority on what was processed), stable within
// a rank.
func orderedFindings(r *policyResult) []finding {
	fs := append(append(make([]finding, 0, len(r.Kafka)+len(r.Consumer)), r.Kafka...), r.Consumer...)
	slices.SortStableFunc(fs, func(a, b finding) int {
		if d := findingRank(a.Reason) - findingRank(b.Reason); d != 0 {
			return d
		}
		return proof.LossRank(a.Reason) - proof.LossRank(b.Reason)
	})
	return fs
}

// findingLines are the lines that list a policy's findings, most important
// first (see orderedFindings). Partitions that share a reason make one
// line, with how many there are (counted by the proof's partition summary
// when the status lists only some) and the worst example, so that a few
// lines cover distinct problems: "NoCommittedOffset on 24 partitions of
// settle-task, e.g. settle-task[19]: no committed offset while log start
// is 193946: ...". ranks are the lines' findingRank; omitted counts the findings the status left out that no
// line accounts for.
func findingLines(r *policyResult) (lines []string, ranks []int, omitted int) {
	fs := orderedFindings(r)
	type group struct {
		reason  string
		members []finding
	}
	var groups []*group
	byReason := map[string]*group{}
	for _, f := range fs {
		if f.Partition == nil { // not about a partition
			groups = append(groups, &group{reason: f.Reason, members: []finding{f}})
			continue
		}
		g := byReason[f.Reason]
		if g == nil {
			g = &group{reason: f.Reason}
			byReason[f.Reason] = g
			groups = append(groups, g)
		}
		g.members = append(g.members, f)
	}
	omitted = r.KafkaOmitted
	for _, g := range groups {
		count := max(len(g.members), summaryCount(r, g.reason))
		ranks = append(ranks, findingRank(g.reason))
		if count == 1 {
			lines = append(lines, g.members[0].String())
			continue
		}
		omitted -= count - len(g.members)
		worst := g.members[0]
		for _, f := range g.members[1:] {
			if severity(f) > severity(worst) {
				worst = f
			}
		}
		var topics []string
		for _, f := range g.members {
			if !slices.Contains(topics, f.Topic) {
				topics = append(topics, f.Topic)
			}
		}
		of := ""
		if count == len(g.members) || allTopicsOf(r, topics) {
			switch {
			case len(topics) <= 2:
				of = " of " + strings.Join(topics, ", ")
			default:
				of = " of " + strconv.Itoa(len(topics)) + " topics"
			}
		}
		example := strings.TrimPrefix(strings.TrimPrefix(worst.String(), g.reason+" "), g.reason+": ")
		lines = append(lines, g.reason+" on "+proof.Plural(int64(count), "partition")+of+", e.g. "+example)
	}
	return lines, ranks, max(omitted, 0)
}

// summaryCount is how many partitions the proof's summary counts with a
// data-loss reason; 0 for other reasons or without a proof.
//
// The summary counts each partition once, by the reason that decides it:
// with a cursor the consumer resumes from, only the cursor's reasons
// decide; with a cursor beside the group's offsets both kinds do, and a
// count by reason cannot be told apart (0: the listed findings count).
func summaryCount(r *policyResult, reason string) int {
	if r.Proof == nil {
		return 0
	}
	fromCursor := false
	if c := r.Policy.Spec.Cursor; c != nil {
		if c.ResumeFrom != rgv1.ResumeFromCursor {
			return 0
		}
		fromCursor = true
	}
	s := r.Proof.PartitionSummary
	switch {
	case reason == proof.ReasonCommittedOffsetExpired && !fromCursor, reason == proof.ReasonCursorExpired && fromCursor:
		return int(s.Expired)
	case reason == proof.ReasonNoCommittedOffset && !fromCursor, reason == proof.ReasonNoCursor && fromCursor:
		return int(s.Missing)
	case reason == proof.ReasonCommittedOffsetBeyondLogEnd && !fromCursor, reason == proof.ReasonCursorBeyondLogEnd && fromCursor:
		return int(s.BeyondEnd)
	}
	return 0
}

// allTopicsOf reports whether topics are all the topics the policy's proof
// covers, so that partitions the status leaves out are of them too.
func allTopicsOf(r *policyResult, topics []string) bool {
	for _, t := range r.Policy.Spec.Topics {
		if !slices.Contains(topics, t) {
			return false
		}
	}
	if r.Proof != nil {
		for _, t := range r.Proof.Topics {
			if !slices.Contains(topics, t.Name) {
				return false
			}
		}
	}
	return true
}

// severity ranks a partition finding within its reason by its numbers
// (the violation's fields, never its message): the records expired, the
// log start below which nothing proves the group read, the position
// beyond log end, the records a restart skips. A finding without the
// number ranks lowest.
func severity(f finding) int64 {
	v := f.Facts
	if v == nil {
		return -1
	}
	n := func(p *int64) int64 {
		if p == nil {
			return -1
		}
		return *p
	}
	switch f.Reason {
	case proof.ReasonCommittedOffsetExpired, proof.ReasonCursorExpired, proof.ReasonShareRecordsExpired:
		return n(v.ExpiredRecords)
	case proof.ReasonNoCommittedOffset, proof.ReasonNoCursor:
		return n(v.LogStart)
	case proof.ReasonCommittedOffsetBeyondLogEnd:
		return n(v.Committed)
	case proof.ReasonCommittedOffsetDiverged, proof.ReasonCommittedEpochDiverged:
		return n(v.DivergedRecords)
	case proof.ReasonCursorBeyondLogEnd:
		return n(v.Cursor)
	case proof.ReasonGroupAheadOfCursor:
		if v.Committed == nil || v.Cursor == nil {
			return -1
		}
		return *v.Committed - *v.Cursor
	}
	return -1
}

// String: "Reason subject: message"; the proof's messages start with
// their subject already ("settle-task[3]: committed offset ...").
func (f finding) String() string {
	subject := f.subject()
	switch {
	case subject != "" && strings.HasPrefix(f.Message, subject+":"):
		return f.Reason + " " + f.Message
	case subject != "" && strings.Contains(f.Message, subject):
		// The message names its subject in its own words ("cursor 140 is
		// below log start 150 on settle-task[7]: ...").
		return f.Reason + ": " + f.Message
	case subject != "":
		return f.Reason + " " + subject + ": " + f.Message
	case f.Message != "":
		return f.Reason + ": " + f.Message
	}
	return f.Reason
}

// verdictPhrase: "is Violated (proof 7f3a9c21, checked 40s ago):".
func verdictPhrase(r *policyResult, now time.Time) string {
	s := "is " + string(r.Verdict)
	if r.Verdict == rgv1.VerdictProven {
		s = "has a proven group but not its consumer settings"
	}
	var facts []string
	if r.ProofID != "" {
		facts = append(facts, "proof "+r.ProofID)
	}
	if !r.CheckedAt.IsZero() {
		c := "checked " + proof.FormatDurationShort(now.Sub(r.CheckedAt.Time)) + " ago"
		if r.Live {
			c = "checked live"
		}
		facts = append(facts, c)
	}
	if len(facts) > 0 {
		s += " (" + strings.Join(facts, ", ") + ")"
	}
	return s + ":"
}

// summaryPhrase carries the proof's numbers: partitions by outcome and
// expired records.
func summaryPhrase(r *policyResult) string {
	pr := r.Proof
	if !r.kafkaFailing() || pr == nil {
		return ""
	}
	ps := pr.PartitionSummary
	if ps.Total == 0 && pr.ExpiredRecords == 0 {
		return ""
	}
	parts := []string{proof.Plural(int64(ps.Total), "partition")}
	if ps.Expired > 0 {
		parts = append(parts, strconv.Itoa(int(ps.Expired))+" expired")
	}
	if ps.Missing > 0 {
		parts = append(parts, strconv.Itoa(int(ps.Missing))+" without a committed offset")
	}
	if ps.BeyondEnd > 0 {
		parts = append(parts, strconv.Itoa(int(ps.BeyondEnd))+" beyond log end")
	}
	s := strings.Join(parts, ", ")
	if pr.ExpiredRecords > 0 {
		s += "; " + proof.Plural(pr.ExpiredRecords, "record") + " expired unread"
	}
	if c := pr.Cursor; c != nil && c.AheadRecords > 0 {
		s += "; the group's offsets are " + proof.Plural(c.AheadRecords, "record") + " ahead of the business cursor"
	}
	return s
}

// warnings are the admission warnings of a rollout: failing Warn policies,
// overridden Deny policies, and the proof warnings (low headroom, offsets
// expiring soon) of every matching Deny or Warn policy; Audit policies
// show the client nothing. Each is at most maxWarning bytes.
func warnings(d *decision) []string {
	var out []string
	add := func(s string) { out = append(out, proof.Truncate("retention-guard: "+s, maxWarning)) }
	for i := range d.Policies {
		r := &d.Policies[i]
		p := r.Policy
		switch {
		case r.Overridden:
			add("policy " + p.Name + " overridden (" + OverrideAnnotation + "=" + r.ProofID + "); recorded")
		case r.warnsOnly():
			head := p.Name + " is " + string(r.Verdict)
			if r.ProofID != "" {
				head += " (proof " + r.ProofID + ")"
			}
			if len(r.Consumer) > 0 && !r.kafkaFailing() {
				head = p.Name + ": consumer settings fail"
			}
			if r.Enforcement == rgv1.EnforcementWarn {
				add(head + "; allowed by enforcement Warn")
			} else if r.divergedRisk() {
				// The records the group read where the log diverged are
				// gone from it: "nothing lost yet" would say otherwise.
				add(head + " by risks only, no unread record skipped: allowed")
			} else {
				add(head + " by risks only, nothing lost yet: allowed")
			}
			findings := orderedFindings(r)
			n := min(3, len(findings))
			for _, f := range findings[:n] {
				add(p.Name + ": " + f.String())
			}
			if more := len(findings) - n + r.KafkaOmitted; more > 0 {
				add(p.Name + ": and " + strconv.Itoa(more) + " more (kubectl describe crp " + p.Name + ")")
			}
		}
		if r.Enforcement == rgv1.EnforcementAudit {
			continue // Audit: events and metrics only, nothing for the client
		}
		for j, w := range r.Warnings {
			if j == 2 {
				break
			}
			add(p.Name + ": " + w)
		}
	}
	return out
}

// eventNote is the note of the event recorded on a policy about a rollout.
func eventNote(t target, r *policyResult, reason string) string {
	var s string
	switch reason {
	case EventProofOverridden:
		s = fmt.Sprintf("%s rolled out %s (%s) over proof %s (%s) with %s", userName(t.User), t, t.Rollout,
			r.ProofID, r.Verdict, OverrideAnnotation)
	case EventRolloutDenied:
		s = fmt.Sprintf("refused %s (%s) requested by %s: %s", t, t.Rollout, userName(t.User), resultPhrase(r))
	case EventRolloutWarned:
		s = fmt.Sprintf("allowed with warnings %s (%s) requested by %s: %s", t, t.Rollout, userName(t.User), resultPhrase(r))
	case EventRolloutAudited:
		s = fmt.Sprintf("would refuse %s (%s) requested by %s: %s", t, t.Rollout, userName(t.User), resultPhrase(r))
	}
	return proof.Truncate(s, maxEventNote)
}

func resultPhrase(r *policyResult) string {
	var parts []string
	if r.kafkaFailing() {
		s := string(r.Verdict)
		if r.ProofID != "" {
			s += " (proof " + r.ProofID + ")"
		}
		parts = append(parts, s)
	}
	findings := orderedFindings(r)
	for i, f := range findings {
		if i == 3 {
			parts = append(parts, "and "+strconv.Itoa(len(findings)-3+r.KafkaOmitted)+" more")
			break
		}
		part := f.Reason
		if s := f.subject(); s != "" {
			part += " " + s
		}
		parts = append(parts, part)
	}
	return strings.Join(parts, "; ")
}

func userName(u string) string {
	if u == "" {
		return "an unauthenticated user"
	}
	return u
}
