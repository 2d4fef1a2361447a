package proof

import (
	"testing"
	"time"
)

// TestViolationsCarryWhenTheyExpire: a violation about an expiry says when
// as data (Violation.ExpiresAt), the same time its message writes, so that
// status, alerts and the webhook read it without parsing the sentence.
func TestViolationsCarryWhenTheyExpire(t *testing.T) {
	const retention = 7 * day
	const window3d = 72 * time.Hour
	simple := GroupObservation{State: GroupStateEmpty, Protocol: ProtocolClassic}
	cases := []struct {
		name   string
		group  GroupObservation
		part   PartitionObservation
		reason string
		// want is the violation's ExpiresAt; zero: none.
		want time.Time
	}{
		{
			name:  "an exact commit 6 days ago expires a day from now",
			group: simple,
			part: func() PartitionObservation {
				p := part(0, 0, 500, 400)
				p.LastCommit = now.Add(-6 * day)
				return p
			}(),
			reason: ReasonOffsetsExpireBeforeWindow,
			want:   now.Add(day),
		},
		{
			name:  "a commit bounded by a record 6 days old expires at the earliest the bound plus retention",
			group: simple,
			part: func() PartitionObservation {
				p := part(0, 0, 500, 400)
				p.PrecedingTimestamp = now.Add(-6 * day)
				return p
			}(),
			reason: ReasonOffsetsMayExpireBeforeWindow,
			// The producer may be an hour ahead (message.timestamp.after.max.ms).
			want: now.Add(day - time.Hour),
		},
		{
			name:   "an undated commit has no expiry time",
			group:  simple,
			part:   part(0, 0, 500, 400),
			reason: ReasonOffsetsMayExpireBeforeWindow,
		},
		{
			name:  "an explicit retention time is the expiry",
			group: GroupObservation{State: GroupStateStable, Protocol: ProtocolClassic, ProtocolType: ProtocolTypeConsumer},
			part: func() PartitionObservation {
				p := part(0, 0, 500, 400)
				p.LastCommit = now.Add(-time.Hour)
				p.ExpireAt = now.Add(2 * day)
				return p
			}(),
			reason: ReasonExplicitOffsetExpiryBeforeWindow,
			want:   now.Add(2 * day),
		},
		{
			name: "an Empty classic group's offsets expire retention after it became Empty",
			group: GroupObservation{State: GroupStateEmpty, Protocol: ProtocolClassic, ProtocolType: ProtocolTypeConsumer,
				EmptySince: now.Add(-5 * day), EmptySinceExact: true},
			part:   part(0, 0, 500, 400),
			reason: ReasonEmptyGroupOffsetsExpireBeforeWindow,
			want:   now.Add(2 * day),
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			obs := observation(topic("clicks", tc.part))
			obs.OffsetsRetentionMinutes = minutes(retention)
			tc.group.ID = "g"
			obs.Group = tc.group
			p := policy("clicks")
			p.RecoveryWindow = window3d
			res := Evaluate(obs, p, now)
			v := findViolation(t, res, tc.reason)
			if !v.ExpiresAt.Equal(tc.want) {
				t.Fatalf("ExpiresAt = %v, want %v (message %q)", v.ExpiresAt, tc.want, v.Message)
			}
		})
	}
}

// TestHeadroomViolationCarriesWhenTheRecordIsDeleted: the record at the
// committed offset is deleted at its timestamp plus retention.ms, whatever
// the moment of the check.
func TestHeadroomViolationCarriesWhenTheRecordIsDeleted(t *testing.T) {
	p0 := part(0, 0, 500, 400)
	p0.CommittedTimestamp = now.Add(-25 * day) // 30-day retention: deleted in 5 days, inside the 10-day window
	obs := observation(topic("clicks", p0))
	for _, at := range []time.Time{now, now.Add(time.Hour)} {
		obs.ObservedAt = at
		v := findViolation(t, Evaluate(obs, policy("clicks"), at), ReasonRecoveryHeadroomShorterThanWindow)
		if want := now.Add(5 * day); !v.ExpiresAt.Equal(want) {
			t.Fatalf("at %v: ExpiresAt = %v, want %v", at, v.ExpiresAt, want)
		}
	}
}

// TestOffsetViolationsHaveNoExpiry: a violation about offsets out of range
// is not about an expiry.
func TestOffsetViolationsHaveNoExpiry(t *testing.T) {
	v := findViolation(t, Evaluate(observation(topic("clicks", part(0, 150, 500, 100))), policy("clicks"), now), ReasonCommittedOffsetExpired)
	if !v.ExpiresAt.IsZero() || v.ExpiredRecords != 50 || v.Committed != 100 || v.LogStart != 150 {
		t.Fatalf("violation %+v", v)
	}
}

func findViolation(t *testing.T, res Result, reason string) Violation {
	t.Helper()
	for _, v := range res.Violations {
		if v.Reason == reason {
			return v
		}
	}
	t.Fatalf("no %s violation in %+v", reason, res.Violations)
	return Violation{}
}
