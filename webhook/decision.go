package webhook

import (
	"slices"
	"strconv"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	rgv1 "github.com/retentionguard/retention-guard/api/v1alpha1"
	"github.com/retentionguard/retention-guard/internal/proof"
)

// OverrideAnnotation on a workload lets a rollout through failing Deny
// policies knowingly. Its value is the current proofID of every such
// policy (comma-separated when there are several); see the package
// documentation for the rules.
const OverrideAnnotation = "retentionguard.io/override-proof"

// finding is one failing fact, from the proof or from the consumer clause.
type finding struct {
	Reason string
	// Topic and Partition say what a finding of the proof is about: a
	// partition, a topic as a whole (Partition nil), or the group or the
	// cluster (Topic empty).
	Topic     string
	Partition *int32
	// Subject is what a finding not about a topic is about: "container
	// settle", "group ledger-settle-consumer", or empty.
	Subject string
	Message string
	// Facts are the numbers of the proof's violation (nil for a finding
	// that is not one): findings are ranked by them, never by parsing the
	// message.
	Facts *rgv1.ViolationStatus
}

// subject names what the finding is about: "settle-task[3]",
// "settle-task", "container settle", or empty.
func (f finding) subject() string {
	switch {
	case f.Topic == "":
		return f.Subject
	case f.Partition == nil:
		return f.Topic
	default:
		return f.Topic + "[" + strconv.Itoa(int(*f.Partition)) + "]"
	}
}

// policyEval is what the handler gathered for one matching policy.
type policyEval struct {
	Policy *rgv1.ConsumerRetentionPolicy
	// Proof is the proof to judge by: the status proof when fresh, else the
	// live check's; nil when neither could be had.
	Proof *rgv1.ProofStatus
	// Live: Proof came from a live check.
	Live bool
	// NoProofReason (ReasonProofMissing, ReasonProofStale or
	// ReasonLiveCheckFailed) and NoProofDetail say why Proof is nil.
	NoProofReason, NoProofDetail string
	// Consumer are the consumer containers' resolved settings, when the
	// policy has spec.consumer.
	Consumer []containerEnv
}

// outcome is the decision on a request, and the decision label of
// retentionguard_admission_decisions_total.
type outcome string

const (
	outcomeAllowed    outcome = "allowed"    // a rollout every matching policy proves (or none matches)
	outcomeDenied     outcome = "denied"     // a Deny policy fails (Unknown counts as failing)
	outcomeWarned     outcome = "warned"     // allowed; a Warn policy fails
	outcomeAudited    outcome = "audited"    // allowed; an Audit policy fails
	outcomeOverridden outcome = "overridden" // allowed through failing Deny policies by the override annotation
	outcomeSkipped    outcome = "skipped"    // not a rollout: allowed without reading policies
	// outcomeError: refused because the handler could not judge (the policy
	// list failed, the workload or its pod template was unreadable): fail
	// closed, but counted apart from denials so that "the guard is broken"
	// is not mistaken for "the proof failed".
	outcomeError outcome = "error"
)

// policyResult is the judgement of one matching policy.
type policyResult struct {
	Policy      *rgv1.ConsumerRetentionPolicy
	Enforcement rgv1.Enforcement
	// Verdict is the Kafka-side verdict: the proof's, or Unknown when there
	// is no usable proof.
	Verdict rgv1.Verdict
	// ProofID is the current proof ID (empty when Proven, or when a failing
	// proof lacks one).
	ProofID string
	// Proof is the proof judged by (status or live); nil without one.
	Proof *rgv1.ProofStatus
	Live  bool
	// CheckedAt is the proof's checkedAt; zero without a proof.
	CheckedAt    metav1.Time
	Kafka        []finding
	KafkaOmitted int
	Consumer     []finding
	// Warnings are the proof's warnings (never a reason to refuse).
	Warnings []string
	// Overridden: the override annotation let the rollout through this
	// failing Deny policy.
	Overridden bool
	// OverrideRefused says why the override annotation did not cover this
	// policy (empty when it did or none was given).
	OverrideRefused string
	// AtRisk: the proof is Violated only by risks — records or offsets
	// that will be lost before the window ends if the group stays down,
	// none lost yet, or a log diverged under a commit the consumer
	// validates and rewinds from (proof.IsRisk: a restart skips nothing
	// unread), the violations the status omits counted too
	// (violationsOmittedByReason). A rollout is then the way out, or
	// harmless, not the danger: it is allowed with a warning (see atRisk).
	AtRisk bool
}

