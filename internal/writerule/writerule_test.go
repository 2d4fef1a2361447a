package writerule

import (
	"testing"
	"time"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	rgv1 "github.com/retentionguard/retention-guard/api/v1alpha1"
	"github.com/retentionguard/retention-guard/internal/proof"
)

var checked = time.Date(2026, 11, 30, 3, 0, 0, 0, time.UTC)

var lease = &rgv1.HeartbeatReference{Namespace: "retention-guard", Name: "retention-guard-heartbeat-5d0c8f3e2a10"}

func dur(d time.Duration) *metav1.Duration { return &metav1.Duration{Duration: d} }

// proven is generation 1's proof of a healthy group checked at, with a
// recovery headroom and the heartbeat Lease named.
func proven(at time.Time, headroom time.Duration) rgv1.ConsumerRetentionPolicyStatus {
	return rgv1.ConsumerRetentionPolicyStatus{
		ObservedGeneration: 1,
		Conditions: []metav1.Condition{{Type: proof.ClauseReady, Status: metav1.ConditionTrue, Reason: proof.ReasonProven,
			ObservedGeneration: 1, LastTransitionTime: metav1.NewTime(checked), Message: "proven"}},
		Heartbeat: lease,
		Proof: &rgv1.ProofStatus{Verdict: rgv1.VerdictProven, CheckedAt: metav1.NewTime(at),
			RecoveryHeadroom: dur(headroom), PartitionSummary: rgv1.PartitionSummary{Total: 2, InRange: 2}},
	}
}

// stalled is a spec problem's status at generation gen, checked at.
func stalled(gen int64, at time.Time) rgv1.ConsumerRetentionPolicyStatus {
	msg := `Secret "kafka-user" has no key "password"`
	return rgv1.ConsumerRetentionPolicyStatus{
		ObservedGeneration: gen,
		Conditions: []metav1.Condition{
			{Type: proof.ClauseReady, Status: metav1.ConditionFalse, Reason: "SecretKeyMissing", ObservedGeneration: gen,
				LastTransitionTime: metav1.NewTime(checked), Message: msg},
			{Type: conditionStalled, Status: metav1.ConditionTrue, Reason: "SecretKeyMissing", ObservedGeneration: gen,
				LastTransitionTime: metav1.NewTime(checked), Message: msg},
		},
		Proof: &rgv1.ProofStatus{Verdict: rgv1.VerdictUnknown, CheckedAt: metav1.NewTime(at),
			Violations: []rgv1.ViolationStatus{{Reason: "SecretKeyMissing", Message: msg}}},
	}
}

// with returns st changed by fn (st is not modified).
func with(st rgv1.ConsumerRetentionPolicyStatus, fn func(*rgv1.ConsumerRetentionPolicyStatus)) rgv1.ConsumerRetentionPolicyStatus {
	c := *st.DeepCopy()
	fn(&c)
	return c
}

// pendingOf is the pending status computed from cur for generation gen
// (Reconciling, Ready Unknown; the proof and observedGeneration kept).
func pendingOf(cur rgv1.ConsumerRetentionPolicyStatus, gen int64) rgv1.ConsumerRetentionPolicyStatus {
	return with(cur, func(st *rgv1.ConsumerRetentionPolicyStatus) {
		st.Conditions = []metav1.Condition{
			{Type: "Reconciling", Status: metav1.ConditionTrue, Reason: "ProofPending", ObservedGeneration: gen},
			{Type: proof.ClauseReady, Status: metav1.ConditionUnknown, Reason: "ProofPending", ObservedGeneration: gen},
		}
	})
}

// offsetsExpireIn is a check a minute after the one that found an Empty
// group's offsets to expire in was, finding them to expire in next.
func offsetsExpireIn(was, next time.Duration) Input {
	at := func(t time.Time, in time.Duration) rgv1.ConsumerRetentionPolicyStatus {
		return with(proven(t, 7*24*time.Hour), func(st *rgv1.ConsumerRetentionPolicyStatus) { st.Proof.GroupOffsetsExpireIn = dur(in) })
	}
	return Input{Current: at(checked, was), Computed: at(checked.Add(time.Minute), next), Learned: Observed, Generation: 1, Interval: time.Minute}
}

