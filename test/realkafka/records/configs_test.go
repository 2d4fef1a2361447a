package records

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
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
		createTopic(t, c, topic, 1, nil)
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
		createTopic(t, c, topic, 1, nil)
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

// createTopicOn creates topic with partition i's only replica on
// brokers[i], so each partition is led by a broker the test chose.
func createTopicOn(t *testing.T, c *kafkatest.Cluster, topic string, brokers []int32, configs map[string]string) {
	t.Helper()
	ctx, cancel := contextFor(30 * time.Second)
	defer cancel()
	req := kmsg.NewPtrCreateTopicsRequest()
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = topic, -1, -1
	for i, b := range brokers {
		ra := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
		ra.Partition, ra.Replicas = int32(i), []int32{b}
		rt.ReplicaAssignment = append(rt.ReplicaAssignment, ra)
	}
	for k, v := range configs {
		cfg := kmsg.NewCreateTopicsRequestTopicConfig()
		cfg.Name, cfg.Value = k, kmsg.StringPtr(v)
		rt.Configs = append(rt.Configs, cfg)
	}
	req.Topics = append(req.Topics, rt)
	req.TimeoutMillis = 30000
	resp, err := req.RequestWith(ctx, c.Client(t))
	if err == nil {
		err = kerr.ErrorForCode(resp.Topics[0].ErrorCode)
	}
	if err != nil {
		t.Fatalf("creating %s on brokers %v: %v", topic, brokers, err)
	}
	waitFor(t, 60*time.Second, topic+" has leaders", func() bool {
		md, err := c.Admin(t).Metadata(ctx, topic)
		if err != nil {
			return false
		}
		ps := md.Topics[topic].Partitions
		if len(ps) != len(brokers) {
			return false
		}
		for i, b := range brokers {
			if ps[int32(i)].Leader != b {
				return false
			}
		}
		return true
	})
}

// Each partition leader deletes by its own broker's log.retention.*:
// records stamped 100 minutes back are deleted by the broker keeping 90
// minutes and kept by those keeping 2 and 3 hours — why the observer
// judges an inherited retention.ms by the strictest broker.
func TestEachLeaderDeletesByItsOwnBrokerDefault(t *testing.T) {
	t.Parallel()
	eachLine(t, func(t *testing.T, d apachekafka.Dist) {
		_, c := disagreeingCluster(t, d)
		const topic, control = "perleader-orders", "perleader-control"
		leaders := []int32{1, 2, 3}
		createTopicOn(t, c, topic, leaders, map[string]string{"segment.ms": "60000"})
		// The control topic's records (4 h old) go on every broker: once
		// all are gone, each broker has run a retention pass over the
		// other topic's records too.
		createTopicOn(t, c, control, leaders, map[string]string{"segment.ms": "60000"})
		now := time.Now()
		var recs []*kgo.Record
		for p := range int32(3) {
			for _, r := range []struct {
				topic string
				age   time.Duration
			}{{topic, 100 * time.Minute}, {control, 4 * time.Hour}} {
				for range 3 {
					recs = append(recs, &kgo.Record{Topic: r.topic, Partition: p, Timestamp: now.Add(-r.age), Value: []byte("old")})
				}
			}
		}
		c.ProduceRecords(t, recs...)
		recs = recs[:0]
		for p := range int32(3) {
			for _, tp := range []string{topic, control} {
				recs = append(recs, &kgo.Record{Topic: tp, Partition: p, Timestamp: now, Value: []byte("fresh")}) // rolls
			}
		}
		c.ProduceRecords(t, recs...)
		waitFor(t, 90*time.Second, "every broker deletes its control partition", func() bool {
			for p := range int32(3) {
				if start, _ := offsets(t, c, control, p); start != 3 {
					return false
				}
			}
			return true
		})
		for p, want := range []int64{0, 3, 0} { // led by brokers 1 (2 h), 2 (90 min), 3 (3 h)
			if start, _ := offsets(t, c, topic, int32(p)); start != want {
				t.Errorf("Apache Kafka %s: %s/%d led by broker %d: log start %d, want %d", d.Version, topic, p, leaders[p], start, want)
			}
		}
		obs := observe(t, observer(t), conn(c), kafka.Target{Group: "perleader-billing", Topics: []string{topic}})
		requireNoFailures(t, obs)
		if got := topicObs(t, obs, topic).RetentionMs; !is(got, "5400000") {
			t.Errorf("observed retention.ms %+v, want 5400000: the broker that deletes soonest", got)
		}
	})
}
