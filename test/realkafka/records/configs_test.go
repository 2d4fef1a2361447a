package records

import (
	"strconv"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/retentionguard/retention-guard/internal/kafka"
	"github.com/retentionguard/retention-guard/internal/kafka/apachekafka"
	"github.com/retentionguard/retention-guard/internal/kafka/kafkatest"
)

// The three-node cluster whose brokers disagree, as one mid-way through a
// rolling change of server.properties: each sets its topics' default
// retention in another unit, and offsets.retention.minutes differs.
// __consumer_offsets has three partitions, so groups are coordinated by
// different brokers (discovery_test.go).
func disagreeingCluster(t *testing.T, d apachekafka.Dist) (*apachekafka.Broker, *kafkatest.Cluster) {
	return sharedCluster(t, d, "disagreeing", apachekafka.WithNodes(3),
		apachekafka.WithBrokerConfig("offsets.topic.num.partitions", "3"),
		apachekafka.WithNodeConfig(1, "log.retention.ms", "7200000"),       // 2 h
		apachekafka.WithNodeConfig(1, "offsets.retention.minutes", "1440"), // 1 day
		apachekafka.WithNodeConfig(2, "log.retention.minutes", "90"),       // 1.5 h: the strictest
		apachekafka.WithNodeConfig(2, "offsets.retention.minutes", "60"),   // the smallest
		apachekafka.WithNodeConfig(3, "log.retention.hours", "3"),          // 3 h; offsets: the default 7 days
	)
}

// A topic without its own retention.ms reports, on each broker, what that
// broker derives from its own log.retention.ms, else .minutes, else .hours
// (KafkaConfig.logRetentionTimeMillis); the observer asks every broker and
// judges by the strictest, saying where it comes from.
func TestInheritedRetentionIsEachBrokersOwn(t *testing.T) {
	t.Parallel()
	eachLine(t, func(t *testing.T, d apachekafka.Dist) {
		_, c := disagreeingCluster(t, d)
		const topic, group = "inherit-orders", "inherit-billing"
		c.CreateTopic(t, topic, 1, nil)
		c.ProduceTo(t, topic, 0, 3)
		c.Commit(t, group, topic, 0, 1)

		want := map[int32]string{1: "7200000", 2: "5400000", 3: "10800000"}
		for id, ms := range want {
			rc := describeConfigsOn(t, c, id, kmsg.ConfigResourceTypeTopic, topic)["retention.ms"]
			if rc.Value == nil || *rc.Value != ms {
				t.Errorf("Apache Kafka %s broker %d answers the topic's retention.ms %v (source %v), want %s", d.Version, id, rc.Value, rc.Source, ms)
			}
		}

		obs := observe(t, observer(t), conn(c), kafka.Target{Group: group, Topics: []string{topic}})
		requireNoFailures(t, obs)
		got := topicObs(t, obs, topic).RetentionMs
		if !is(got, "5400000") || !strings.Contains(got.Source, "log.retention.minutes") || !strings.Contains(got.Source, "strictest of 3 brokers") {
			t.Errorf("observed retention.ms %+v; want 5400000 from broker 2's log.retention.minutes, the strictest of 3", got)
		}
	})
}

// DescribeConfigs of the broker resource "" answers only the cluster-wide
// dynamic defaults; by a broker's ID it answers that broker's effective
// values, static and built-in defaults included. The observer asks each
// broker by ID for offsets.retention.minutes and the smallest governs.
func TestOffsetsRetentionPerBrokerSmallestGoverns(t *testing.T) {
	t.Parallel()
	eachLine(t, func(t *testing.T, d apachekafka.Dist) {
		b, c := disagreeingCluster(t, d)
		const topic, group = "perbroker-orders", "perbroker-billing"
		c.CreateTopic(t, topic, 1, nil)
		c.ProduceTo(t, topic, 0, 3)
		c.Commit(t, group, topic, 0, 1)

		def := describeConfigsOn(t, c, 1, kmsg.ConfigResourceTypeBroker, "")
		if rc, ok := def["offsets.retention.minutes"]; ok {
			t.Errorf("Apache Kafka %s answers %q for the default resource %q: the cluster default holds no static value", d.Version, *rc.Value, "")
		}
		want := map[int32]string{1: "1440", 2: "60", 3: "10080"}
		for id, m := range want {
			rc, ok := describeConfigsOn(t, c, id, kmsg.ConfigResourceTypeBroker, itoa(id))["offsets.retention.minutes"]
			if !ok || rc.Value == nil || *rc.Value != m {
				t.Errorf("Apache Kafka %s broker %d answers offsets.retention.minutes %v by its ID, want %s", d.Version, id, rc.Value, m)
			}
		}

		co := observeCluster(t, observer(t), conn(c), kafka.ClusterRequest{Targets: []kafka.Target{{Group: group, Topics: []string{topic}}}})
		requireNoFailures(t, co.Observations[0])
		if len(co.Brokers) != len(b.Nodes) {
			t.Fatalf("brokers %v, want %d", co.Brokers, len(b.Nodes))
		}
		for id, m := range want {
			if !is(co.BrokerOffsetsRetention[id], m) {
				t.Errorf("broker %d: observed offsets.retention.minutes %+v, want %s", id, co.BrokerOffsetsRetention[id], m)
			}
		}
		if !is(co.OffsetsRetentionMinutes, "60") || !is(co.Observations[0].OffsetsRetentionMinutes, "60") {
			t.Errorf("offsets.retention.minutes %+v / %+v, want the smallest, 60", co.OffsetsRetentionMinutes, co.Observations[0].OffsetsRetentionMinutes)
		}

	})
}

func itoa(n int32) string { return strconv.Itoa(int(n)) }
