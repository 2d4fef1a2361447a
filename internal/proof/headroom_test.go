package proof

import (
	"strings"
	"testing"
	"time"
)

// withTimestamp sets the timestamp of the record at the committed offset.
func withTimestamp(p PartitionObservation, ts time.Time) PartitionObservation {
	p.CommittedTimestamp = ts
	return p
}

func TestRecoveryHeadroom(t *testing.T) {
	cases := []struct {
		name string
		// topic's retention.ms and cleanup.policy
		retention, cleanup string
		partitions         []PartitionObservation
		allowInfinite      bool
		wantHas            bool
		want               time.Duration
		// per partition (sorted): has headroom, and how much
		wantPartitions []time.Duration // -1: none
		wantWarning    string          // substring; "" means no warning
	}{
		{
			// retention 30d; the committed record was written 2 days ago:
			// 28 days left, more than the 10-day window.
			name: "lagging partition: timestamp + retention.ms - now", retention: "2592000000", cleanup: "delete",
			partitions:     []PartitionObservation{withTimestamp(part(0, 0, 100, 40), now.Add(-2*day))},
			wantHas:        true,
			want:           28 * day,
			wantPartitions: []time.Duration{28 * day},
		},
		{
			// Seed 000 ahead of the loss: the fan-out consumer lags 25 days
			// behind on a 30-day topic. It can only survive 5 more days down.
			name: "seed000 lagging fan-out: headroom below the window warns", retention: "2592000000", cleanup: "delete",
			partitions: []PartitionObservation{
				withTimestamp(part(0, 0, 100, 40), now.Add(-2*day)),
				withTimestamp(part(1, 0, 100, 10), now.Add(-25*day)),
			},
			wantHas:        true,
			want:           5 * day,
			wantPartitions: []time.Duration{28 * day, 5 * day},
			wantWarning:    "outbox[1]: retention deletes the record at committed offset 10 in 120h (5d), sooner than recoveryWindow 240h (10d)",
		},
		{
			name: "caught-up partition has the full retention.ms, without a timestamp", retention: "2592000000", cleanup: "delete",
			partitions:     []PartitionObservation{part(0, 50, 100, 100)},
			wantHas:        true,
			want:           30 * day,
			wantPartitions: []time.Duration{30 * day},
		},
		{
			name: "unknown committed timestamp is skipped, not fabricated", retention: "2592000000", cleanup: "delete",
			partitions:     []PartitionObservation{part(0, 0, 100, 40), part(1, 0, 100, 100)},
			wantHas:        true,
			want:           30 * day,
			wantPartitions: []time.Duration{-1, 30 * day},
		},
		{
			name: "record past retention but not yet deleted: negative headroom warns", retention: "2592000000", cleanup: "delete",
			partitions:     []PartitionObservation{withTimestamp(part(0, 0, 100, 40), now.Add(-31*day))},
			wantHas:        true,
			want:           -day,
			wantPartitions: []time.Duration{-day},
			wantWarning:    "outbox[0]: the record at committed offset 40 is past retention by 24h (1d) and can be deleted at any moment",
		},
		{
			name: "expired and missing offsets have no headroom", retention: "2592000000", cleanup: "delete",
			partitions: []PartitionObservation{
				withTimestamp(part(0, 50, 100, 40), now.Add(-2*day)),
				part(1, 0, 0, NoOffset),
			},
			wantPartitions: []time.Duration{-1, -1},
		},
		{
			name: "infinite retention has no headroom", retention: "-1", cleanup: "delete", allowInfinite: true,
			partitions:     []PartitionObservation{withTimestamp(part(0, 0, 100, 40), now.Add(-2*day)), part(1, 0, 100, 100)},
			wantPartitions: []time.Duration{-1, -1},
		},
		{
			name: "compact-only retention has no headroom", retention: "3600000", cleanup: "compact",
			partitions:     []PartitionObservation{withTimestamp(part(0, 0, 100, 40), now.Add(-2*day)), part(1, 0, 100, 100)},
			wantPartitions: []time.Duration{-1, -1},
		},
		{
			name: "retention too long for time.Duration saturates instead of wrapping", retention: "9223372036854775807", cleanup: "delete",
			partitions:     []PartitionObservation{part(0, 0, 100, 100)},
			wantHas:        true,
			want:           1<<63 - 1,
			wantPartitions: []time.Duration{1<<63 - 1},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tp := topic("outbox", c.partitions...)
			tp.RetentionMs, tp.CleanupPolicy = cfg(c.retention), cfg(c.cleanup)
			p := policy("outbox")
			p.AllowInfiniteRetention = c.allowInfinite
			r := Evaluate(observation(tp), p, now)

			if r.HasRecoveryHeadroom != c.wantHas || r.RecoveryHeadroom != c.want {
				t.Errorf("recoveryHeadroom = %v (has %v), want %v (has %v)", r.RecoveryHeadroom, r.HasRecoveryHeadroom, c.want, c.wantHas)
			}
			if len(r.Partitions) != len(c.wantPartitions) {
				t.Fatalf("got %d partitions, want %d", len(r.Partitions), len(c.wantPartitions))
			}
			for i, pr := range r.Partitions {
				want := c.wantPartitions[i]
				if (want == -1) == pr.HasHeadroom || (pr.HasHeadroom && pr.Headroom != want) {
					t.Errorf("partition %d headroom = %v (has %v), want %v", pr.Partition, pr.Headroom, pr.HasHeadroom, want)
				}
			}
			w := findWarning(r, WarningRecoveryHeadroom)
			switch {
			case c.wantWarning == "" && w != nil:
				t.Errorf("unexpected warning %+v", *w)
			case c.wantWarning != "" && w == nil:
				t.Errorf("no %s warning, want %q", WarningRecoveryHeadroom, c.wantWarning)
			case w != nil && (!strings.HasPrefix(w.Message, c.wantWarning) || w.Duration != c.want):
				t.Errorf("warning = %q (%v), want prefix %q (%v)", w.Message, w.Duration, c.wantWarning, c.want)
			}
		})
	}
}

