package cli

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/retentionguard/retention-guard/internal/kafka/kafkatest"
)

// checkResult is the parts of `check --output json` the tests read.
type checkResult struct {
	Group            string `json:"group"`
	RecoveryWindow   string `json:"recoveryWindow"`
	Verdict          string `json:"verdict"`
	ProofID          string `json:"proofID"`
	ExpiredRecords   int64  `json:"expiredRecords"`
	OffsetsRetention *int64 `json:"offsetsRetentionMinutes"`
	PartitionSummary struct {
		Total, InRange, Expired, Missing, BeyondEnd int
	} `json:"partitionSummary"`
	Topics []struct {
		Name              string `json:"name"`
		RetentionMs       *int64 `json:"retentionMs"`
		CleanupPolicy     string `json:"cleanupPolicy"`
		DeleteRetentionMs *int64 `json:"deleteRetentionMs"`
	} `json:"topics"`
	GroupProtocol string `json:"groupProtocol"`
	OffsetExpiry  *struct {
		Clock     string     `json:"clock"`
		SoonestAt *time.Time `json:"soonestAt"`
		Exact     bool       `json:"exact"`
	} `json:"offsetExpiry"`
	Violations []struct {
		Reason    string `json:"reason"`
		Topic     string `json:"topic"`
		Partition *int32 `json:"partition"`
		Message   string `json:"message"`
	} `json:"violations"`
	WarningFacts []struct {
		Type   string `json:"type"`
		Reason string `json:"reason"`
	} `json:"warningFacts"`
	Partitions []struct {
		Topic             string     `json:"topic"`
		Partition         int32      `json:"partition"`
		Committed         int64      `json:"committed"`
		LogStart          int64      `json:"logStart"`
		LogEnd            int64      `json:"logEnd"`
		Lag               int64      `json:"lag"`
		ExpiredRecords    int64      `json:"expiredRecords"`
		HeadroomSeconds   *int64     `json:"headroomSeconds"`
		OffsetExpiresAt   *time.Time `json:"offsetExpiresAt"`
		OffsetExpiryExact bool       `json:"offsetExpiryExact"`
		Verdict           string     `json:"verdict"`
	} `json:"partitions"`
}

func checkJSONRun(t *testing.T, args ...string) (int, checkResult, string) {
	t.Helper()
	code, stdout, stderr := run(t, append([]string{"check", "--output", "json"}, args...)...)
	var res checkResult
	if err := json.Unmarshal([]byte(stdout), &res); err != nil {
		t.Fatalf("output is not JSON (%v):\n%s\nstderr: %s", err, stdout, stderr)
	}
	return code, res, stderr
}

func reasons(r checkResult) []string {
	var out []string
	for _, v := range r.Violations {
		out = append(out, v.Reason)
	}
	return out
}

// violationMessage is the message of the first violation with reason.
func violationMessage(r checkResult, reason string) string {
	for _, v := range r.Violations {
		if v.Reason == reason {
			return v.Message
		}
	}
	return ""
}

// hasWarning reports whether the check's warningFacts hold one of type typ
// with reason.
func hasWarning(r checkResult, typ, reason string) bool {
	for _, w := range r.WarningFacts {
		if w.Type == typ && w.Reason == reason {
			return true
		}
	}
	return false
}

func hasReason(r checkResult, reason string) bool {
	for _, v := range r.Violations {
		if v.Reason == reason {
			return true
		}
	}
	return false
}