// atRisk reports whether every violation of a failing proof (Violated, or
// Unknown because an Empty group's offsets may expire) is a risk
// (proof.IsRisk): records or offsets lost, or maybe lost, before the window
// ends if the group stays down, none lost yet; or a commit with its leader
// epoch past a diverged log, which the consumer rewinds from on restart
// (CommittedEpochDiverged: it re-reads, skipping nothing). An Unknown proof with any
// other violation, or none listed (a failure to read Kafka), is no risk:
// it refuses (fail closed). Refusing a rollout then protects
// nothing — the group loses the same records whether the rollout happens
// or not, and a consumer that starts (scale from zero) or ships faster
// code is what saves them — so these violations warn at admission and
// refuse nothing; the status is Violated and the warning alerts fire all
// the same.
//
// Every violation counts, the omitted ones too: a lagging topic of many
// partitions (seed 000) has more than the 20 the status lists, and those
// left out are judged by their reasons in violationsOmittedByReason,
// counted before the list was cut (omittedRisksOnly).
func atRisk(ps *rgv1.ProofStatus) bool {
	if ps == nil || (ps.Verdict != rgv1.VerdictViolated && ps.Verdict != rgv1.VerdictUnknown) || len(ps.Violations) == 0 || !omittedRisksOnly(ps) {
		return false
	}
	for _, v := range ps.Violations {
		if !proof.IsRisk(v.Reason) {
			return false
		}
	}
	return true
}

// omittedRisksOnly reports whether every violation the status leaves out
// (violationsOmitted) is a risk, by violationsOmittedByReason. Fail
// closed: the counts must account for every omitted violation, each of a
// risk's reason; a status without them (a manager from before the field
// existed) or whose counts disagree with violationsOmitted is not only
// risks.
func omittedRisksOnly(ps *rgv1.ProofStatus) bool {
	if ps.ViolationsOmitted < 0 {
		return false
	}
	var risks int64
	for _, c := range ps.ViolationsOmittedByReason {
		if !proof.IsRisk(c.Reason) || c.Count <= 0 {
			return false
		}
		risks += int64(c.Count)
	}
	return risks == int64(ps.ViolationsOmitted)
}

func (r *policyResult) kafkaFailing() bool { return r.Verdict != rgv1.VerdictProven }
func (r *policyResult) failing() bool      { return r.kafkaFailing() || len(r.Consumer) > 0 }

// riskOnly: a Deny policy whose proof is Violated only by risks, with no
// consumer finding: warned and allowed, not refused.
func (r *policyResult) riskOnly() bool {
	return r.Enforcement == rgv1.EnforcementDeny && r.AtRisk && len(r.Consumer) == 0
}

// divergedRisk: a proof at risk (AtRisk) with a commit past a log that
// diverged below it (proof.ReasonCommittedEpochDiverged) among its
// violations, listed or omitted.
func (r *policyResult) divergedRisk() bool {
	if !r.AtRisk {
		return false
	}
	for _, f := range r.Kafka {
		if f.Reason == proof.ReasonCommittedEpochDiverged {
			return true
		}
	}
	if ps := r.Proof; ps != nil {
		for _, c := range ps.ViolationsOmittedByReason {
			if c.Reason == proof.ReasonCommittedEpochDiverged {
				return true
			}
		}
	}
	return false
}

// warnsOnly: a failing policy that lets the rollout through with a warning
// (enforcement Warn, or riskOnly).
func (r *policyResult) warnsOnly() bool {
	return r.failing() && (r.Enforcement == rgv1.EnforcementWarn || r.riskOnly())
}

// refuses: a Deny policy that fails, not only by risks, and was not
// overridden.
func (r *policyResult) refuses() bool {
	if r.riskOnly() {
		return false
	}
	return r.Enforcement == rgv1.EnforcementDeny && r.failing() && !r.Overridden
}

// decision is the answer to one rollout.
type decision struct {
	Outcome  outcome
	Policies []policyResult
	// OverrideIDs are the proof IDs the workload's annotation names.
	OverrideIDs []string
}

func (d *decision) allowed() bool { return d.Outcome != outcomeDenied }

