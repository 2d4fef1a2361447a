package clients

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/retentionguard/retention-guard/internal/kafka/apachekafka"
)

// JavaShare runs the official Java share consumer until it exits
// (io.retentionguard.test.ShareConsumer, KafkaShareConsumer).
func JavaShare(t testing.TB, e ConsumerEnv) Run {
	t.Helper()
	dir := os.Getenv(JavaConsumerEnv)
	if dir == "" {
		t.Fatalf("%s is not set: export $(hack/build-kafka.sh) first", JavaConsumerEnv)
	}
	cmd := exec.Command("java", "-Xms64m", "-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
		"-cp", filepath.Join(dir, "classes")+string(os.PathListSeparator)+filepath.Join(dir, "libs", "*"),
		"io.retentionguard.test.ShareConsumer")
	cmd.Env = e.environ()
	return start(t, "the Java share consumer (kafka-clients 4.4)", cmd).Wait(t)
}

// setGroupConfig sets a group config (IncrementalAlterConfigs on a GROUP
// resource, KIP-848/KIP-932).
func setGroupConfig(t *testing.T, b *apachekafka.Broker, group, key, value string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	res := kmsg.NewIncrementalAlterConfigsRequestResource()
	res.ResourceType = kmsg.ConfigResourceTypeGroupConfig
	res.ResourceName = group
	c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
	c.Name, c.Value = key, kmsg.StringPtr(value)
	res.Configs = append(res.Configs, c)
	req.Resources = append(req.Resources, res)
	resp, err := req.RequestWith(ctx, b.Client(t))
	if err != nil {
		t.Fatalf("setting %s=%s on group %s: %v", key, value, group, err)
	}
	for _, r := range resp.Resources {
		if r.ErrorCode != 0 {
			msg := ""
			if r.ErrorMessage != nil {
				msg = *r.ErrorMessage
			}
			t.Fatalf("setting %s=%s on group %s: error %d %s", key, value, group, r.ErrorCode, msg)
		}
	}
}

// TestShareConsumerIgnoresAutoOffsetReset (issue 22): a share group has no
// committed offsets and no auto.offset.reset. The Java share consumer
// refuses the setting (ConfigException), so a share consumer's variable
// proves nothing; where the group starts is the group config
// share.auto.offset.reset (default latest), set on the broker: with
// earliest the records already in the topic are read.
func TestShareConsumerIgnoresAutoOffsetReset(t *testing.T) {
	t.Parallel()
	d := apachekafka.Newest(t)
	if !d.AtLeast(4, 2) {
		t.Fatalf("share groups are on by default from 4.2; the newest line here is %s", d.Version)
	}
	b := apachekafka.Start(t, d)
	const topic = "jobs"
	b.CreateTopic(t, topic, 1, nil)
	b.ProduceTo(t, topic, 0, 5)
	env := ConsumerEnv{Brokers: b.Addrs(), Topics: []string{topic}, Idle: 5 * time.Second}

	refused := env
	refused.Group, refused.Reset = "workers-a", "earliest"
	run := JavaShare(t, refused)
	if f := run.All("fatal"); run.Code != 64 || len(f) != 1 || f[0].Str("exception") != "ConfigException" {
		t.Fatalf("a share consumer with auto.offset.reset=earliest: want a ConfigException (exit 64):\n%s", run)
	}

	// A share group joins slowly (the share coordinator's first state
	// topic write): a longer idle time.
	byGroupConfig := env
	byGroupConfig.Group, byGroupConfig.Idle = "workers-c", 20*time.Second
	setGroupConfig(t, b, byGroupConfig.Group, "share.auto.offset.reset", "earliest")
	run = JavaShare(t, byGroupConfig)
	if run.Code != 0 || run.Consumed(topic, 0) != 5 {
		t.Fatalf("a share group with share.auto.offset.reset=earliest: want exit 0 and the 5 records read:\n%s", run)
	}
}
