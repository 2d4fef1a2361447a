package webhook

import (
	"fmt"
	"strings"
	"testing"
	"time"

	rgv1 "github.com/retentionguard/retention-guard/api/v1alpha1"
)

// Admission contract, "decision" and "override", over every combination of
// enforcement, Kafka verdict, consumer clause and override annotation for
// one matching policy.
func TestDecideOnePolicyExhaustive(t *testing.T) {
	type kafka string
	const (
		kProven   kafka = "Proven"
		kViolated kafka = "Violated"
		kUnknown  kafka = "Unknown (proof says)"
		kNoProof  kafka = "no usable proof"
	)
	type override string
	const (
		oNone  override = "no annotation"
		oRight override = "current proof ID"
		oStale override = "stale proof ID"
	)
	for _, enf := range []rgv1.Enforcement{rgv1.EnforcementDeny, rgv1.EnforcementWarn, rgv1.EnforcementAudit} {
		for _, k := range []kafka{kProven, kViolated, kUnknown, kNoProof} {
			for _, consumerBad := range []bool{false, true} {
				for _, o := range []override{oNone, oRight, oStale} {
					name := fmt.Sprintf("%s/%s/consumer-bad=%v/%s", enf, k, consumerBad, o)
					t.Run(name, func(t *testing.T) {
						p := settlePolicy(withEnforcement(enf), withConsumer("settle", resetEnv, ""))
						e := policyEval{Policy: p}
						switch k {
						case kProven:
							e.Proof = proven()
						case kViolated:
							e.Proof = noCommittedOffset()
						case kUnknown:
							e.Proof = &rgv1.ProofStatus{Verdict: rgv1.VerdictUnknown, ProofID: "0badc0de",
								Violations: []rgv1.ViolationStatus{{Reason: "BrokerUnreachable", Message: "dial tcp: connection refused"}}}
						case kNoProof:
							e.NoProofReason, e.NoProofDetail = ReasonLiveCheckFailed, "stale; the live check failed"
						}
						value := "none"
						if consumerBad {
							value = "earliest"
						}
						e.Consumer = []containerEnv{{Container: "settle", OffsetReset: envValue{Declared: true, Value: value, From: "env"}}}

						current := ""
						switch k {
						case kViolated:
							current = "7f3a9c21"
						case kUnknown:
							current = "0badc0de"
						case kNoProof:
							current = webhookProofID(p, ReasonLiveCheckFailed)
						}
						annotation := ""
						switch o {
						case oRight:
							annotation = current
							if current == "" {
								annotation = "7f3a9c21" // a leftover annotation on a proven group
							}
						case oStale:
							annotation = "deadbeef"
						}

						d := decide([]policyEval{e}, annotation)

						// The rules, restated.
						failing := k != kProven || consumerBad
						want := outcomeAllowed
						switch {
						case !failing:
						case enf == rgv1.EnforcementWarn:
							want = outcomeWarned
						case enf == rgv1.EnforcementAudit:
							want = outcomeAudited
						case o == oRight && !consumerBad:
							want = outcomeOverridden
						default:
							want = outcomeDenied
						}
						if d.Outcome != want {
							t.Fatalf("outcome %s, want %s (policy result %+v)", d.Outcome, want, d.Policies[0])
						}
						r := d.Policies[0]
						if got := r.ProofID; got != current {
							t.Errorf("proof ID %q, want %q", got, current)
						}
						if k == kNoProof && (r.Verdict != rgv1.VerdictUnknown || r.Kafka[0].Reason != ReasonLiveCheckFailed) {
							t.Errorf("no usable proof: verdict %s, findings %v; want Unknown with LiveCheckFailed", r.Verdict, r.Kafka)
						}
						if want == outcomeDenied && o != oNone && r.OverrideRefused == "" {
							t.Errorf("the override was refused without saying why")
						}
						if want == outcomeDenied && o == oStale && !consumerBad && !strings.Contains(r.OverrideRefused, current) {
							t.Errorf("a stale override is refused with %q, which does not name the current ID %s", r.OverrideRefused, current)
						}
						if consumerBad && want == outcomeDenied && o != oNone && !strings.Contains(r.OverrideRefused, "cannot be overridden") {
							t.Errorf("a consumer-clause failure: override refused with %q", r.OverrideRefused)
						}
					})
				}
			}
		}
	}
}