// decide judges a rollout against its matching policies. It is pure: the
// gathering (proofs, live checks, ConfigMaps) is done by the caller.
//
//   - Each policy's Kafka verdict is its proof's; without a usable proof it
//     is Unknown, with a proof ID derived by webhookProofID.
//   - The consumer clause adds its findings when the policy has
//     spec.consumer.
//   - A failing policy refuses the rollout when its enforcement is Deny
//     (Unknown fails: fail closed); Warn and Audit never refuse. A proof
//     Violated only by risks (proof.IsRisk: a restart skips nothing
//     unread — nothing lost yet, the group cannot stay down its whole
//     window, or a consumer that rewinds from a diverged log; every
//     violation a risk, the omitted ones counted by reason before the
//     list was cut) warns instead: the rollout is the way out, or
//     harmless.
//   - The override annotation lets the rollout through only when every
//     refusing policy fails on the Kafka side alone and its current proof
//     ID is among the annotation's values.
func decide(evals []policyEval, override string) decision {
	d := decision{OverrideIDs: parseOverride(override), Policies: make([]policyResult, len(evals))}
	for i := range evals {
		d.Policies[i] = judge(&evals[i])
	}

	refusing := 0
	coverable := true
	for i := range d.Policies {
		r := &d.Policies[i]
		if !r.refuses() {
			continue
		}
		refusing++
		if len(d.OverrideIDs) == 0 {
			coverable = false
			continue
		}
		switch {
		case len(r.Consumer) > 0:
			r.OverrideRefused = "its consumer settings cannot be overridden: fix them in the pod template"
		case r.ProofID == "":
			r.OverrideRefused = "its failing proof has no proofID to override"
		case !slices.Contains(d.OverrideIDs, r.ProofID):
			r.OverrideRefused = "the annotation (" + strings.Join(d.OverrideIDs, ",") + ") is not its current proof ID " + r.ProofID
		}
		if r.OverrideRefused != "" {
			coverable = false
		}
	}
	if refusing > 0 && coverable {
		for i := range d.Policies {
			if d.Policies[i].refuses() {
				d.Policies[i].Overridden = true
			}
		}
		refusing = 0
	}

	d.Outcome = outcomeAllowed
	if refusing > 0 {
		d.Outcome = outcomeDenied
		return d
	}
	var warned, audited, overridden bool
	for i := range d.Policies {
		r := &d.Policies[i]
		switch {
		case r.Overridden:
			overridden = true
		case !r.failing():
		case r.warnsOnly():
			warned = true
		case r.Enforcement == rgv1.EnforcementAudit:
			audited = true
		}
	}
	switch {
	case overridden:
		d.Outcome = outcomeOverridden
	case warned:
		d.Outcome = outcomeWarned
	case audited:
		d.Outcome = outcomeAudited
	}
	return d
}

// judge turns one policy's gathered facts into its result.
func judge(e *policyEval) policyResult {
	p := e.Policy
	r := policyResult{Policy: p, Enforcement: p.Spec.Enforcement, Live: e.Live}
	switch r.Enforcement {
	case rgv1.EnforcementWarn, rgv1.EnforcementAudit, rgv1.EnforcementDeny:
	case "":
		r.Enforcement = rgv1.DefaultEnforcement
	default: // anything unexpected fails closed
		r.Enforcement = rgv1.EnforcementDeny
	}

	if proof := e.Proof; proof != nil {
		r.Proof = proof
		r.CheckedAt = proof.CheckedAt
		r.Verdict = proof.Verdict
		switch r.Verdict {
		case rgv1.VerdictProven, rgv1.VerdictViolated, rgv1.VerdictUnknown:
		default:
			r.Verdict = rgv1.VerdictUnknown
		}
		r.Warnings = proof.Warnings
		r.AtRisk = atRisk(proof)
		if r.Verdict != rgv1.VerdictProven {
			r.ProofID = proof.ProofID
			r.Kafka = make([]finding, 0, len(proof.Violations))
			for i := range proof.Violations {
				v := &proof.Violations[i]
				r.Kafka = append(r.Kafka, finding{Reason: v.Reason, Topic: v.Topic, Partition: v.Partition, Message: v.Message, Facts: v})
			}
			r.KafkaOmitted = int(proof.ViolationsOmitted)
			if len(r.Kafka) == 0 && r.KafkaOmitted == 0 {
				r.Kafka = append(r.Kafka, readyFinding(p, r.Verdict))
			}
		}
	} else {
		r.Verdict = rgv1.VerdictUnknown
		reason := e.NoProofReason
		if reason == "" {
			reason = ReasonProofMissing
		}
		r.ProofID = webhookProofID(p, reason)
		r.Kafka = []finding{{Reason: reason, Message: e.NoProofDetail}}
	}

	if p.Spec.Consumer != nil {
		r.Consumer = append(checkConsumer(p.Spec.Consumer, e.Consumer), checkStreamsGroup(p, e.Proof)...)
	}
	return r
}

// readyFinding stands in for a failing proof that lists no violations: the
// Ready condition's reason and message, when the status has them.
func readyFinding(p *rgv1.ConsumerRetentionPolicy, v rgv1.Verdict) finding {
	for _, c := range p.Status.Conditions {
		if c.Type == "Ready" && c.Reason != "" {
			return finding{Reason: c.Reason, Message: c.Message}
		}
	}
	return finding{Reason: string(v), Message: "the proof lists no violations; see the policy's conditions"}
}

// parseOverride splits the annotation's value on commas and spaces.
func parseOverride(v string) []string {
	if v == "" {
		return nil
	}
	return strings.FieldsFunc(v, func(r rune) bool { return r == ',' || r == ' ' || r == '\t' || r == '\n' })
}