// Seed 002: a consumer that crashed after its DB commit and before its
// offset commit replays from its committed offset, which still lies inside
// [logStart, logEnd]: Proven, exit 0, no false alarm.
func TestCheckSeed002ReplayInsideRetainedLogIsProven(t *testing.T) {
	c := kafkatest.NewCluster(t)
	c.CreateTopic(t, "reporting-events", 3, map[string]string{"retention.ms": "1209600000"}) // 14 days
	c.Produce(t, "reporting-events", 30)                                                     // 10 per partition
	c.CommitOffsets(t, "reporting", "reporting-events", map[int32]int64{0: 4, 1: 10, 2: 7})

	code, res, stderr := checkJSONRun(t, "--bootstrap-server", c.Addrs[0], "--group", "reporting",
		"--topic", "reporting-events", "--recovery-window", "72h")
	if code != ExitProven || res.Verdict != "Proven" {
		t.Fatalf("exit %d verdict %s violations %v, want 0 Proven\n%s", code, res.Verdict, reasons(res), stderr)
	}
	if res.ProofID != "" || len(res.Violations) != 0 {
		t.Errorf("a proven group carries proofID %q and violations %v", res.ProofID, res.Violations)
	}
	if res.PartitionSummary.Total != 3 || res.PartitionSummary.InRange != 3 {
		t.Errorf("partitionSummary %+v, want 3 of 3 in range", res.PartitionSummary)
	}
	if res.Group != "reporting" || res.RecoveryWindow != "72h0m0s" {
		t.Errorf("group %q window %q", res.Group, res.RecoveryWindow)
	}
	lag := map[int32]int64{}
	for _, p := range res.Partitions {
		lag[p.Partition] = p.Lag
		if p.Verdict != "Proven" || p.LogStart != 0 || p.LogEnd != 10 {
			t.Errorf("partition %+v", p)
		}
	}
	if lag[0] != 6 || lag[1] != 0 || lag[2] != 3 {
		t.Errorf("lag per partition %v, want 6/0/3", lag)
	}
	if res.OffsetsRetention == nil || *res.OffsetsRetention != 10080 {
		t.Errorf("offsetsRetentionMinutes %v, want 10080", res.OffsetsRetention)
	}
}

// Seed 000: the fan-out consumer was down longer than the outbox topic's
// retention. Retention (real, in the broker) deleted records past its
// committed offset: exit 1, CommittedOffsetExpired with the exact number of
// records lost, and the too-short retention named.
func TestCheckSeed000CommittedOffsetBelowLogStart(t *testing.T) {
	c := kafkatest.NewCluster(t)
	c.CreateTopic(t, "outbox", 1, map[string]string{"retention.ms": "20"})
	c.Produce(t, "outbox", 10)
	c.Commit(t, "fanout", "outbox", 0, 3) // fan-out read 3 records, then went down
	time.Sleep(60 * time.Millisecond)
	c.ApplyRetention() // the broker deletes the expired segment: log start moves to 10
	c.Produce(t, "outbox", 5)

	code, res, stderr := checkJSONRun(t, "--bootstrap-server", c.Addrs[0], "--group", "fanout",
		"--topic", "outbox", "--recovery-window", "72h")
	if code != ExitViolated || res.Verdict != "Violated" {
		t.Fatalf("exit %d verdict %s, want 1 Violated\n%s", code, res.Verdict, stderr)
	}
	if !hasReason(res, "CommittedOffsetExpired") || !hasReason(res, "RetentionShorterThanWindow") {
		t.Fatalf("reasons %v, want CommittedOffsetExpired and RetentionShorterThanWindow", reasons(res))
	}
	if res.ExpiredRecords != 7 {
		t.Errorf("expiredRecords %d, want 7 (log start 10 - committed 3)", res.ExpiredRecords)
	}
	p := res.Partitions[0]
	if p.Committed != 3 || p.LogStart != 10 || p.LogEnd != 15 || p.ExpiredRecords != 7 || p.Verdict != "Violated" {
		t.Errorf("partition line %+v, want committed 3 (unclamped), log start 10, log end 15, 7 expired", p)
	}
	if res.ProofID == "" {
		t.Error("a violated proof has no proofID")
	}

	// The table says the same thing to a person.
	code, table, _ := run(t, "check", "--bootstrap-server", c.Addrs[0], "--group", "fanout",
		"--topic", "outbox", "--recovery-window", "72h")
	if code != ExitViolated {
		t.Fatalf("table run exit %d", code)
	}
	for _, want := range []string{"Violated", "CommittedOffsetExpired", "7 records expired", "outbox", res.ProofID} {
		if !strings.Contains(table, want) {
			t.Errorf("table lacks %q:\n%s", want, table)
		}
	}
	if strings.Contains(table, "\x1b[") {
		t.Errorf("table written to a non-terminal carries colour codes:\n%q", table)
	}
}

