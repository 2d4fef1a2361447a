package product

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/retentionguard/retention-guard/internal/cli"
	"github.com/retentionguard/retention-guard/internal/kafka"
	"github.com/retentionguard/retention-guard/internal/kafka/apachekafka"
	"github.com/retentionguard/retention-guard/internal/proof"
)

// Issue 32, on Apache Kafka 3.9 and 4.4 as deployed: broker defaults
// (log.retention.hours 168, offsets.retention.minutes 10080, on 3.x
// message.timestamp.after.max.ms unbounded and classic groups only), no
// topic override, and check's own defaults. Four everyday groups on one
// topic, each a seed's:
//
//   - seed 003's batch consumer between runs: a classic group that read
//     everything and left (Empty, caught up);
//   - a lagging classic group, Empty with half the records unread;
//   - seed 000's outbox between bursts: a simple group (Flink's commit
//     without joining) whose partitions are idle after its commit.
//
// Each is Proven by check with no flag but the window: the exact Empty and
// commit times come from __consumer_offsets, read by default. Told not to
// read it, the Empty group cannot be dated by one check (Unknown), and on
// 3.x the simple group's commit cannot be dated by any record (CreateTime
// may be any time later: message.timestamp.after.max.ms is unbounded):
// the refusals of healthy rollouts the issue reports, gone by default.
func TestAsDeployedHealthyGroupsProvenByDefault(t *testing.T) {
	eachLine(t, func(t *testing.T, b *apachekafka.Broker) {
		const topic = "settle-task"
		b.CreateTopic(t, topic, 3, nil)
		var recs []*kgo.Record
		for p := range int32(3) {
			recs = append(recs, records(topic, p, 100)...)
		}
		produceBatched(t, b, recs...)
		b.CommitAsMember(t, "settle-batch", topic, map[int32]int64{0: 100, 1: 100, 2: 100})
		b.CommitAsMember(t, "settle-lagging", topic, map[int32]int64{0: 50, 1: 50, 2: 50})
		b.CommitOffsets(t, "outbox-relay", topic, map[int32]int64{0: 100, 1: 100, 2: 100})

		for _, group := range []string{"settle-batch", "settle-lagging", "outbox-relay"} {
			args := []string{"--group", group, "--topic", topic, "--recovery-window", "72h"}
			code, res := check(t, b, args...)
			if code != cli.ExitProven {
				t.Errorf("%s by default: exit %d %s %v; want 0 Proven", group, code, res.Verdict, res.reasons())
				continue
			}
			if res.OffsetExpiry == nil || !res.OffsetExpiry.Exact {
				t.Errorf("%s by default: offset expiry %+v, want exact (from __consumer_offsets)", group, res.OffsetExpiry)
			}
		}

		// What the default changes: without __consumer_offsets one check
		// cannot know since when a classic group is Empty.
		code, res := check(t, b, "--group", "settle-batch", "--topic", topic, "--recovery-window", "72h", "--read-offsets-topic=false")
		if code != cli.ExitUnknown {
			t.Errorf("settle-batch without __consumer_offsets: exit %d %s %v; want 2 Unknown", code, res.Verdict, res.reasons())
		}
		if !b.Dist.AtLeast(4, 0) {
			code, res = check(t, b, "--group", "outbox-relay", "--topic", topic, "--recovery-window", "72h", "--read-offsets-topic=false")
			if code != cli.ExitUnknown || !slices.Contains(res.reasons(), "OffsetsMayExpireBeforeWindow") {
				t.Errorf("outbox-relay on %s without __consumer_offsets: exit %d %s %v; want 2 Unknown OffsetsMayExpireBeforeWindow",
					b.Dist.Version, code, res.Verdict, res.reasons())
			}
		}
	}, apachekafka.AsDeployed())
}

