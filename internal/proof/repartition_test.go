package proof

import (
	"slices"
	"strings"
	"testing"
)

// Kafka Streams repartition topics have retention.ms -1 and are purged by
// their application below its own commits (DeleteRecords,
// TaskManager.maybePurgeCommittedRecords). For the application's own group
// (group ID = application.id) that is no misconfiguration and no loss; for
// another group reading the topic, -1 keeps nothing it has not read, so
// allowInfiniteRetention does not make it safe. Seed 000's shape: one
// application, its own group, and a second reader.
func TestStreamsRepartitionTopics(t *testing.T) {
	const app = "orders-app"
	const repartition = app + "-KSTREAM-AGGREGATE-STATE-STORE-0000000003-repartition"
	infinite := func(name string) TopicObservation {
		to := topic(name, part(0, 40, 100, 60)) // the application purged below 40
		to.RetentionMs = cfg("-1")
		return to
	}
	for _, tc := range []struct {
		name          string
		group, topic  string
		allowInfinite bool
		violated      bool
		facts         []string
	}{
		{name: "the application's own group: allowed without allowInfiniteRetention", group: app, topic: repartition},
		{name: "another group, allowInfiniteRetention: not safe", group: "audit", topic: repartition, allowInfinite: true, violated: true,
			facts: []string{"Kafka Streams repartition topic of another application", "DeleteRecords", "allowInfiniteRetention does not apply"}},
		{name: "another group without allowInfiniteRetention", group: "audit", topic: repartition, violated: true,
			facts: []string{"Kafka Streams repartition topic"}},
		{name: "an ordinary topic with -1: not allowed", group: app, topic: "orders", violated: true,
			facts: []string{"(infinite)", "allowInfiniteRetention"}},
		{name: "an ordinary topic with -1, allowInfiniteRetention", group: app, topic: "orders", allowInfinite: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := observation(infinite(tc.topic))
			o.Group.ID = tc.group
			pol := policy(tc.topic)
			pol.GroupID, pol.AllowInfiniteRetention = tc.group, tc.allowInfinite
			r := Evaluate(o, pol, now)
			i := slices.IndexFunc(r.Violations, func(v Violation) bool { return v.Reason == ReasonInfiniteRetentionNotAllowed })
			if (i >= 0) != tc.violated {
				t.Fatalf("InfiniteRetentionNotAllowed: %v, want %v (violations %+v)", i >= 0, tc.violated, r.Violations)
			}
			if !tc.violated {
				if c := conditionOf(t, r, ClauseRetentionCoversWindow); c.Status != ConditionTrue {
					t.Errorf("RetentionCoversWindow = %s/%s (%s), want it to hold", c.Status, c.Reason, c.Message)
				}
				return
			}
			for _, f := range tc.facts {
				if !strings.Contains(r.Violations[i].Message, f) {
					t.Errorf("message %q does not say %q", r.Violations[i].Message, f)
				}
			}
		})
	}
}
