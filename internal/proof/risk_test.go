package proof

import (
	"testing"
	"time"
)

// Ready's reason is what the RetentionGuardPolicyViolated alert reads
// (retentionguard_policy_info{reason}) to leave risk-only proofs to their
// warning alerts: seed 000 before the loss (a lagging group whose oldest
// unread record expires before the window ends) and seed 003 before the
// loss (an Empty group whose offsets expire first). So Ready may name a
// risk only when every violation is one: a loss (seed 000 after the loss,
// CommittedOffsetExpired) or any other failing fact beside a risk must win,
// whatever its clause or its name's alphabetical rank.
func TestReadyNamesARiskOnlyWhenEveryViolationIsOne(t *testing.T) {
	// lagging: the record at offset 400 was written 25 days ago under 30
	// days of retention: down for its 10-day window, the group loses it.
	lagging := func(p int32) PartitionObservation {
		pr := part(p, 0, 1000, 400)
		pr.CommittedTimestamp = now.Add(-25 * day)
		return pr
	}
	emptyFor := func(d time.Duration) GroupObservation {
		return GroupObservation{ID: "ledger-settle-consumer", State: GroupStateEmpty, Protocol: ProtocolClassic,
			ProtocolType: ProtocolTypeConsumer, EmptySince: now.Add(-d), EmptySinceExact: true}
	}
	cases := []struct {
		name string
		obs  func() Observation
		want string
	}{
		{
			name: "seed000 before the loss: headroom below the window only",
			obs:  func() Observation { return observation(topic("outbox", lagging(0))) },
			want: ReasonRecoveryHeadroomShorterThanWindow,
		},
		{
			// Offsets retention 30 days, Empty for 25: 5 days left.
			name: "seed003 before the loss: an Empty group's offsets expire before the window",
			obs: func() Observation {
				o := observation(topic("outbox", part(0, 0, 10, 10)))
				o.Group = emptyFor(25 * day)
				return o
			},
			want: ReasonEmptyGroupOffsetsExpireBeforeWindow,
		},
		{
			name: "seed000 after the loss on one partition, headroom below the window on another",
			obs: func() Observation {
				return observation(topic("outbox", lagging(0), part(1, 500, 1000, 100)))
			},
			want: ReasonCommittedOffsetExpired,
		},
		{
			// Same clause (RetentionCoversWindow), and the risk's name
			// sorts first: the short retention still decides.
			name: "headroom below the window on outbox, retention shorter than the window on settle-task",
			obs: func() Observation {
				short := topic("settle-task", part(0, 0, 10, 10))
				short.RetentionMs = millis(3 * day)
				return observation(topic("outbox", lagging(0)), short)
			},
			want: ReasonRetentionShorterThanWindow,
		},
		{
			// The risk's clause (RetentionCoversWindow) comes first: the
			// later clause's offsets retention still decides.
			name: "headroom below the window, offsets retention shorter than the window",
			obs: func() Observation {
				o := observation(topic("outbox", lagging(0)))
				o.OffsetsRetentionMinutes = minutes(7 * day)
				return o
			},
			want: ReasonOffsetsRetentionShorterThanWindow,
		},
		{
			name: "both risks",
			obs: func() Observation {
				o := observation(topic("outbox", lagging(0)))
				o.Group = emptyFor(25 * day)
				return o
			},
			want: ReasonRecoveryHeadroomShorterThanWindow,
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			o := c.obs()
			var topics []string
			for _, tp := range o.Topics {
				topics = append(topics, tp.Name)
			}
			r := Evaluate(o, policy(topics...), now)
			if r.Verdict != Violated {
				t.Fatalf("verdict %s, want Violated; violations %+v", r.Verdict, r.Violations)
			}
			ready := conditionOf(t, r, ClauseReady)
			if ready.Status != ConditionFalse || ready.Reason != c.want {
				t.Errorf("Ready = %s/%s (%s), want False/%s", ready.Status, ready.Reason, ready.Message, c.want)
			}
			onlyRisks := true
			for _, v := range r.Violations {
				onlyRisks = onlyRisks && IsRisk(v.Reason)
			}
			if IsRisk(ready.Reason) != onlyRisks {
				t.Errorf("Ready's reason %s is a risk: %v, every violation is a risk: %v (%+v)",
					ready.Reason, IsRisk(ready.Reason), onlyRisks, r.Violations)
			}
		})
	}
}