// Issue 32, "denied is not silent": a principal that may read the group's
// topic but not __consumer_offsets (a platform's usual ACLs; a managed
// service) gets today's bounds, and the warning and the message name the
// missing ACL with the command that grants it. The remedy the message
// offers is one that changes the verdict: once Read on __consumer_offsets
// is granted (the command's ACL, created through the Admin API), the next
// check reads the exact Empty time and seed 003's batch group between runs
// is Proven. On both lines as deployed, with the StandardAuthorizer.
func TestOffsetsTopicDeniedFallsBackAndTheGrantProves(t *testing.T) {
	const password = "Gu4rd-offsets-topic-never-logged"
	eachLine(t, func(t *testing.T, b *apachekafka.Broker) {
		const topic, group = "settle-task", "settle-batch"
		b.CreateTopic(t, topic, 2, nil)
		produceBatched(t, b, append(records(topic, 0, 20), records(topic, 1, 20)...)...)
		b.CommitAsMember(t, group, topic, map[int32]int64{0: 20, 1: 20})

		// The guard's principal: what the observer needs on the group's
		// topic, its group and the cluster, nothing on __consumer_offsets.
		grant(t, b.Admin(t),
			kadm.NewACLs().Allow("User:guard").Topics(topic).Operations(kadm.OpDescribe, kadm.OpRead, kadm.OpDescribeConfigs),
			kadm.NewACLs().Allow("User:guard").Groups("*").Operations(kadm.OpDescribe),
			kadm.NewACLs().Allow("User:guard").Clusters().Operations(kadm.OpDescribeConfigs))
		conn := kafka.Connection{BootstrapServers: b.Addrs(), SASL: &kafka.SASL{Mechanism: "PLAIN", Username: "guard", Password: password}}
		target := kafka.Target{Group: group, Topics: []string{topic}, ReadOffsetsTopic: true}
		waitFor(t, 60*time.Second, "the guard's ACLs apply", func() bool {
			return len(observeOnce(t, conn, target).Failures) == 0
		})

		passwordFile := filepath.Join(t.TempDir(), "password")
		if err := os.WriteFile(passwordFile, []byte(password), 0o600); err != nil {
			t.Fatal(err)
		}
		args := []string{"--group", group, "--topic", topic, "--recovery-window", "72h",
			"--sasl-mechanism", "PLAIN", "--sasl-username", "guard", "--sasl-password-file", passwordFile}
		code, stdout, stderr := run(append([]string{"check", "--output", "json", "--bootstrap-server", b.Addrs()[0]}, args...)...)
		if code != cli.ExitUnknown || !strings.Contains(stdout, "EmptyGroupOffsetsMayExpireBeforeWindow") {
			t.Fatalf("denied: exit %d, want 2 Unknown (EmptyGroupOffsetsMayExpireBeforeWindow, bounds only):\n%s\nstderr: %s", code, stdout, stderr)
		}
		for _, want := range []string{
			`"type": "offsetsTopic"`, `"reason": "Denied"`, // the warning, as data
			"grant the guard's principal Read on topic __consumer_offsets", // the message's way out
			"kafka-acls.sh --bootstrap-server BROKER --add --allow-principal User:PRINCIPAL --operation Read --topic __consumer_offsets",
		} {
			if !strings.Contains(stdout, want) {
				t.Errorf("denied: the output does not say %q:\n%s", want, stdout)
			}
		}
		if strings.Contains(stdout+stderr, password) {
			t.Errorf("the output leaks the password")
		}

		// The grant the message names.
		grant(t, b.Admin(t), kadm.NewACLs().Allow("User:guard").Topics("__consumer_offsets").Operations(kadm.OpRead))
		waitFor(t, 60*time.Second, "the grant applies", func() bool {
			return observeOnce(t, conn, target).OffsetsTopic.Reason == ""
		})
		code, stdout, stderr = run(append([]string{"check", "--output", "json", "--bootstrap-server", b.Addrs()[0]}, args...)...)
		if code != cli.ExitProven || strings.Contains(stdout, `"type": "offsetsTopic"`) {
			t.Errorf("granted: exit %d, want 0 Proven without the warning:\n%s\nstderr: %s", code, stdout, stderr)
		}
	}, apachekafka.AsDeployed(), apachekafka.WithSASL(apachekafka.SASL{
		AdminUser: "admin", AdminPassword: "Adm1n-offsets-topic-never-logged", Users: map[string]string{"guard": password},
	}))
}

// grant creates ACLs as the broker's admin.
func grant(t *testing.T, admin *kadm.Client, builders ...*kadm.ACLBuilder) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, b := range builders {
		res, err := admin.CreateACLs(ctx, b)
		if err != nil {
			t.Fatalf("CreateACLs: %v", err)
		}
		for _, r := range res {
			if r.Err != nil {
				t.Fatalf("CreateACLs %s %v: %v", r.Principal, r.Operation, r.Err)
			}
		}
	}
}

// observeOnce observes one target with a fresh observer.
func observeOnce(t *testing.T, conn kafka.Connection, target kafka.Target) proof.Observation {
	t.Helper()
	o := kafka.NewObserver()
	defer o.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return o.Observe(ctx, conn, []kafka.Target{target})[0]
}