// Seed 000's bootstrap rule: a fresh group on a log that still starts at 0
// reads everything; a missing offset while the log starts later cannot prove
// nothing expired.
func TestCheckMissingOffsetOnlyPassesWhileLogStartsAtZero(t *testing.T) {
	c := kafkatest.NewCluster(t)
	c.CreateTopic(t, "outbox", 2, map[string]string{"retention.ms": "604800000"})
	c.Produce(t, "outbox", 20)

	code, res, _ := checkJSONRun(t, "--bootstrap-server", c.Addrs[0], "--group", "fresh-fanout",
		"--topic", "outbox", "--recovery-window", "72h")
	if code != ExitProven {
		t.Fatalf("fresh group on a log starting at 0: exit %d, reasons %v", code, reasons(res))
	}
	for _, p := range res.Partitions {
		if p.Committed != -1 {
			t.Errorf("partition %d committed %d, want -1 (none)", p.Partition, p.Committed)
		}
	}

	c.DeleteRecords(t, "outbox", 1, 4)
	code, res, _ = checkJSONRun(t, "--bootstrap-server", c.Addrs[0], "--group", "fresh-fanout",
		"--topic", "outbox", "--recovery-window", "72h")
	if code != ExitViolated || !hasReason(res, "NoCommittedOffset") {
		t.Fatalf("missing offset with log start 4: exit %d reasons %v, want 1 NoCommittedOffset", code, reasons(res))
	}
	if res.PartitionSummary.Missing != 1 || res.PartitionSummary.InRange != 1 {
		t.Errorf("partitionSummary %+v, want 1 missing, 1 in range", res.PartitionSummary)
	}
}

