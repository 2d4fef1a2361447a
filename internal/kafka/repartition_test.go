package kafka

import (
	"slices"
	"testing"
	"time"

	"github.com/retentionguard/retention-guard/internal/kafka/kafkatest"
	"github.com/retentionguard/retention-guard/internal/proof"
)

// A Kafka Streams repartition topic (retention.ms -1) purged by its
// application below its own commits, as TaskManager
// .maybePurgeCommittedRecords does with DeleteRecords: the application's
// group (group ID = application.id) loses nothing and is proven without
// allowInfiniteRetention; another group reading the topic is not proven,
// even with it (the purge follows the application's commits, not its own).
func TestStreamsRepartitionTopicObserved(t *testing.T) {
	t.Parallel()
	const app, other = "orders-app", "audit"
	const topic = app + "-KSTREAM-AGGREGATE-STATE-STORE-0000000003-repartition"
	c := kafkatest.NewCluster(t, kafkatest.WithBrokerConfigs(map[string]string{configRebalanceProtocols: "classic"}))
	c.CreateTopic(t, topic, 1, map[string]string{"retention.ms": "-1"})
	c.Produce(t, topic, 20)
	c.RunConsumer(t, app, topic, map[int32]int64{0: 15}) // the application runs, committed at 15
	c.Commit(t, other, topic, 0, 5)
	c.DeleteRecords(t, topic, 0, 15) // the application's purge, below its commit

	o, _ := newTestObserver(t)
	for _, tc := range []struct {
		group         string
		allowInfinite bool
		want          proof.Verdict
		reasons       []string
	}{
		{group: app, want: proof.Proven},
		{group: other, allowInfinite: true, want: proof.Violated,
			reasons: []string{proof.ReasonInfiniteRetentionNotAllowed, proof.ReasonCommittedOffsetExpired}},
	} {
		obs := observe(t, o, Connection{BootstrapServers: c.Addrs}, Target{Group: tc.group, Topics: []string{topic}})[0]
		requireNoFailures(t, obs)
		pol := proof.Policy{GroupID: tc.group, Topics: []string{topic}, RecoveryWindow: 24 * time.Hour, AllowInfiniteRetention: tc.allowInfinite}
		r := proof.Evaluate(obs, pol, obs.ObservedAt)
		var got []string
		for _, v := range r.Violations {
			got = append(got, v.Reason)
		}
		if r.Verdict != tc.want {
			t.Errorf("%s: verdict %s (%v), want %s", tc.group, r.Verdict, got, tc.want)
		}
		for _, want := range tc.reasons {
			if !slices.Contains(got, want) {
				t.Errorf("%s: violations %v, want %s", tc.group, got, want)
			}
		}
	}
}
