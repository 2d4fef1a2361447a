package proof

import (
	"slices"
	"strings"
	"testing"
)

// A commit that expires per commit and nothing dates: the message says
// what is true of the offsets before it — none left (the committed offset
// is the log start), or one left whose timestamp was not read (a caught-up
// group on a transactional topic, the read around the offset failing or
// returning nothing for it) — never "no record is left" while records are.
// Simple groups (seed 001's kind: commits without joining).
func TestUndatedCommitSaysWhatIsLeft(t *testing.T) {
	simple := GroupObservation{ID: "ledger-settle-consumer", State: GroupStateEmpty, Protocol: ProtocolClassic}
	for _, tc := range []struct {
		name     string
		p        PartitionObservation
		facts    []string
		notFacts []string
	}{
		{name: "committed at the log start: none left",
			p:        part(0, 400, 500, 400),
			facts:    []string{"no record before it is left"},
			notFacts: []string{"offset 399"}},
		{name: "caught up, the record before not dated",
			p:        part(0, 0, 500, 500),
			facts:    []string{"offset 499", "log start 0", "is in the log but was not dated"},
			notFacts: []string{"no record before it is left"}},
		{name: "lagging, the Fetch denied",
			p: func() PartitionObservation {
				p := part(0, 10, 500, 400)
				p.TimestampUnread = TimestampReadDenied
				return p
			}(),
			facts:    []string{"offset 399", "log start 10", "Fetch denied"},
			notFacts: []string{"no record before it is left"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := observation(topic("clicks", tc.p))
			o.Group = simple
			r := Evaluate(o, policy("clicks"), now)
			i := slices.IndexFunc(r.Violations, func(v Violation) bool { return v.Reason == ReasonOffsetsMayExpireBeforeWindow })
			if i < 0 {
				t.Fatalf("violations %+v, want %s", r.Violations, ReasonOffsetsMayExpireBeforeWindow)
			}
			msg := r.Violations[i].Message
			for _, f := range tc.facts {
				if !strings.Contains(msg, f) {
					t.Errorf("message %q does not say %q", msg, f)
				}
			}
			for _, f := range tc.notFacts {
				if strings.Contains(msg, f) {
					t.Errorf("message %q says %q", msg, f)
				}
			}
		})
	}
}
