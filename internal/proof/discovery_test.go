package proof

import (
	"reflect"
	"testing"
	"time"
)

func TestJudgeGroupWithoutTopics(t *testing.T) {
	now := time.Date(2026, 11, 30, 3, 0, 0, 0, time.UTC)
	j := JudgeGroup(Observation{ObservedAt: now, Group: GroupObservation{ID: "fresh", State: "Stable"}}, nil,
		DiscoveryPolicy{RecoveryWindow: 168 * time.Hour}, now)
	if j.Verdict != Unknown || j.Reason != ReasonGroupTopicsUnknown || j.Result != nil {
		t.Errorf("an offset-less group: %+v, want Unknown %s", j, ReasonGroupTopicsUnknown)
	}
	denied := JudgeGroup(Observation{ObservedAt: now, Group: GroupObservation{ID: "g"},
		Failures: []Failure{{Reason: ReasonAuthorizationFailed, API: APIOffsetFetch, Partition: -1}}}, nil,
		DiscoveryPolicy{RecoveryWindow: time.Hour}, now)
	if denied.Verdict != Unknown || denied.Reason != ReasonAuthorizationFailed {
		t.Errorf("a group whose offsets were denied: %+v, want Unknown AuthorizationFailed", denied)
	}
}

func TestJudgeGroupLeadsWithLoss(t *testing.T) {
	now := time.Date(2026, 11, 30, 3, 0, 0, 0, time.UTC)
	week := 7 * 24 * time.Hour
	obs := Observation{
		ObservedAt:              now,
		OffsetsRetentionMinutes: ConfigValue{Present: true, Value: "1440"}, // 1 day: shorter than the window
		Group:                   GroupObservation{ID: "settle", State: GroupStateStable, Protocol: ProtocolClassic, ProtocolType: ProtocolTypeConsumer, SubscriptionKnown: true, Subscribed: []string{"settle-task"}},
		Topics: []TopicObservation{{
			Name:           "settle-task",
			RetentionMs:    ConfigValue{Present: true, Value: "2592000000"},
			RetentionBytes: ConfigValue{Present: true, Value: "-1"},
			CleanupPolicy:  ConfigValue{Present: true, Value: "delete"},
			Partitions:     []PartitionObservation{{Partition: 0, LogStart: 100, LogEnd: 200, Committed: 40}},
		}},
	}
	j := JudgeGroup(obs, []string{"settle-task"}, DiscoveryPolicy{RecoveryWindow: week}, now)
	if j.Verdict != Violated || j.Reason != ReasonCommittedOffsetExpired || j.ExpiredRecords != 60 {
		t.Fatalf("judgement %+v: want Violated, CommittedOffsetExpired first, 60 expired records", j)
	}
	if want := []string{ReasonCommittedOffsetExpired, ReasonOffsetsRetentionShorterThanWindow}; !reflect.DeepEqual(j.Reasons, want) {
		t.Errorf("reasons %v, want %v", j.Reasons, want)
	}
}

func TestSortWorstFirst(t *testing.T) {
	js := []Judgement{
		{Group: "proven-b", Verdict: Proven, RecoveryHeadroom: time.Hour, HasHeadroom: true},
		{Group: "unknown", Verdict: Unknown},
		{Group: "proven-a", Verdict: Proven, RecoveryHeadroom: 2 * time.Hour, HasHeadroom: true},
		{Group: "violated-small", Verdict: Violated, ExpiredRecords: 5},
		{Group: "proven-no-headroom", Verdict: Proven},
		{Group: "violated-big", Verdict: Violated, ExpiredRecords: 4654259},
		{Group: "violated-risk-short", Verdict: Violated, RecoveryHeadroom: time.Minute, HasHeadroom: true},
		{Group: "violated-risk-long", Verdict: Violated, RecoveryHeadroom: time.Hour, HasHeadroom: true},
	}
	SortWorstFirst(js)
	var got []string
	for _, j := range js {
		got = append(got, j.Group)
	}
	want := []string{"violated-big", "violated-small", "violated-risk-short", "violated-risk-long", "unknown",
		"proven-b", "proven-a", "proven-no-headroom"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("order %v\nwant  %v", got, want)
	}
}