func TestGroupOffsetsExpireIn(t *testing.T) {
	// offsets.retention.minutes 20160 (14 days) covers the 10-day window:
	// only the group's state and clock decide the warning.
	const retention = 14 * day
	cases := []struct {
		name        string
		group       GroupObservation
		partitions  []PartitionObservation
		wantHas     bool
		want        time.Duration
		wantWarning string // substring; "" means no warning
	}{
		{
			// Seed 003: the batch group has been Empty for 5 days; classic
			// groups lose all offsets 14 days after becoming Empty.
			name:        "seed003 classic group Empty for 5 days: 9 days left warns",
			group:       GroupObservation{State: GroupStateEmpty, Protocol: ProtocolClassic, EmptySince: now.Add(-5 * day)},
			partitions:  []PartitionObservation{part(0, 0, 10, 10)},
			wantHas:     true,
			want:        9 * day,
			wantWarning: "group ledger-settle-consumer is Empty: its committed offsets (Empty since 2026-11-25T03:00:00Z) expire in 216h (9d)",
		},
		{
			name:       "classic group Empty for 1 day: 13 days left, no warning",
			group:      GroupObservation{State: GroupStateEmpty, Protocol: ProtocolClassic, EmptySince: now.Add(-day)},
			partitions: []PartitionObservation{part(0, 0, 10, 10)},
			wantHas:    true,
			want:       13 * day,
		},
		{
			name:        "unknown protocol is treated as classic",
			group:       GroupObservation{State: GroupStateEmpty, EmptySince: now.Add(-5 * day)},
			partitions:  []PartitionObservation{{Partition: 0, LogEnd: 10, Committed: 10, LastCommit: now.Add(-13 * day)}},
			wantHas:     true,
			want:        9 * day,
			wantWarning: "its committed offsets (Empty since",
		},
		{
			name:        "classic group Empty past offsets retention: expired",
			group:       GroupObservation{State: GroupStateEmpty, Protocol: ProtocolClassic, EmptySince: now.Add(-15 * day)},
			partitions:  []PartitionObservation{part(0, 0, 10, 10)},
			wantHas:     true,
			want:        -day,
			wantWarning: "expired or are about to",
		},
		{
			name:       "classic group Empty since an unknown time: skipped",
			group:      GroupObservation{State: GroupStateEmpty, Protocol: ProtocolClassic},
			partitions: []PartitionObservation{part(0, 0, 10, 10)},
		},
		{
			name:       "stable group: offsets do not expire",
			group:      GroupObservation{State: GroupStateStable, Protocol: ProtocolClassic, EmptySince: now.Add(-5 * day)},
			partitions: []PartitionObservation{part(0, 0, 10, 10)},
		},
		{
			// KIP-848: each offset expires 14 days after its own last
			// commit; the group's EmptySince does not matter.
			name:  "KIP-848 group: the earliest last commit decides",
			group: GroupObservation{State: GroupStateEmpty, Protocol: ProtocolConsumer, EmptySince: now.Add(-day)},
			partitions: []PartitionObservation{
				{Partition: 0, LogEnd: 10, Committed: 10, LastCommit: now.Add(-2 * day)},
				{Partition: 1, LogEnd: 10, Committed: 10, LastCommit: now.Add(-6 * day)},
				{Partition: 2, LogEnd: 10, Committed: 10}, // last commit unknown: skipped
				{Partition: 3, LogEnd: 10, Committed: NoOffset, LastCommit: now.Add(-20 * day)},
			},
			wantHas:     true,
			want:        8 * day,
			wantWarning: "the committed offset of outbox[1] (last committed 2026-11-24T03:00:00Z) expires in 192h (8d)",
		},
		{
			name:       "KIP-848 group without any known last commit: skipped",
			group:      GroupObservation{State: GroupStateEmpty, Protocol: ProtocolConsumer, EmptySince: now.Add(-13 * day)},
			partitions: []PartitionObservation{part(0, 0, 10, 10)},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			o := observation(topic("outbox", c.partitions...))
			o.OffsetsRetentionMinutes = minutes(retention)
			c.group.ID = "ledger-settle-consumer"
			o.Group = c.group
			r := Evaluate(o, policy("outbox"), now)

			if r.HasGroupOffsetsExpireIn != c.wantHas || r.GroupOffsetsExpireIn != c.want {
				t.Errorf("groupOffsetsExpireIn = %v (has %v), want %v (has %v)", r.GroupOffsetsExpireIn, r.HasGroupOffsetsExpireIn, c.want, c.wantHas)
			}
			w := findWarning(r, WarningGroupOffsetsExpireIn)
			switch {
			case c.wantWarning == "" && w != nil:
				t.Errorf("unexpected warning %+v", *w)
			case c.wantWarning != "" && w == nil:
				t.Errorf("no %s warning, want %q", WarningGroupOffsetsExpireIn, c.wantWarning)
			case w != nil && (!strings.Contains(w.Message, c.wantWarning) || w.Duration != c.want):
				t.Errorf("warning = %q (%v), want it to contain %q (%v)", w.Message, w.Duration, c.wantWarning, c.want)
			}
			// A warning never decides the verdict on its own.
			if r.Verdict != Proven {
				t.Errorf("verdict = %s, want Proven: warnings never deny", r.Verdict)
			}
		})
	}
}

func TestGroupOffsetsExpireInNeedsReadableOffsetsRetention(t *testing.T) {
	o := observation(topic("outbox", part(0, 0, 10, 10)))
	o.OffsetsRetentionMinutes = cfg("a week")
	o.Group = GroupObservation{State: GroupStateEmpty, EmptySince: now.Add(-5 * day)}
	r := Evaluate(o, policy("outbox"), now)
	if r.HasGroupOffsetsExpireIn || findWarning(r, WarningGroupOffsetsExpireIn) != nil {
		t.Errorf("groupOffsetsExpireIn computed from an unreadable offsets.retention.minutes: %+v", r)
	}
}

func findWarning(r Result, typ string) *Warning {
	for i := range r.Warnings {
		if r.Warnings[i].Type == typ {
			return &r.Warnings[i]
		}
	}
	return nil
}