// Seed 003: the settlement batch consumer promises a 10-day window while the
// brokers keep an empty group's offsets 7 days; then its offsets expire while
// the log has moved on. It is a classic consumer group: it joins, commits
// and leaves, so its offsets expire offsets.retention.minutes after it
// became Empty.
func TestCheckSeed003BatchGroupOffsetsExpire(t *testing.T) {
	c := kafkatest.NewCluster(t, kafkatest.WithOffsetExpiry(2*time.Second, 50*time.Millisecond))
	c.CreateTopic(t, "settle-task", 4, map[string]string{"retention.ms": "2592000000"}) // 30 days
	c.Produce(t, "settle-task", 40)
	c.CommitAsMember(t, "ledger-settle-consumer", "settle-task", map[int32]int64{0: 10, 1: 10, 2: 10, 3: 10})

	// Before expiry: everything is in range, but 7 days of offsets retention
	// does not cover a 10-day window.
	code, res, _ := checkJSONRun(t, "--bootstrap-server", c.Addrs[0], "--group", "ledger-settle-consumer",
		"--topic", "settle-task", "--recovery-window", "240h")
	if code != ExitViolated || !hasReason(res, "OffsetsRetentionShorterThanWindow") || hasReason(res, "NoCommittedOffset") {
		t.Fatalf("exit %d reasons %v, want 1 with OffsetsRetentionShorterThanWindow only", code, reasons(res))
	}
	// A 7-day window fits offsets.retention.minutes, but not the time the
	// group has already been Empty, which one check cannot know: the
	// offsets may expire any moment. Unknown, never Proven (the
	// broker-in-the-loop oracle's false Proven: the Java consumer skipped
	// every record since). The message says how to know.
	code, res, _ = checkJSONRun(t, "--bootstrap-server", c.Addrs[0], "--group", "ledger-settle-consumer",
		"--topic", "settle-task", "--recovery-window", "168h")
	if code != ExitUnknown || !hasReason(res, "EmptyGroupOffsetsMayExpireBeforeWindow") {
		t.Fatalf("168h window: exit %d reasons %v, want 2 EmptyGroupOffsetsMayExpireBeforeWindow", code, reasons(res))
	}
	// kfake has no __consumer_offsets: the check read it by default and
	// could not, so the only way out that changes the verdict is to start
	// the consumer, and a warning says why the time is not exact.
	if msg := violationMessage(res, "EmptyGroupOffsetsMayExpireBeforeWindow"); !strings.Contains(msg, "since when is not known") ||
		!strings.Contains(msg, "start the consumer") || strings.Contains(msg, "readOffsetsTopic") {
		t.Errorf("message %q does not say what is unknown and the one way out", msg)
	}
	if !hasWarning(res, "offsetsTopic", "Absent") {
		t.Errorf("warnings %+v: no offsetsTopic warning saying the cluster has no __consumer_offsets", res.WarningFacts)
	}
	// Turned off, the message names the read as the other way out.
	_, res, _ = checkJSONRun(t, "--bootstrap-server", c.Addrs[0], "--group", "ledger-settle-consumer",
		"--topic", "settle-task", "--recovery-window", "168h", "--read-offsets-topic=false")
	if msg := violationMessage(res, "EmptyGroupOffsetsMayExpireBeforeWindow"); !strings.Contains(msg, "start the consumer") ||
		!strings.Contains(msg, "readOffsetsTopic") {
		t.Errorf("read off: message %q does not offer reading __consumer_offsets", msg)
	}

	// The consumer stays down; the broker expires the empty group's offsets,
	// and the log start has moved past 0 on every partition.
	for p := int32(0); p < 4; p++ {
		c.DeleteRecords(t, "settle-task", p, 5)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		code, res, _ = checkJSONRun(t, "--bootstrap-server", c.Addrs[0], "--group", "ledger-settle-consumer",
			"--topic", "settle-task", "--recovery-window", "168h")
		if res.PartitionSummary.Missing == 4 || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if code != ExitViolated || !hasReason(res, "NoCommittedOffset") || res.PartitionSummary.Missing != 4 {
		t.Fatalf("after offset expiry: exit %d reasons %v summary %+v, want NoCommittedOffset on 4 partitions",
			code, reasons(res), res.PartitionSummary)
	}
}

// Fail closed: an unreachable broker is Unknown (exit 2); one that accepts
// connections and never answers is Unknown when --timeout passes, the
// check's deadline named (the observer's own timeouts are longer).
func TestCheckUnreachableBrokerIsUnknown(t *testing.T) {
	code, res, stderr := checkJSONRun(t, "--bootstrap-server", "127.0.0.1:1", "--group", "g",
		"--topic", "t", "--recovery-window", "72h", "--timeout", "2s")
	if code != ExitUnknown || res.Verdict != "Unknown" || !hasReason(res, "BrokerUnreachable") {
		t.Fatalf("exit %d verdict %s reasons %v, want 2 Unknown BrokerUnreachable\n%s", code, res.Verdict, reasons(res), stderr)
	}

	code, res, stderr = checkJSONRun(t, "--bootstrap-server", kafkatest.SilentBroker(t), "--group", "g",
		"--topic", "t", "--recovery-window", "72h", "--timeout", "2s")
	if code != ExitUnknown || res.Verdict != "Unknown" || !hasReason(res, "BrokerUnreachable") {
		t.Fatalf("silent broker: exit %d verdict %s reasons %v, want 2 Unknown BrokerUnreachable\n%s", code, res.Verdict, reasons(res), stderr)
	}
	if msg := violationMessage(res, "BrokerUnreachable"); !strings.Contains(msg, "deadline") {
		t.Errorf("silent broker: message %q should say the check's deadline (--timeout) passed", msg)
	}
}

// SASL: a wrong password is AuthenticationFailed (exit 2) and the password
// never reaches the output; a user whose ACLs deny DescribeConfigs gets
// AuthorizationFailed rather than a guess.
func TestCheckSASLFailuresAreUnknownAndNeverPrintThePassword(t *testing.T) {
	const admin, adminPass = "admin", "admin-password-42"
	const reader, readerPass = "settle", "s3cret-settle-pw"
	c := kafkatest.NewCluster(t,
		kafkatest.WithSASL("SCRAM-SHA-512", admin, adminPass),
		kafkatest.WithKfake(kfake.User("SCRAM-SHA-512", reader, readerPass,
			// Everything a check needs except DescribeConfigs on the topic.
			kfake.ACL{Resource: kmsg.ACLResourceTypeTopic, Name: "settle-task", Pattern: kmsg.ACLResourcePatternTypeLiteral, Operation: kmsg.ACLOperationDescribe, Allow: true},
			kfake.ACL{Resource: kmsg.ACLResourceTypeGroup, Name: "ledger-settle-consumer", Pattern: kmsg.ACLResourcePatternTypeLiteral, Operation: kmsg.ACLOperationDescribe, Allow: true},
			kfake.ACL{Resource: kmsg.ACLResourceTypeCluster, Name: "kafka-cluster", Pattern: kmsg.ACLResourcePatternTypeLiteral, Operation: kmsg.ACLOperationDescribeConfigs, Allow: true},
		)))
	c.CreateTopic(t, "settle-task", 1, map[string]string{"retention.ms": "2592000000"})
	c.Produce(t, "settle-task", 5)
	c.Commit(t, "ledger-settle-consumer", "settle-task", 0, 5)

	dir := t.TempDir()
	writePW := func(name, pw string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(pw+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	base := []string{"--bootstrap-server", c.Addrs[0], "--group", "ledger-settle-consumer",
		"--topic", "settle-task", "--recovery-window", "72h", "--sasl-mechanism", "SCRAM-SHA-512"}

	wrong := "wrong-" + readerPass
	code, res, stderr := checkJSONRun(t, append(base, "--sasl-username", reader, "--sasl-password-file", writePW("wrong", wrong))...)
	if code != ExitUnknown || !hasReason(res, "AuthenticationFailed") {
		t.Fatalf("wrong password: exit %d reasons %v, want 2 AuthenticationFailed", code, reasons(res))
	}
	out, _ := json.Marshal(res)
	if strings.Contains(string(out)+stderr, wrong) {
		t.Fatal("the password reached the output")
	}

	code, res, _ = checkJSONRun(t, append(base, "--sasl-username", reader, "--sasl-password-file", writePW("right", readerPass))...)
	if code != ExitUnknown || !hasReason(res, "AuthorizationFailed") {
		t.Fatalf("DescribeConfigs denied: exit %d reasons %v, want 2 AuthorizationFailed", code, reasons(res))
	}

	code, res, _ = checkJSONRun(t, append(base, "--sasl-username", admin, "--sasl-password-file", writePW("admin", adminPass))...)
	if code != ExitProven {
		t.Fatalf("superuser: exit %d reasons %v, want 0", code, reasons(res))
	}
}

// TLS with the CA from a file: proven; without the CA the brokers'
// certificate is not trusted and the check cannot prove anything.
func TestCheckTLS(t *testing.T) {
	ca := kafkatest.NewCA(t, "kafka-ca")
	c := kafkatest.NewCluster(t, kafkatest.WithTLS(ca.ServerTLS(t), ca.ClientTLS()))
	c.CreateTopic(t, "outbox", 1, map[string]string{"retention.ms": "604800000"})
	caFile := filepath.Join(t.TempDir(), "ca.crt")
	if err := os.WriteFile(caFile, ca.PEM, 0o600); err != nil {
		t.Fatal(err)
	}
	base := []string{"--bootstrap-server", c.Addrs[0], "--group", "g", "--topic", "outbox", "--recovery-window", "72h", "--timeout", "3s"}
	if code, res, _ := checkJSONRun(t, append(base, "--tls-ca", caFile)...); code != ExitProven {
		t.Fatalf("with the CA: exit %d reasons %v", code, reasons(res))
	}
	if code, res, _ := checkJSONRun(t, append(base, "--tls")...); code != ExitUnknown || !hasReason(res, "BrokerUnreachable") {
		t.Fatalf("untrusted certificate: exit %d reasons %v, want 2 BrokerUnreachable", code, reasons(res))
	}
}

// The three cases the proof used to call Proven where a real broker loses
// data, each next to its healthy twin (issue "The proof holds on a real
// Kafka broker").

// A changelog topic compacts: the cleaner drops tombstones
// delete.retention.ms after writing them, so a consumer down longer keeps
// deleted keys forever. The broker serves classic groups only: one that may
// convert the Empty group to a consumer group would need partition 1's
// commit at offset 0 dated (nothing before it to date it by).
func TestCheckCompactedTopicTombstones(t *testing.T) {
	c := kafkatest.NewCluster(t, kafkatest.WithBrokerConfigs(map[string]string{"group.coordinator.rebalance.protocols": "classic"}))
	c.CreateTopic(t, "accounts-changelog", 2, map[string]string{"cleanup.policy": "compact", "delete.retention.ms": "86400000"})
	c.CreateTopic(t, "accounts-cdc", 2, map[string]string{"cleanup.policy": "compact", "delete.retention.ms": "604800000"})
	for _, topic := range []string{"accounts-changelog", "accounts-cdc"} {
		c.ProduceRecords(t, &kgo.Record{Topic: topic, Key: []byte("acct-1"), Value: []byte("open")},
			&kgo.Record{Topic: topic, Key: []byte("acct-1")}) // a tombstone
		c.RunConsumer(t, "ledger-"+topic, topic, map[int32]int64{0: 2, 1: 0})
	}

	code, res, _ := checkJSONRun(t, "--bootstrap-server", c.Addrs[0], "--group", "ledger-accounts-changelog",
		"--topic", "accounts-changelog", "--recovery-window", "72h")
	if code != ExitViolated || !hasReason(res, "TombstoneRetentionShorterThanWindow") {
		t.Fatalf("1 day of tombstones, 3-day window: exit %d reasons %v, want 1 TombstoneRetentionShorterThanWindow", code, reasons(res))
	}
	if res.Topics[0].DeleteRetentionMs == nil || *res.Topics[0].DeleteRetentionMs != 86400000 {
		t.Errorf("topics %+v, want deleteRetentionMs 86400000 reported", res.Topics)
	}
	if code, res, _ := checkJSONRun(t, "--bootstrap-server", c.Addrs[0], "--group", "ledger-accounts-cdc",
		"--topic", "accounts-cdc", "--recovery-window", "72h"); code != ExitProven {
		t.Fatalf("7 days of tombstones, 3-day window: exit %d reasons %v, want 0", code, reasons(res))
	}
}

// A simple group (Flink, Spark, assign() and commit) expires each offset
// offsets.retention.minutes after its own last commit, in any state. Its
// records were written 6 days ago: under the default 7 days the commit
// can only be dated by them, so a 3-day window cannot be proven; read from
// __consumer_offsets, the commit is known to be recent.
func TestCheckSimpleGroupCommitClock(t *testing.T) {
	c := kafkatest.NewCluster(t)
	c.CreateOffsetsTopic(t, 3)
	// 30 days of retention: partition 1 lags on 6-day-old records, which
	// must outlive the window (a shorter headroom fails, issue 22 item 6).
	c.CreateTopic(t, "clicks", 2, map[string]string{"retention.ms": "2592000000"})
	old := time.Now().Add(-6 * 24 * time.Hour)
	var recs []*kgo.Record
	for p := range int32(2) {
		for range 5 {
			recs = append(recs, &kgo.Record{Topic: "clicks", Partition: p, Timestamp: old, Value: []byte("c")})
		}
	}
	c.ProduceRecords(t, recs...)
	c.CommitOffsets(t, "flink-clicks", "clicks", map[int32]int64{0: 5, 1: 3})
	c.LogCommits(t, "flink-clicks")
	args := []string{"--bootstrap-server", c.Addrs[0], "--group", "flink-clicks", "--topic", "clicks", "--recovery-window", "72h"}

	code, res, _ := checkJSONRun(t, append(args, "--read-offsets-topic=false")...)
	if code != ExitUnknown || !hasReason(res, "OffsetsMayExpireBeforeWindow") {
		t.Fatalf("dated by 6-day-old records: exit %d reasons %v, want 2 OffsetsMayExpireBeforeWindow", code, reasons(res))
	}
	if res.OffsetExpiry == nil || res.OffsetExpiry.Clock != "LastCommit" || res.OffsetExpiry.SoonestAt == nil || res.OffsetExpiry.Exact {
		t.Errorf("offsetExpiry = %+v, want the LastCommit clock with a bounded soonest expiry", res.OffsetExpiry)
	}
	// The default reads __consumer_offsets (issue 32).
	code, res, _ = checkJSONRun(t, args...)
	if code != ExitProven {
		t.Fatalf("with exact commit times: exit %d reasons %v, want 0", code, reasons(res))
	}
	if res.OffsetExpiry == nil || !res.OffsetExpiry.Exact || res.Partitions[0].OffsetExpiresAt == nil || !res.Partitions[0].OffsetExpiryExact {
		t.Errorf("offsetExpiry %+v, partition %+v: want exact", res.OffsetExpiry, res.Partitions[0])
	}

	// The healthy twin without the log: records written now date a commit
	// made now.
	c.CreateTopic(t, "views", 1, nil)
	c.Produce(t, "views", 5)
	c.Commit(t, "flink-views", "views", 0, 5)
	if code, res, _ := checkJSONRun(t, "--bootstrap-server", c.Addrs[0], "--group", "flink-views", "--topic", "views",
		"--recovery-window", "72h"); code != ExitProven {
		t.Fatalf("committed just now: exit %d reasons %v, want 0", code, reasons(res))
	}
}

// A KIP-848 group that is running: an idle partition its client (franz-go
// does not re-commit unchanged offsets) last committed 6 days ago loses
// its offset as soon as the group empties, so the group cannot be down for
// 3 days. Its busy twin is proven.
func TestCheckKIP848IdlePartition(t *testing.T) {
	c := kafkatest.NewCluster(t)
	c.CreateTopic(t, "orders", 1, nil)
	c.CreateTopic(t, "payments", 1, nil)
	old := time.Now().Add(-6 * 24 * time.Hour)
	c.ProduceRecords(t, &kgo.Record{Topic: "orders", Timestamp: old, Value: []byte("o")},
		&kgo.Record{Topic: "payments", Value: []byte("p")})
	for _, topic := range []string{"orders", "payments"} {
		cl := c.JoinGroup(t, "workers-"+topic, kafkatest.Consumer, topic)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		err := kafkatest.CommitSync(ctx, cl, topic, map[int32]int64{0: 1})
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		c.WaitGroupState(t, "workers-"+topic, "Stable")
	}

	code, res, _ := checkJSONRun(t, "--bootstrap-server", c.Addrs[0], "--group", "workers-orders",
		"--topic", "orders", "--recovery-window", "72h")
	if code != ExitUnknown || !hasReason(res, "OffsetsMayExpireBeforeWindow") || res.GroupProtocol != "consumer" {
		t.Fatalf("idle KIP-848 partition: exit %d reasons %v protocol %s, want 2 OffsetsMayExpireBeforeWindow", code, reasons(res), res.GroupProtocol)
	}
	if code, res, _ := checkJSONRun(t, "--bootstrap-server", c.Addrs[0], "--group", "workers-payments",
		"--topic", "payments", "--recovery-window", "72h"); code != ExitProven {
		t.Fatalf("busy KIP-848 partition: exit %d reasons %v, want 0", code, reasons(res))
	}
}
