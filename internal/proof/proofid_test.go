package proof

import (
	"encoding/hex"
	"testing"
	"time"
)

// gap is seed 000's gap: outbox[3] committed 1200 below log start 5400.
func gap() (Observation, Policy) {
	o := observation(topic("outbox",
		withTimestamp(part(0, 0, 900, 850), now.Add(-day)),
		part(3, 5400, 9000, 1200),
	))
	return o, policy("outbox")
}

func TestProofIDIsStableForTheSameGap(t *testing.T) {
	o, p := gap()
	base := Evaluate(o, p, now)
	if len(base.ProofID) != 8 {
		t.Fatalf("proofID %q: want 8 hex digits", base.ProofID)
	}
	if _, err := hex.DecodeString(base.ProofID); err != nil {
		t.Fatalf("proofID %q is not hex: %v", base.ProofID, err)
	}

	// Things that move on every check without changing the gap.
	moves := map[string]func(o *Observation) time.Time{
		"later check":                 func(o *Observation) time.Time { return now.Add(7 * time.Hour) },
		"log end moved":               func(o *Observation) time.Time { o.Topics[0].Partitions[1].LogEnd = 12000; return now },
		"in-range partition consumed": func(o *Observation) time.Time { o.Topics[0].Partitions[0].Committed = 900; return now },
		"committed timestamp known": func(o *Observation) time.Time {
			o.Topics[0].Partitions[1].CommittedTimestamp = now.Add(-40 * day)
			return now
		},
		"observed at": func(o *Observation) time.Time { o.ObservedAt = now.Add(time.Minute); return now },
		"group went Empty": func(o *Observation) time.Time {
			o.Group.State, o.Group.EmptySince = GroupStateEmpty, now.Add(-time.Hour)
			return now
		},
	}
	for name, move := range moves {
		o, p := gap()
		at := move(&o)
		if got := Evaluate(o, p, at).ProofID; got != base.ProofID {
			t.Errorf("%s: proofID %s, want %s (same gap)", name, got, base.ProofID)
		}
	}
}

func TestProofIDChangesWithTheGap(t *testing.T) {
	o, p := gap()
	base := Evaluate(o, p, now).ProofID
	changes := map[string]func(o *Observation, p *Policy){
		"committed offset":   func(o *Observation, p *Policy) { o.Topics[0].Partitions[1].Committed = 1300 },
		"log start advanced": func(o *Observation, p *Policy) { o.Topics[0].Partitions[1].LogStart = 6000 },
		"another partition":  func(o *Observation, p *Policy) { o.Topics[0].Partitions[1].Partition = 4 },
		"another topic": func(o *Observation, p *Policy) {
			o.Topics[0].Name = "outbox-v2"
			p.Topics = []string{"outbox-v2"}
		},
		"another policy": func(o *Observation, p *Policy) { p.UID = "another-uid" },
		"another reason": func(o *Observation, p *Policy) { o.Topics[0].Partitions[1].Committed = NoOffset },
		"a second gap": func(o *Observation, p *Policy) {
			o.Topics[0].Partitions = append(o.Topics[0].Partitions, part(5, 100, 200, 50))
		},
		"retention shortened too": func(o *Observation, p *Policy) { o.Topics[0].RetentionMs = millis(time.Hour) },
	}
	seen := map[string]string{base: "base"}
	for name, change := range changes {
		o, p := gap()
		change(&o, &p)
		got := Evaluate(o, p, now).ProofID
		if got == "" {
			t.Errorf("%s: empty proofID for a violated proof", name)
		}
		if prev, dup := seen[got]; dup {
			t.Errorf("%s: proofID %s equals that of %s", name, got, prev)
		}
		seen[got] = name
	}
}

func TestProofIDIgnoresInputOrder(t *testing.T) {
	o := observation(
		topic("a", part(0, 100, 200, 50), part(1, 100, 200, NoOffset)),
		topic("b", part(0, 0, 10, 20)),
	)
	o.Failures = []Failure{
		{Reason: ReasonAuthorizationFailed, API: "DescribeGroups", Partition: -1},
		{Reason: ReasonBrokerUnreachable, API: "DescribeConfigs", Partition: -1},
	}
	want := Evaluate(o, policy("a", "b"), now).ProofID

	o.Topics[0], o.Topics[1] = o.Topics[1], o.Topics[0]
	ps := o.Topics[1].Partitions
	ps[0], ps[1] = ps[1], ps[0]
	o.Failures[0], o.Failures[1] = o.Failures[1], o.Failures[0]
	if got := Evaluate(o, policy("b", "a"), now).ProofID; got != want {
		t.Errorf("proofID %s after reordering, want %s", got, want)
	}
}

func TestProofIDEmptyWhenProven(t *testing.T) {
	r := Evaluate(observation(topic("outbox", part(0, 0, 10, 10))), policy("outbox"), now)
	if r.Verdict != Proven || r.ProofID != "" {
		t.Errorf("verdict %s, proofID %q: want Proven and empty", r.Verdict, r.ProofID)
	}
}

func TestProofIDNotEmptyWhenUnknown(t *testing.T) {
	o := observation(topic("outbox", part(0, 0, 10, 10)))
	o.Failures = []Failure{{Reason: ReasonBrokerUnreachable, Partition: -1}}
	r := Evaluate(o, policy("outbox"), now)
	if r.Verdict != Unknown || len(r.ProofID) != 8 {
		t.Errorf("verdict %s, proofID %q: want Unknown with an ID", r.Verdict, r.ProofID)
	}
}