// Several policies select one workload: one refusing policy is enough to
// deny, and an override must name every refusing policy's current ID.
func TestDecideSeveralPolicies(t *testing.T) {
	mk := func(name string, enf rgv1.Enforcement, proof *rgv1.ProofStatus) policyEval {
		p := settlePolicy(withEnforcement(enf), func(p *rgv1.ConsumerRetentionPolicy) { p.Name = name })
		return policyEval{Policy: p, Proof: proof}
	}
	violated := func(id string) *rgv1.ProofStatus {
		v := noCommittedOffset()
		v.ProofID = id
		return v
	}
	cases := []struct {
		name     string
		evals    []policyEval
		override string
		want     outcome
		refused  map[string]string // policy → substring of OverrideRefused
	}{
		{"all proven", []policyEval{mk("a", "Deny", proven()), mk("b", "Deny", proven())}, "", outcomeAllowed, nil},
		{"one of two Deny policies fails", []policyEval{mk("a", "Deny", proven()), mk("b", "Deny", violated("bbbb0001"))}, "", outcomeDenied, nil},
		{"Deny fails, Warn fails: denied", []policyEval{mk("a", "Deny", violated("aaaa0001")), mk("b", "Warn", violated("bbbb0001"))}, "", outcomeDenied, nil},
		{"Warn fails, Audit fails: warned", []policyEval{mk("a", "Audit", violated("aaaa0001")), mk("b", "Warn", violated("bbbb0001"))}, "", outcomeWarned, nil},
		{"Audit fails alone: audited", []policyEval{mk("a", "Audit", violated("aaaa0001")), mk("b", "Deny", proven())}, "", outcomeAudited, nil},
		{"override names one of two refusing policies", []policyEval{mk("a", "Deny", violated("aaaa0001")), mk("b", "Deny", violated("bbbb0001"))},
			"aaaa0001", outcomeDenied, map[string]string{"b": "current proof ID bbbb0001"}},
		{"override names both", []policyEval{mk("a", "Deny", violated("aaaa0001")), mk("b", "Deny", violated("bbbb0001"))},
			"aaaa0001, bbbb0001", outcomeOverridden, nil},
		{"override of Deny plus a failing Warn", []policyEval{mk("a", "Deny", violated("aaaa0001")), mk("b", "Warn", violated("bbbb0001"))},
			"aaaa0001", outcomeOverridden, nil},
		{"failing proof without an ID cannot be overridden", []policyEval{mk("a", "Deny", violated(""))},
			"anything", outcomeDenied, map[string]string{"a": "no proofID"}},
		{"unknown enforcement fails closed as Deny", []policyEval{mk("a", "Block", violated("aaaa0001"))}, "", outcomeDenied, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d := decide(tc.evals, tc.override)
			if d.Outcome != tc.want {
				t.Fatalf("outcome %s, want %s", d.Outcome, tc.want)
			}
			for _, r := range d.Policies {
				want, ok := tc.refused[r.Policy.Name]
				if ok != (r.OverrideRefused != "") || !strings.Contains(r.OverrideRefused, want) {
					t.Errorf("policy %s: override refused %q, want %q", r.Policy.Name, r.OverrideRefused, want)
				}
			}
		})
	}
}

// A failing proof that lists no violations still says why, from the Ready
// condition; a Proven proof's findings are empty.
func TestJudgeFindings(t *testing.T) {
	p := settlePolicy(withProof(&rgv1.ProofStatus{Verdict: rgv1.VerdictUnknown, ProofID: "abcd0123"}, time.Second))
	p.Status.Conditions = append(p.Status.Conditions, conditionReady("AuthorizationFailed", "DescribeConfigs denied for topic settle-task"))
	r := judge(&policyEval{Policy: p, Proof: p.Status.Proof})
	if len(r.Kafka) != 1 || r.Kafka[0].Reason != "AuthorizationFailed" {
		t.Errorf("findings %v, want the Ready condition's reason", r.Kafka)
	}
	r = judge(&policyEval{Policy: p, Proof: noCommittedOffset()})
	if len(r.Kafka) != 20 || r.KafkaOmitted != 4 || r.Kafka[3].subject() != "settle-task[3]" {
		t.Errorf("violations: %d listed, %d omitted, subject %q", len(r.Kafka), r.KafkaOmitted, r.Kafka[3].subject())
	}
	r = judge(&policyEval{Policy: p, Proof: proven()})
	if len(r.Kafka) != 0 || r.ProofID != "" || r.failing() {
		t.Errorf("proven: %+v", r)
	}
}

// Issue 22: a Kafka Streams group's per-topic reset policies (in its
// topology) beat auto.offset.reset, so with spec.consumer the variable
// proves nothing for it: the clause fails closed, and says to remove
// spec.consumer rather than to set none. A plain group with none passes.
func TestJudgeStreamsGroupConsumerClause(t *testing.T) {
	p := settlePolicy(withConsumer("settle", resetEnv, ""))
	env := []containerEnv{{Container: "settle", OffsetReset: envValue{Declared: true, Value: "none", From: "env"}}}

	plain := proven()
	plain.GroupProtocol = "consumer"
	if r := judge(&policyEval{Policy: p, Proof: plain, Consumer: env}); r.failing() {
		t.Fatalf("a consumer group with none: %+v", r.Consumer)
	}

	streams := proven()
	streams.GroupProtocol = "streams"
	r := judge(&policyEval{Policy: p, Proof: streams, Consumer: env})
	if len(r.Consumer) != 1 || r.Consumer[0].Reason != ReasonOffsetResetNotProvable || !r.refuses() {
		t.Fatalf("a streams group with none: findings %+v, want %s refusing", r.Consumer, ReasonOffsetResetNotProvable)
	}
	if !strings.Contains(r.Consumer[0].Message, "topology") {
		t.Errorf("message %q does not say where the resets are", r.Consumer[0].Message)
	}
	fix := consumerFix(&r)
	if !strings.Contains(fix, "remove spec.consumer") || strings.Contains(fix, "=none") {
		t.Errorf("fix %q: want remove spec.consumer, not a setting", fix)
	}
}

func TestParseOverride(t *testing.T) {
	for in, want := range map[string]string{
		"":                     "",
		"7f3a9c21":             "7f3a9c21",
		" 7f3a9c21 ":           "7f3a9c21",
		"aaaa0001,bbbb0001":    "aaaa0001|bbbb0001",
		"aaaa0001, bbbb0001,":  "aaaa0001|bbbb0001",
		"aaaa0001\nbbbb0001\n": "aaaa0001|bbbb0001",
	} {
		if got := strings.Join(parseOverride(in), "|"); got != want {
			t.Errorf("parseOverride(%q) = %q, want %q", in, got, want)
		}
	}
}
