package product

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/retentionguard/retention-guard/internal/cli"
	"github.com/retentionguard/retention-guard/internal/kafka"
	"github.com/retentionguard/retention-guard/internal/kafka/apachekafka"
)

// Issue 33 item 3, "a timestamp that could not be read counts as fine":
// seed 003's settlement consumer stopped mid-backlog (seed 000's lagging
// consumer, on a topic that keeps 7 days). The guard's principal has
// Describe on the topic but not Read (Fetch needs Read; every other request
// the proof makes needs Describe), so the record at the committed offset is
// not dated. On both lines as deployed (log.retention.hours 168, no topic
// override; message.timestamp.before.max.ms unbounded by default, so a
// producer may stamp records days in the past, as a backfill or a
// MirrorMaker copy does), window 72h:
//
//   - settle-task holds 20 records stamped 5 days ago; the group committed
//     10. Retention deletes them within 2 days, before the window ends: at
//     risk. Before the fix check said Proven (headroom skipped); now
//     ListOffsets by timestamp (now + 72h − 168h, Describe only) answers
//     that no record outlives the window, and the proof says
//     RecoveryHeadroomShorterThanWindow (Violated, a risk) with the
//     missing Read named;
//   - settle-task-today holds 20 records stamped now, the group committed
//     10: ListOffsets answers offset 0, the committed record outlives the
//     window, Proven with Describe only.
//
// Granting Read dates the record itself, and the at-risk group keeps its
// risk, with the figure.
func TestUndatedLaggingRecordDecidedByListOffsets(t *testing.T) {
	const password = "Gu4rd-unread-never-logged"
	eachLine(t, func(t *testing.T, b *apachekafka.Broker) {
		const old, today = "settle-task", "settle-task-today"
		const lagging, fresh = "ledger-settle-consumer", "ledger-settle-today"
		b.CreateTopic(t, old, 1, nil)
		b.CreateTopic(t, today, 1, nil)
		stamped := time.Now().Add(-5 * 24 * time.Hour)
		oldRecs := records(old, 0, 20)
		for _, r := range oldRecs {
			r.Timestamp = stamped
		}
		produceBatched(t, b, append(oldRecs, records(today, 0, 20)...)...)
		b.CommitAsMember(t, lagging, old, map[int32]int64{0: 10})
		b.CommitAsMember(t, fresh, today, map[int32]int64{0: 10})

		// Describe (and DescribeConfigs) on the topics, no Read; Read on
		// __consumer_offsets for the exact Empty times.
		grant(t, b.Admin(t),
			kadm.NewACLs().Allow("User:guard").Topics(old, today).Operations(kadm.OpDescribe, kadm.OpDescribeConfigs),
			kadm.NewACLs().Allow("User:guard").Topics("__consumer_offsets").Operations(kadm.OpDescribe, kadm.OpRead),
			kadm.NewACLs().Allow("User:guard").Groups("*").Operations(kadm.OpDescribe),
			kadm.NewACLs().Allow("User:guard").Clusters().Operations(kadm.OpDescribeConfigs))
		conn := kafka.Connection{BootstrapServers: b.Addrs(), SASL: &kafka.SASL{Mechanism: "PLAIN", Username: "guard", Password: password}}
		waitFor(t, 60*time.Second, "the guard's ACLs apply", func() bool {
			obs := observeOnce(t, conn, kafka.Target{Group: lagging, Topics: []string{old}, ReadOffsetsTopic: true})
			return len(obs.Failures) == 0 && obs.OffsetsTopic.Reason == ""
		})

		passwordFile := filepath.Join(t.TempDir(), "password")
		if err := os.WriteFile(passwordFile, []byte(password), 0o600); err != nil {
			t.Fatal(err)
		}
		sasl := []string{"--sasl-mechanism", "PLAIN", "--sasl-username", "guard", "--sasl-password-file", passwordFile}

		// At risk, decided with Describe only.
		code, res := check(t, b, append([]string{"--group", lagging, "--topic", old, "--recovery-window", "72h"}, sasl...)...)
		if code != cli.ExitViolated || !slices.Equal(res.reasons(), []string{"RecoveryHeadroomShorterThanWindow"}) {
			t.Fatalf("%s without Read: exit %d %s %v, want 1 Violated [RecoveryHeadroomShorterThanWindow] (5-day-old records on a 7-day topic, window 3 days)",
				lagging, code, res.Verdict, res.reasons())
		}
		msg := res.Violations[0].Message
		for _, want := range []string{"settle-task[0]", "committed offset 10", "ListOffsets by timestamp", "lacks Read on the topic"} {
			if !strings.Contains(msg, want) {
				t.Errorf("%s without Read: the message does not say %q: %s", lagging, want, msg)
			}
		}

		// Safe, proven with Describe only.
		code, res = check(t, b, append([]string{"--group", fresh, "--topic", today, "--recovery-window", "72h"}, sasl...)...)
		if code != cli.ExitProven {
			t.Fatalf("%s without Read: exit %d %s %+v, want 0 Proven (records stamped now outlive a 3-day window on a 7-day topic)",
				fresh, code, res.Verdict, res.Violations)
		}
		if len(res.Partitions) != 1 || res.Partitions[0].HeadroomSeconds == nil || *res.Partitions[0].HeadroomSeconds < int64((72*time.Hour).Seconds())-60 {
			t.Errorf("%s without Read: partitions %+v, want a headroom of at least the window (a lower bound from ListOffsets)", fresh, res.Partitions)
		}

		// The grant dates the record: the risk stays, with its figure.
		grant(t, b.Admin(t), kadm.NewACLs().Allow("User:guard").Topics(old).Operations(kadm.OpRead))
		waitFor(t, 60*time.Second, "the Read grant applies", func() bool {
			obs := observeOnce(t, conn, kafka.Target{Group: lagging, Topics: []string{old}})
			return len(obs.Topics) == 1 && len(obs.Topics[0].Partitions) == 1 && !obs.Topics[0].Partitions[0].CommittedTimestamp.IsZero()
		})
		code, res = check(t, b, append([]string{"--group", lagging, "--topic", old, "--recovery-window", "72h"}, sasl...)...)
		if code != cli.ExitViolated || !slices.Equal(res.reasons(), []string{"RecoveryHeadroomShorterThanWindow"}) ||
			!strings.Contains(res.Violations[0].Message, "retention deletes the record at committed offset 10 in ") {
			t.Errorf("%s with Read: exit %d %s %v %+v, want 1 Violated RecoveryHeadroomShorterThanWindow with its figure", lagging, code, res.Verdict, res.reasons(), res.Violations)
		}
	}, apachekafka.AsDeployed(), apachekafka.WithSASL(apachekafka.SASL{
		AdminUser: "admin", AdminPassword: "Adm1n-unread-never-logged", Users: map[string]string{"guard": password},
	}))
}
