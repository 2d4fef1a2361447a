package groups

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/retentionguard/retention-guard/internal/kafka"
	"github.com/retentionguard/retention-guard/internal/kafka/apachekafka"
	"github.com/retentionguard/retention-guard/internal/proof"
)

// Whether the brokers may convert a classic group to a consumer group
// (KIP-848 migration; its offsets then expire per commit) is what the
// broker does with a ConsumerGroupHeartbeat: 4.x serves it only with the
// finalized group.version at 1 (KafkaApis.isConsumerGroupProtocolEnabled,
// GroupVersion.isConsumerRebalanceProtocolSupported) and
// group.coordinator.rebalance.protocols naming consumer; 3.9 knows no
// group.version and goes by the config alone. The observer reads the
// feature from ApiVersions: on a 4.x broker formatted with group.version=0
// the config still names consumer (its default), yet the broker refuses the
// consumer protocol, and MigrationPossible must say so (it read the config
// alone before, and said true). Seed 003: an Empty classic group, whose
// offsets expire from Empty unless the brokers may convert it.
func TestGroupVersionDecidesMigration(t *testing.T) {
	t.Parallel()
	var vs []variant
	for _, v := range variants(t) {
		vs = append(vs, v)
		if v.Dist.AtLeast(4, 0) {
			vs = append(vs, variant{Name: v.Dist.Line() + "-gv0", Dist: v.Dist,
				opts: []apachekafka.Option{apachekafka.WithFeature("group.version=0")}})
		}
	}
	for _, v := range vs {
		t.Run(v.Name, func(t *testing.T) {
			t.Parallel()
			e := setup(t, v)
			const topic, group = "gv-orders", "gv-batch"
			e.createTopic(t, topic, 1)
			e.Produce(t, topic, 5)
			e.CommitAsMember(t, group, topic, map[int32]int64{0: 5})

			// The broker's own answers: its features and its config.
			av := req[*kmsg.ApiVersionsResponse](t, e.Client(t), kmsg.NewPtrApiVersionsRequest())
			knows := slices.ContainsFunc(av.SupportedFeatures, func(f kmsg.ApiVersionsResponseSupportedFeature) bool { return f.Name == "group.version" })
			var level int16
			for _, f := range av.FinalizedFeatures {
				if f.Name == "group.version" {
					level = f.MaxVersionLevel
				}
			}
			if knows != v.Dist.AtLeast(4, 0) {
				t.Fatalf("%s lists group.version among its supported features: %v, want %v (4.0+)", v.Name, knows, v.Dist.AtLeast(4, 0))
			}
			protocols := brokerConfig(t, e, "group.coordinator.rebalance.protocols")
			accepted, why := consumerProtocolServed(t, e)
			t.Logf("%s: group.version supported %v, finalized %d; group.coordinator.rebalance.protocols=%q; ConsumerGroupHeartbeat: %s",
				v.Name, knows, level, protocols, why)
			if strings.HasSuffix(v.Name, "-gv0") {
				if level != 0 || !strings.Contains(protocols, "consumer") || accepted {
					t.Fatalf("group.version=0: finalized %d, config %q, heartbeat %s; want level 0, consumer in the config, refused", level, protocols, why)
				}
			}

			o := newObserver(t)
			obs := observeOne(t, o, e.conn(reader), kafka.Target{Group: group, Topics: []string{topic}})
			if obs.Group.Protocol != proof.ProtocolClassic || obs.Group.ProtocolType != proof.ProtocolTypeConsumer {
				t.Fatalf("group = %+v, want a classic consumer group", obs.Group)
			}
			if obs.Group.MigrationPossible != accepted {
				t.Fatalf("MigrationPossible = %v on %s, but the broker %s a ConsumerGroupHeartbeat (%s)",
					obs.Group.MigrationPossible, v.Name, map[bool]string{true: "accepts", false: "refuses"}[accepted], why)
			}
		})
	}
}

// brokerConfig is broker 1's value of a config ("" when it has none).
func brokerConfig(t *testing.T, e *env, name string) string {
	t.Helper()
	r := kmsg.NewPtrDescribeConfigsRequest()
	rr := kmsg.NewDescribeConfigsRequestResource()
	rr.ResourceType, rr.ResourceName, rr.ConfigNames = kmsg.ConfigResourceTypeBroker, fmt.Sprint(e.B.Nodes[0].ID), []string{name}
	r.Resources = append(r.Resources, rr)
	resp := req[*kmsg.DescribeConfigsResponse](t, e.Client(t), r)
	for _, res := range resp.Resources {
		for _, c := range res.Configs {
			if c.Name == name && c.Value != nil {
				return *c.Value
			}
		}
	}
	return ""
}

// consumerProtocolServed joins a fresh group with the consumer protocol:
// whether the broker accepts the heartbeat, and what it answered.
func consumerProtocolServed(t *testing.T, e *env) (bool, string) {
	t.Helper()
	cl := e.Client(t, kgo.RetryTimeout(20*time.Second))
	r := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	r.Group, r.MemberID, r.MemberEpoch = "gv-probe", newMemberID(), 0
	r.RebalanceTimeoutMillis = 30000
	r.SubscribedTopicNames = []string{"gv-orders"}
	r.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
	deadline := time.Now().Add(30 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		resp, err := r.RequestWith(ctx, cl)
		cancel()
		var code int16
		var ke *kerr.Error
		switch {
		case err == nil:
			code = resp.ErrorCode
		case errors.As(err, &ke):
			code = ke.Code
		default:
			// kgo refuses to send an API the broker does not list.
			return false, "not sent: " + err.Error()
		}
		if retriable(code) && time.Now().Before(deadline) {
			time.Sleep(300 * time.Millisecond)
			continue
		}
		if code == 0 {
			// Leave again: the probe group stays out of the way.
			leave := kmsg.NewPtrConsumerGroupHeartbeatRequest()
			leave.Group, leave.MemberID, leave.MemberEpoch = r.Group, r.MemberID, -1
			if resp.MemberID != nil && *resp.MemberID != "" {
				leave.MemberID = *resp.MemberID
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			_, _ = leave.RequestWith(ctx, cl)
			cancel()
			return true, "accepted"
		}
		return false, "refused: " + kerr.ErrorForCode(code).Error()
	}
}