// Write or keep: one row per mechanism that decides whether a policy's
// status is written, each naming the seed scenario it protects. A status
// kept is one the webhook takes as fresh only through its heartbeat Lease
// (internal/freshness), so every "keep" row of a fresh observation names
// one.
func TestWriteOrKeep(t *testing.T) {
	minute := checked.Add(time.Minute)
	week := 7*24*time.Hour - time.Hour
	cases := []struct {
		name, seed string
		in         Input
		write      bool
		reason     Reason
	}{{
		name:  "a first proof: no proof in status yet",
		seed:  "000: fan-out installed across a fleet; its first proof is its first write",
		in:    Input{Computed: proven(checked, week), Learned: Observed, Generation: 1, Interval: time.Minute},
		write: true, reason: ReasonNewVerdict,
	}, {
		name: "a new verdict: Proven, then Violated",
		seed: "000: the stopped fan-out's committed offset falls below log start",
		in: Input{Current: proven(checked, week), Computed: with(proven(minute, week), func(st *rgv1.ConsumerRetentionPolicyStatus) {
			st.Proof.Verdict = rgv1.VerdictViolated
			st.Conditions[0].Status, st.Conditions[0].Reason = metav1.ConditionFalse, proof.ReasonCommittedOffsetExpired
		}), Learned: Observed, Generation: 1, Interval: time.Minute},
		write: true, reason: ReasonNewVerdict,
	}, {
		name: "the same facts, the headroom within 1%: 6d23h, then a minute less",
		seed: "000: the stopped fan-out's headroom shrinks by an interval each check",
		in: Input{Current: proven(checked, week), Computed: proven(minute, week-time.Minute),
			Learned: Observed, Generation: 1, Interval: time.Minute},
		reason: ReasonSameFacts,
	}, {
		name: "the headroom beyond 1%: 100h, then 98h",
		seed: "000: the stopped fan-out's headroom, two hours on",
		in: Input{Current: proven(checked, 100*time.Hour), Computed: proven(checked.Add(2*time.Hour), 98*time.Hour),
			Learned: Observed, Generation: 1, Interval: time.Minute},
		write: true, reason: ReasonFactsChanged,
	}, {
		name:   "the time left within a minute: 10m, then 9m",
		seed:   "003: the Empty settlement group's offsets expire in ten minutes",
		in:     offsetsExpireIn(10*time.Minute, 9*time.Minute),
		reason: ReasonSameFacts,
	}, {
		name:  "the time left beyond a minute: 10m, then 8m",
		seed:  "003: the Empty settlement group's offsets expire sooner than the last status said",
		in:    offsetsExpireIn(10*time.Minute, 8*time.Minute),
		write: true, reason: ReasonFactsChanged,
	}, {
		name:   "past due by as much: -100h, then -99h",
		seed:   "003: the settlement group's offsets are long past their expiry",
		in:     offsetsExpireIn(-100*time.Hour, -99*time.Hour),
		reason: ReasonSameFacts,
	}, {
		name: "a new warning fact: a consumer the selector misses",
		seed: "000: a second consumer of the group deployed beside the guarded one",
		in: Input{Current: proven(checked, week), Computed: with(proven(minute, week), func(st *rgv1.ConsumerRetentionPolicyStatus) {
			st.Proof.WarningFacts = []rgv1.WarningFact{{Type: "consumerWorkload", Reason: "NotSelected", Subject: "Deployment shop/fraud-scorer"}}
		}), Learned: Observed, Generation: 1, Interval: time.Minute},
		write: true, reason: ReasonFactsChanged,
	}, {
		name: "a requested re-check answered",
		seed: "002: after the crash between the DB commit and the offset commit, a person asks for a re-check",
		in: Input{Current: proven(checked, week), Computed: with(proven(minute, week), func(st *rgv1.ConsumerRetentionPolicyStatus) {
			st.LastHandledRequestedAt = "2026-11-30T03:00:30Z"
		}), Learned: Observed, Generation: 1, Interval: time.Minute},
		write: true, reason: ReasonFactsChanged,
	}, {
		name: "another heartbeat Lease named (another interval)",
		seed: "000: the fan-out's checkInterval changed; the webhook must read the new Lease",
		in: Input{Current: proven(checked, week), Computed: with(proven(minute, week), func(st *rgv1.ConsumerRetentionPolicyStatus) {
			st.Heartbeat = &rgv1.HeartbeatReference{Namespace: "retention-guard", Name: "retention-guard-heartbeat-other"}
		}), Learned: Observed, Generation: 1, Interval: time.Minute},
		write: true, reason: ReasonFactsChanged,
	}, {
		name: "no heartbeat Lease: the same facts are written every check",
		seed: "000: without a Lease only checkedAt keeps the fan-out's proof fresh for the webhook",
		in: Input{Current: with(proven(checked, week), func(st *rgv1.ConsumerRetentionPolicyStatus) { st.Heartbeat = nil }),
			Computed: with(proven(minute, week), func(st *rgv1.ConsumerRetentionPolicyStatus) { st.Heartbeat = nil }),
			Learned:  Observed, Generation: 1, Interval: time.Minute},
		write: true, reason: ReasonNoHeartbeat,
	}, {
		name: "the forced refresh not yet due: 59m on a 1m interval",
		seed: "000: the fan-out's unchanged proof, confirmed by its Lease",
		in: Input{Current: proven(checked, week), Computed: proven(checked.Add(59*time.Minute), week),
			Learned: Observed, Generation: 1, Interval: time.Minute},
		reason: ReasonSameFacts,
	}, {
		name: "the forced refresh due: 1h on a 1m interval (max(1h, 10 intervals))",
		seed: "000: the Proof Age column of the fan-out's unchanged proof stays true",
		in: Input{Current: proven(checked, week), Computed: proven(checked.Add(time.Hour), week),
			Learned: Observed, Generation: 1, Interval: time.Minute},
		write: true, reason: ReasonRefreshDue,
	}, {
		name: "the forced refresh not yet due: 9h59m on a 1h interval",
		seed: "003: the daily settlement group checked hourly",
		in: Input{Current: proven(checked, week), Computed: proven(checked.Add(9*time.Hour+59*time.Minute), week),
			Learned: Observed, Generation: 1, Interval: time.Hour},
		reason: ReasonSameFacts,
	}, {
		name: "the forced refresh due: 10h on a 1h interval",
		seed: "003: the daily settlement group checked hourly",
		in: Input{Current: proven(checked, week), Computed: proven(checked.Add(10*time.Hour), week),
			Learned: Observed, Generation: 1, Interval: time.Hour},
		write: true, reason: ReasonRefreshDue,
	}, {
		name:  "a spec problem: written",
		seed:  "000: the fan-out's credentials Secret lost its key",
		in:    Input{Current: proven(checked, week), Computed: stalled(1, minute), Learned: SpecProblem, Generation: 1, Interval: time.Minute},
		write: true, reason: ReasonNewSpecProblem,
	}, {
		name: "the same spec problem decided again: kept, checkedAt included",
		seed: "000: the Secret is still missing its key ten minutes later",
		in: Input{Current: stalled(1, checked), Computed: stalled(1, checked.Add(10*time.Minute)),
			Learned: SpecProblem, Generation: 1, Interval: time.Minute},
		reason: ReasonSameSpecProblem,
	}, {
		name: "the same spec problem at a new generation: written with the last checkedAt",
		seed: "000: the policy edited while its Secret is still missing its key",
		in: Input{Current: stalled(1, checked), Computed: stalled(2, checked.Add(10*time.Minute)),
			Learned: SpecProblem, Generation: 2, Interval: time.Minute},
		write: true, reason: ReasonNewSpecProblem,
	}, {
		name: "a periodic check pending: the proof of this generation stands",
		seed: "000: the fan-out's next pass is on its way",
		in: Input{Current: proven(checked, week), Computed: pendingOf(proven(checked, week), 1),
			Learned: Pending, Generation: 1, Interval: time.Minute},
		reason: ReasonProofStands,
	}, {
		name:   "a first proof pending, held",
		seed:   "000: a fleet of fan-out policies applied at once; the proof comes within the grace",
		in:     Input{Computed: pendingOf(rgv1.ConsumerRetentionPolicyStatus{}, 1), Learned: Pending, Generation: 1, Interval: time.Minute, Held: true},
		reason: ReasonPendingHeld,
	}, {
		name:  "a first proof pending, the grace over: the pending status owed",
		seed:  "000: a broker that accepts connections and never answers; Argo CD must see Reconciling",
		in:    Input{Computed: pendingOf(rgv1.ConsumerRetentionPolicyStatus{}, 1), Learned: Pending, Generation: 1, Interval: time.Minute},
		write: true, reason: ReasonPendingOwed,
	}, {
		name: "a new generation pending: owed",
		seed: "000: the fan-out's policy edited; its old proof no longer answers",
		in: Input{Current: proven(checked, week), Computed: pendingOf(proven(checked, week), 2),
			Learned: Pending, Generation: 2, Interval: time.Minute},
		write: true, reason: ReasonPendingOwed,
	}, {
		name: "a spec problem just fixed, pending: owed (Stalled goes)",
		seed: "000: the Secret's key restored",
		in: Input{Current: stalled(1, checked), Computed: pendingOf(stalled(1, checked), 1),
			Learned: Pending, Generation: 1, Interval: time.Minute},
		write: true, reason: ReasonPendingOwed,
	}}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Logf("seed %s", c.seed)
			cur, computed := *c.in.Current.DeepCopy(), *c.in.Computed.DeepCopy()
			st, d := Decide(c.in)
			if d.Write != c.write || d.Reason != c.reason {
				t.Fatalf("Decide = write %v (%s), want write %v (%s)", d.Write, d.Reason, c.write, c.reason)
			}
			if !apiequality.Semantic.DeepEqual(c.in.Current, cur) || !apiequality.Semantic.DeepEqual(c.in.Computed, computed) {
				t.Fatal("Decide modified its input")
			}
			switch {
			case !d.Write:
				if !apiequality.Semantic.DeepEqual(st, cur) {
					t.Errorf("kept, but the status differs from the current one: %+v", st)
				}
			case c.in.Learned == SpecProblem && cur.Proof != nil && cur.Proof.Verdict == computed.Proof.Verdict:
				// A spec problem decided again at a new generation keeps
				// the last checkedAt: only the generation changed.
				if !st.Proof.CheckedAt.Equal(&cur.Proof.CheckedAt) {
					t.Errorf("checkedAt %s, want the kept %s", st.Proof.CheckedAt, cur.Proof.CheckedAt)
				}
				if st.ObservedGeneration != computed.ObservedGeneration {
					t.Errorf("observedGeneration %d, want %d", st.ObservedGeneration, computed.ObservedGeneration)
				}
			default:
				if !apiequality.Semantic.DeepEqual(st, computed) {
					t.Errorf("written, but not the computed status: %+v", st)
				}
			}
		})
	}
}

// The constants of the rule, as the docs state them.
func TestRuleConstants(t *testing.T) {
	for interval, want := range map[time.Duration]time.Duration{
		10 * time.Second: time.Hour, time.Minute: time.Hour, 6 * time.Minute: time.Hour, time.Hour: 10 * time.Hour,
	} {
		if got := RefreshEvery(interval); got != want {
			t.Errorf("RefreshEvery(%s) = %s, want %s", interval, got, want)
		}
	}
	for d, want := range map[time.Duration]time.Duration{
		10 * time.Minute: time.Minute, 100 * time.Hour: time.Hour, -100 * time.Hour: time.Hour, 0: time.Minute,
	} {
		if got := Tolerance(d); got != want {
			t.Errorf("Tolerance(%s) = %s, want %s", d, got, want)
		}
	}
}
