package proof

import (
	"slices"
	"strings"
	"testing"
	"time"
)

// The exact times read from __consumer_offsets are the coordinator's clock,
// which expires offsets by it; the guard compares them with its own. An
// expiry within the coordinator's possible lead (the lead measured from a
// record stamped ahead of the guard's clock, plus CoordinatorClockAllowance)
// of the window's end is before it. Seed 003 (an Empty classic group, its
// Empty time exact) and simple groups (per commit, exact) at the boundary.
func TestCoordinatorClockSkew(t *testing.T) {
	const retention = 7 * day
	const w = 3 * day
	simple := GroupObservation{ID: "ledger-settle-consumer", State: GroupStateEmpty, Protocol: ProtocolClassic}
	empty := GroupObservation{ID: "ledger-settle-consumer", State: GroupStateEmpty, Protocol: ProtocolClassic, ProtocolType: ProtocolTypeConsumer}
	// expiringIn is a partition whose exact last commit expires d after
	// the window's end (by the times read).
	expiringIn := func(d time.Duration) PartitionObservation {
		p := part(0, 0, 500, 400)
		p.LastCommit = now.Add(w + d - retention)
		return p
	}
	cases := []struct {
		name    string
		group   GroupObservation
		p       PartitionObservation
		ahead   time.Duration
		reason  string // "" when the clause holds
		facts   []string
		notWith string
	}{
		{name: "2s after the window's end, no lead measured: within the allowance's reach no more",
			group: simple, p: expiringIn(2 * time.Second)},
		{name: "500ms after the window's end: within the 1s allowance",
			group: simple, p: expiringIn(500 * time.Millisecond), reason: ReasonOffsetsExpireBeforeWindow,
			facts: []string{"500ms after it", FormatDuration(CoordinatorClockAllowance) + " allowed for the coordinator's clock"}},
		{name: "2s after the window's end, the coordinator seen 5s ahead",
			group: simple, p: expiringIn(2 * time.Second), ahead: 5 * time.Second, reason: ReasonOffsetsExpireBeforeWindow,
			facts: []string{"2s after it", FormatDuration(5*time.Second+CoordinatorClockAllowance) + " allowed"}},
		{name: "10s after the window's end, the coordinator seen 5s ahead",
			group: simple, p: expiringIn(10 * time.Second), ahead: 5 * time.Second,
			facts: []string{"allowing 6s for the coordinators' clock, seen 5s ahead"}},
		{name: "1h before the window's end: no allowance words",
			group: simple, p: expiringIn(-time.Hour), reason: ReasonOffsetsExpireBeforeWindow, notWith: "allowed for the coordinator"},
		{name: "Empty (exact) 500ms after the window's end",
			group: func() GroupObservation {
				g := empty
				g.EmptySince, g.EmptySinceExact = now.Add(w+500*time.Millisecond-retention), true
				return g
			}(), p: part(0, 0, 500, 400), reason: ReasonEmptyGroupOffsetsExpireBeforeWindow,
			facts: []string{"500ms after it", "allowed for the coordinator's clock"}},
		{name: "Empty (exact) 2s after the window's end",
			group: func() GroupObservation {
				g := empty
				g.EmptySince, g.EmptySinceExact = now.Add(w+2*time.Second-retention), true
				return g
			}(), p: part(0, 0, 500, 400)},
		{name: "explicit expiry 500ms after the window's end",
			group: empty, p: func() PartitionObservation {
				p := part(0, 0, 500, 400)
				p.LastCommit, p.ExpireAt = now.Add(-time.Hour), now.Add(w+500*time.Millisecond)
				return p
			}(), reason: ReasonExplicitOffsetExpiryBeforeWindow, facts: []string{"500ms after it"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			o := observation(topic("clicks", tc.p))
			o.OffsetsRetentionMinutes = minutes(retention)
			o.Group = tc.group
			if o.Group.State == GroupStateEmpty && o.Group.ProtocolType != "" && o.Group.EmptySince.IsZero() {
				// Empty for a day, exactly: its own clock is far off.
				o.Group.EmptySince, o.Group.EmptySinceExact = now.Add(-day), true
			}
			o.OffsetsTopic = OffsetsTopicRead{Requested: true, CoordinatorAhead: tc.ahead}
			pol := policy("clicks")
			pol.RecoveryWindow = w
			r := Evaluate(o, pol, now)
			c := conditionOf(t, r, ClauseGroupOffsetsRetained)
			var text string
			if tc.reason == "" {
				if c.Status != ConditionTrue {
					t.Fatalf("GroupOffsetsRetained = %s/%s (%s), want it to hold", c.Status, c.Reason, c.Message)
				}
				text = c.Message
			} else {
				i := slices.IndexFunc(r.Violations, func(v Violation) bool { return v.Reason == tc.reason })
				if i < 0 {
					t.Fatalf("violations %+v (condition %s/%s: %s), want %s", r.Violations, c.Status, c.Reason, c.Message, tc.reason)
				}
				text = r.Violations[i].Message
			}
			for _, f := range tc.facts {
				if !strings.Contains(text, f) {
					t.Errorf("message %q does not say %q", text, f)
				}
			}
			if tc.notWith != "" && strings.Contains(text, tc.notWith) {
				t.Errorf("message %q says %q", text, tc.notWith)
			}
		})
	}
}

func TestCoordinatorSkew(t *testing.T) {
	for _, tc := range []struct {
		ahead, want time.Duration
	}{
		{0, CoordinatorClockAllowance},
		{-time.Minute, CoordinatorClockAllowance}, // behind: nothing to allow for beyond the allowance
		{90 * time.Second, 90*time.Second + CoordinatorClockAllowance},
	} {
		if got := CoordinatorSkew(OffsetsTopicRead{Requested: true, CoordinatorAhead: tc.ahead}); got != tc.want {
			t.Errorf("CoordinatorSkew(ahead %v) = %v, want %v", tc.ahead, got, tc.want)
		}
	}
}
