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
			// No record headroom; the lagging partition's tombstone
			// headroom (a day of delete.retention.ms from a record written
			// 2 days ago, less the producer's hour: TestTombstoneHeadroom)
			// is the recovery headroom.
			name: "compact-only retention has no record headroom", retention: "3600000", cleanup: "compact",
			partitions:     []PartitionObservation{withTimestamp(part(0, 0, 100, 40), now.Add(-2*day)), part(1, 0, 100, 100)},
			wantHas:        true,
			want:           -day - time.Hour,
			wantPartitions: []time.Duration{-1, -1},
			wantWarning:    "outbox[0]: the log cleaner may already have dropped a tombstone at or after committed offset 40",
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
			// The absolute time the headroom runs out (the metrics' and
			// alerts' series): the committed record's timestamp plus
			// retention.ms, which is the proof's time plus the headroom.
			var wantAt time.Time
			if c.wantHas {
				wantAt = now.Add(c.want)
			}
			if !r.RecoveryHeadroomExpiresAt.Equal(wantAt) {
				t.Errorf("recoveryHeadroomExpiresAt = %v, want %v", r.RecoveryHeadroomExpiresAt, wantAt)
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

// Classic groups with a protocol type lose every offset
// offsets.retention.minutes after they became Empty (KIP-211): the
// groupOffsetsExpireIn warning says how long is left when that is sooner
// than the window. It never denies on its own.
func TestGroupOffsetsExpireIn(t *testing.T) {
	// offsets.retention.minutes 20160 (14 days) covers the 10-day window:
	// only the group's state and clock decide the warning.
	const retention = 14 * day
	classic := func(state string, emptySince time.Time, exact bool) GroupObservation {
		return GroupObservation{State: state, Protocol: ProtocolClassic, ProtocolType: ProtocolTypeConsumer,
			EmptySince: emptySince, EmptySinceExact: exact}
	}
	// witnessed: the manager saw the group in another state at since and
	// Empty one check later, at by.
	witnessed := func(since, by time.Time) GroupObservation {
		g := classic(GroupStateEmpty, since, false)
		g.EmptyBy = by
		return g
	}
	cases := []struct {
		name        string
		group       GroupObservation
		wantHas     bool
		want        time.Duration
		wantExact   bool
		wantWarning string // substring; "" means no warning
		// wantReason is GroupOffsetsRetained's reason when it fails; ""
		// means Proven.
		wantReason string
	}{
		{
			// Seed 003: the batch group has been Empty for 5 days; the
			// manager saw it Stable then and Empty a minute later.
			name:        "seed003 classic group Empty for 5 days, seen going Empty: 9 days left, Violated",
			group:       witnessed(now.Add(-5*day), now.Add(-5*day+time.Minute)),
			wantHas:     true,
			want:        9 * day,
			wantWarning: "group ledger-settle-consumer is Empty since between 2026-11-25T03:00:00Z and 2026-11-25T03:01:00Z: its committed offsets may expire in 216h (9d)",
			wantReason:  ReasonEmptyGroupOffsetsExpireBeforeWindow,
		},
		{
			// Only a lower bound: the group went Empty after that, and
			// its offsets expire 14 days after it did: 9 days from now or
			// later, maybe after the window. The proof cannot tell.
			name:        "classic group Empty since after a time only: Unknown, may expire",
			group:       classic(GroupStateEmpty, now.Add(-5*day), false),
			wantHas:     true,
			want:        9 * day,
			wantWarning: "group ledger-settle-consumer is Empty since after 2026-11-25T03:00:00Z: its committed offsets may expire in 216h (9d)",
			wantReason:  ReasonEmptyGroupOffsetsMayExpireBeforeWindow,
		},
		{
			name:        "exact Empty time read from __consumer_offsets",
			group:       classic(GroupStateEmpty, now.Add(-5*day), true),
			wantHas:     true,
			want:        9 * day,
			wantExact:   true,
			wantWarning: "is Empty since 2026-11-25T03:00:00Z: its committed offsets expire in 216h (9d)",
			wantReason:  ReasonEmptyGroupOffsetsExpireBeforeWindow,
		},
		{
			name:    "classic group Empty for 1 day: 13 days left, no warning",
			group:   classic(GroupStateEmpty, now.Add(-day), false),
			wantHas: true,
			want:    13 * day,
		},
		{
			// After an 8-day outage someone reset the offsets of the Empty
			// group: Kafka measures them from when the group became Empty,
			// not from the reset, and deletes them at the next cleanup.
			name:        "seed003 classic group Empty past offsets retention: offsets reset since still go",
			group:       witnessed(now.Add(-15*day), now.Add(-15*day+time.Minute)),
			wantHas:     true,
			want:        -day,
			wantWarning: "go at the coordinator's next cleanup, offsets committed since included: start the consumer now",
			wantReason:  ReasonEmptyGroupOffsetsExpireBeforeWindow,
		},
		{
			// The broker-in-the-loop oracle's false Proven (seed 12 trial
			// 47, seed 11 trial 170): a one-shot check of a group Empty
			// since a time it cannot know. Kafka deletes its offsets
			// offsets.retention.minutes after it became Empty, which may
			// be any moment: it read Proven, and the consumer skipped
			// every record since.
			name:       "classic group Empty since an unknown time: Unknown, may expire any moment",
			group:      classic(GroupStateEmpty, time.Time{}, false),
			wantReason: ReasonEmptyGroupOffsetsMayExpireBeforeWindow,
		},
		{
			name:  "stable group: no clock runs",
			group: classic(GroupStateStable, now.Add(-5*day), false),
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			o := observation(topic("outbox", part(0, 0, 10, 10)))
			o.OffsetsRetentionMinutes = minutes(retention)
			c.group.ID = "ledger-settle-consumer"
			o.Group = c.group
			r := Evaluate(o, policy("outbox"), now)

			if r.HasGroupOffsetsExpireIn != c.wantHas || r.GroupOffsetsExpireIn != c.want {
				t.Errorf("groupOffsetsExpireIn = %v (has %v), want %v (has %v)", r.GroupOffsetsExpireIn, r.HasGroupOffsetsExpireIn, c.want, c.wantHas)
			}
			if e := r.OffsetExpiry; e.Clock != ExpiryClockGroupEmpty || e.HasSoonest != c.wantHas || e.Exact != c.wantExact || e.Partition != -1 {
				t.Errorf("offset expiry = %+v, want clock GroupEmpty, soonest %v, exact %v", e, c.wantHas, c.wantExact)
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
			// Issue 22 item 6: the verdict and Ready's words agree with the
			// warning. Offsets that expire before now + window mean the
			// group cannot be down for its window from now: Violated;
			// offsets that may expire then cannot be proven: Unknown.
			// Either is a risk: nothing is lost yet.
			wantVerdict := Proven
			switch c.wantReason {
			case ReasonEmptyGroupOffsetsExpireBeforeWindow:
				wantVerdict = Violated
			case ReasonEmptyGroupOffsetsMayExpireBeforeWindow:
				wantVerdict = Unknown
			}
			if c.wantReason != "" {
				if v := conditionOf(t, r, ClauseGroupOffsetsRetained); v.Reason != c.wantReason {
					t.Errorf("GroupOffsetsRetained = %+v, want %s", v, c.wantReason)
				}
				if !IsRisk(c.wantReason) {
					t.Errorf("%s is not a risk: admission would refuse the start that saves the offsets", c.wantReason)
				}
			}
			if r.Verdict != wantVerdict {
				t.Errorf("verdict = %s, want %s", r.Verdict, wantVerdict)
			}
		})
	}
}

func TestGroupOffsetsExpireInNeedsReadableOffsetsRetention(t *testing.T) {
	o := observation(topic("outbox", part(0, 0, 10, 10)))
	o.OffsetsRetentionMinutes = cfg("a week")
	o.Group = GroupObservation{State: GroupStateEmpty, Protocol: ProtocolClassic, ProtocolType: ProtocolTypeConsumer, EmptySince: now.Add(-5 * day)}
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
