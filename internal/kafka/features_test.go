package kafka

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/retentionguard/retention-guard/internal/kafka/kafkatest"
	"github.com/retentionguard/retention-guard/internal/proof"
)

// Whether the brokers may convert a classic group to a consumer group
// (KIP-848 migration: its offsets then expire per commit) is read from the
// finalized group.version feature of each broker's ApiVersions answer, the
// config group.coordinator.rebalance.protocols (deprecated in 4.3, gone in
// 5.0) deciding only on brokers that do not know the feature (3.x) and
// vetoing where it leaves consumer out. Seed 003 (an Empty classic group):
// the proof takes the earlier expiry only where migration is possible.
func TestMigrationPossibleFromGroupVersion(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		opts   []kafkatest.Option
		gv0    bool // UpdateFeatures group.version to 0 after start
		want   bool
		reason string
	}{
		{name: "4.x, group.version 1, no config (5.0)", want: true,
			reason: "group.version 1 enables the consumer protocol; no config to veto it"},
		{name: "4.x, group.version 0", gv0: true, want: false,
			reason: "group.version 0: ConsumerGroupHeartbeat is refused, whatever the config"},
		{name: "4.x, config classic", want: false,
			opts:   []kafkatest.Option{kafkatest.WithBrokerConfigs(map[string]string{configRebalanceProtocols: "classic"})},
			reason: "the config leaves consumer out (4.0–4.x need both)"},
		{name: "3.9, config classic,consumer", want: true,
			opts: []kafkatest.Option{kafkatest.WithKfake(kfake.MaxVersions(kversion.V3_9_0())),
				kafkatest.WithBrokerConfigs(map[string]string{configRebalanceProtocols: "classic,consumer"})},
			reason: "3.x knows no group.version: the config decides"},
		{name: "3.9, config classic", want: false,
			opts: []kafkatest.Option{kafkatest.WithKfake(kfake.MaxVersions(kversion.V3_9_0())),
				kafkatest.WithBrokerConfigs(map[string]string{configRebalanceProtocols: "classic"})},
			reason: "3.x knows no group.version: the config decides"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := kafkatest.NewCluster(t, tc.opts...)
			c.CreateTopic(t, "orders", 1, nil)
			c.Produce(t, "orders", 5)
			c.Commit(t, "batch", "orders", 0, 5)
			if tc.gv0 {
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				req := kmsg.NewPtrUpdateFeaturesRequest()
				fu := kmsg.NewUpdateFeaturesRequestFeatureUpdate()
				fu.Feature, fu.MaxVersionLevel, fu.UpgradeType = featureGroupVersion, 0, 2
				req.FeatureUpdates = append(req.FeatureUpdates, fu)
				resp, err := req.RequestWith(ctx, c.Client(t))
				if err != nil || resp.ErrorCode != 0 {
					t.Fatalf("UpdateFeatures group.version=0: %v %+v", err, resp)
				}
			}
			o, _ := newTestObserver(t)
			obs := observe(t, o, Connection{BootstrapServers: c.Addrs}, Target{Group: "batch", Topics: []string{"orders"}})[0]
			requireNoFailures(t, obs)
			if obs.Group.Protocol != proof.ProtocolClassic {
				t.Fatalf("group = %+v, want a classic group", obs.Group)
			}
			if obs.Group.MigrationPossible != tc.want {
				t.Errorf("MigrationPossible = %v, want %v: %s", obs.Group.MigrationPossible, tc.want, tc.reason)
			}
		})
	}
}

// One broker's answer decides for that broker; any broker may coordinate
// the group, so one that may convert it is enough. What is not read fails
// closed (may convert) unless the config read says the protocol is off.
func TestConsumerProtocolOn(t *testing.T) {
	t.Parallel()
	cfg := func(v string) proof.ConfigValue { return proof.ConfigValue{Present: true, Value: v} }
	v4 := func(level int16) brokerFeatures {
		return brokerFeatures{answered: true, knowsGroupVersion: true, finalizedKnown: true, groupVersion: level}
	}
	v3 := brokerFeatures{answered: true, finalizedKnown: true}
	for _, tc := range []struct {
		name   string
		config proof.ConfigValue
		f      brokerFeatures
		read   bool
		want   bool
	}{
		{"4.x gv1, default config", cfg("classic,consumer,streams"), v4(1), true, true},
		{"4.x gv1, config without consumer", cfg("classic"), v4(1), true, false},
		{"4.x gv0, config with consumer", cfg("classic,consumer"), v4(0), true, false},
		{"5.0 gv1, no config", proof.ConfigValue{}, v4(1), true, true},
		{"5.0 gv0, no config", proof.ConfigValue{}, v4(0), true, false},
		{"4.x, finalized features unknown", cfg(" Classic , CONSUMER "), brokerFeatures{answered: true, knowsGroupVersion: true}, true, true},
		{"3.x, config with consumer", cfg("classic,consumer"), v3, true, true},
		{"3.x, config classic", cfg("classic"), v3, true, false},
		{"3.x, config not read", proof.ConfigValue{}, v3, true, true},
		{"ApiVersions not answered, config with consumer", cfg("classic,consumer"), brokerFeatures{}, false, true},
		{"ApiVersions not answered, config classic", cfg("classic"), brokerFeatures{}, false, false},
		{"nothing read", proof.ConfigValue{}, brokerFeatures{}, false, true},
	} {
		if got := consumerProtocolOn(tc.config, tc.f, tc.read); got != tc.want {
			t.Errorf("%s: consumerProtocolOn = %v, want %v", tc.name, got, tc.want)
		}
	}
	defaults := map[int32]map[string]proof.ConfigValue{
		1: {configRebalanceProtocols: cfg("classic")},
		2: {configRebalanceProtocols: cfg("classic,consumer")},
	}
	if !migrationPossible([]int32{1, 2}, defaults, map[int32]brokerFeatures{1: v4(1), 2: v4(1)}) {
		t.Error("broker 2 serves the consumer protocol: migration possible")
	}
	if migrationPossible([]int32{1, 2}, defaults, map[int32]brokerFeatures{1: v4(1), 2: v4(0)}) {
		t.Error("neither broker serves the consumer protocol: no migration")
	}
}
