package controllers

import (
	"context"
	"encoding/json"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"github.com/twmb/franz-go/pkg/kfake"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"

	rgv1 "github.com/retentionguard/retention-guard/api/v1alpha1"
	"github.com/retentionguard/retention-guard/internal/kafka/kafkatest"
	"github.com/retentionguard/retention-guard/internal/proof"
	"github.com/retentionguard/retention-guard/internal/resolve"
)

const (
	sevenDaysMs = int64(7 * 24 * time.Hour / time.Millisecond)
	eventually  = 20 * time.Second
	poll        = 100 * time.Millisecond
)

// logStart reads a partition's log start offset the way an operator would.
func logStart(t *testing.T, c *kafkatest.Cluster, topic string, partition int32) int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	offs, err := c.Admin(t).ListStartOffsets(ctx, topic)
	if err != nil {
		t.Fatalf("listing start offsets: %v", err)
	}
	o, ok := offs.Lookup(topic, partition)
	if !ok || o.Err != nil {
		t.Fatalf("no start offset for %s/%d: %v", topic, partition, o.Err)
	}
	return o.Offset
}

// topicConfig reads one config of a topic as the brokers report it.
func topicConfig(t *testing.T, c *kafkatest.Cluster, topic, key string) int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	rcs, err := c.Admin(t).DescribeTopicConfigs(ctx, topic)
	if err != nil {
		t.Fatalf("describing topic configs: %v", err)
	}
	rc, err := rcs.On(topic, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range rc.Configs {
		if c.Key == key && c.Value != nil {
			n, err := strconv.ParseInt(*c.Value, 10, 64)
			if err != nil {
				t.Fatalf("%s=%q: %v", key, *c.Value, err)
			}
			return n
		}
	}
	t.Fatalf("topic %s has no %s", topic, key)
	return 0
}

// Seed 003's batch group between runs, met by a manager that started
// while it was Empty (an upgrade, a node drain): Kafka deletes its offsets
// offsets.retention.minutes after it became Empty, and nothing the manager
// can read says when that was. It may be any moment: Unknown, never Proven
// (the broker-in-the-loop oracle's false Proven). The next run, seen
// Stable and then Empty, dates the clock: Proven.
func TestEmptyGroupSinceUnknownIsNotProven(t *testing.T) {
	c := kafkatest.NewCluster(t)
	c.CreateTopic(t, "settle-task", 2, map[string]string{"retention.ms": strconv.FormatInt(sevenDaysMs, 10)})
	c.Produce(t, "settle-task", 20)
	c.CommitAsMember(t, "ledger-settle-consumer", "settle-task", map[int32]int64{0: 10, 1: 10})
	h := startManager(t, harnessOptions{})
	createPolicy(t, h.ns, "settle", "ledger-settle-consumer", []string{"settle-task"}, policyOptions{servers: c.Addrs})

	g := NewWithT(t)
	g.Eventually(verdictOf(h.ns, "settle"), eventually, poll).Should(Equal(rgv1.VerdictUnknown))
	p := getPolicy(g, h.ns, "settle")
	g.Expect(readyReason(g, p)).To(Equal(proof.ReasonEmptyGroupOffsetsMayExpireBeforeWindow))
	g.Expect(p.Status.Proof.Violations).To(HaveLen(1))
	g.Expect(p.Status.Proof.Violations[0].Message).To(ContainSubstring("since when is not known"))
	g.Expect(p.Status.Proof.GroupEmptySince).To(BeNil())

	// The batch consumer runs again (a start the webhook allows: the
	// reason is a risk), commits and leaves.
	c.Produce(t, "settle-task", 20) // 10 more per partition
	cl := c.RunConsumer(t, "ledger-settle-consumer", "settle-task", map[int32]int64{0: 20, 1: 20})
	g.Eventually(func(g Gomega) string { return getPolicy(g, h.ns, "settle").Status.Proof.GroupState }, eventually, poll).
		Should(Equal("Stable"))
	g.Expect(verdictOf(h.ns, "settle")(g)).To(Equal(rgv1.VerdictProven))
	cl.Close()
	c.WaitGroupState(t, "ledger-settle-consumer", "Empty")
	g.Eventually(func(g Gomega) *rgv1.ProofStatus { return getPolicy(g, h.ns, "settle").Status.Proof }, eventually, poll).
		Should(And(HaveField("GroupState", "Empty"), HaveField("Verdict", rgv1.VerdictProven), HaveField("GroupEmptySince", Not(BeNil()))))
}

// A healthy group is proven, with the numbers kfake reports. The broker
// serves classic groups only: one that may convert the group would date
// every commit, and partition 2's, at offset 0, has no record before it
// (kfake has no __consumer_offsets to read it from).
func TestHealthyGroupIsProven(t *testing.T) {
	c := kafkatest.NewCluster(t, kafkatest.WithBrokerConfigs(map[string]string{"group.coordinator.rebalance.protocols": "classic"}))
	c.CreateTopic(t, "orders", 3, map[string]string{"retention.ms": strconv.FormatInt(sevenDaysMs, 10)})
	c.Produce(t, "orders", 30) // 10 per partition
	// The group's consumer runs (a classic group, Stable): no Empty clock.
	// (A consumer that committed and left would leave the group Empty
	// since a time the manager never saw: Unknown, see
	// TestEmptyGroupSinceUnknownIsNotProven.)
	c.RunConsumer(t, "billing", "orders", map[int32]int64{0: 10, 1: 4, 2: 0})
	h := startManager(t, harnessOptions{})

	createPolicy(t, h.ns, "billing", "billing", []string{"orders"}, policyOptions{servers: c.Addrs})

	g := NewWithT(t)
	g.Eventually(verdictOf(h.ns, "billing"), eventually, poll).Should(Equal(rgv1.VerdictProven))
	p := getPolicy(g, h.ns, "billing")
	assertConditions(g, p.Status, map[string]condWant{
		proof.ClauseKafkaReachable:        {metav1.ConditionTrue, proof.ReasonReachable},
		proof.ClauseRetentionCoversWindow: {metav1.ConditionTrue, proof.ReasonRetentionCoversWindow},
		proof.ClauseGroupOffsetsRetained:  {metav1.ConditionTrue, proof.ReasonGroupOffsetsRetained},
		proof.ClauseOffsetsInRange:        {metav1.ConditionTrue, proof.ReasonOffsetsInRange},
		proof.ClauseReady:                 {metav1.ConditionTrue, proof.ReasonProven},
	}, ConditionReconciling, ConditionStalled)
	g.Expect(p.Status.ObservedGeneration).To(Equal(p.Generation))

	ps := p.Status.Proof
	g.Expect(ps.ProofID).To(BeEmpty())
	g.Expect(ps.PartitionSummary).To(Equal(rgv1.PartitionSummary{Total: 3, InRange: 3}))
	g.Expect(ps.ExpiredRecords).To(BeZero())
	g.Expect(ps.Topics).To(HaveLen(1))
	g.Expect(ps.Topics[0].Name).To(Equal("orders"))
	g.Expect(*ps.Topics[0].RetentionMs).To(Equal(topicConfig(t, c, "orders", "retention.ms")))
	g.Expect(*ps.Topics[0].RetentionMs).To(Equal(sevenDaysMs))
	g.Expect(*ps.Topics[0].RetentionBytes).To(Equal(topicConfig(t, c, "orders", "retention.bytes")))
	g.Expect(ps.Topics[0].CleanupPolicy).To(Equal("delete"))
	g.Expect(ps.OffsetsRetentionMinutes).NotTo(BeNil())
	g.Expect(*ps.OffsetsRetentionMinutes).To(Equal(int64(10080)), "kfake's default offsets.retention.minutes")
	g.Expect(ps.GroupState).To(Equal("Stable"))
	g.Expect(ps.GroupProtocolType).To(Equal("consumer"))
	g.Expect(ps.OffsetExpiry).NotTo(BeNil())
	g.Expect(ps.OffsetExpiry.Clock).To(Equal(rgv1.ExpiryClockGroupEmpty))
	g.Expect(time.Since(ps.CheckedAt.Time)).To(BeNumerically("<", time.Minute))

	// One event: the first proof holds.
	g.Eventually(func(g Gomega) []string { return eventReasons(policyEvents(g, h.ns, "billing")) }, eventually, poll).
		Should(Equal([]string{EventReasonProven}))
	labels := map[string]string{"namespace": h.ns, "policy": "billing"}
	for verdict, want := range map[string]float64{"Proven": 1, "Violated": 0, "Unknown": 0} {
		v, ok := metricValue("retentionguard_policy_verdict", with(labels, "verdict", verdict))
		g.Expect(ok).To(BeTrue(), verdict)
		g.Expect(v).To(Equal(want), verdict)
	}
	v, ok := metricValue("retentionguard_expired_records", with(labels, "topic", "orders"))
	g.Expect(ok).To(BeTrue())
	g.Expect(v).To(BeZero())
	g.Expect(gauge(g, "retentionguard_policy_recovery_window_seconds", labels)).To(Equal((72 * time.Hour).Seconds()))
	g.Expect(gauge(g, "retentionguard_policy_info",
		with(with(with(labels, "consumer_group", "billing"), "enforcement", "Deny"), "reason", proof.ReasonProven))).To(Equal(1.0))
	g.Expect(seriesOf("retentionguard_kafka_request_duration_seconds", map[string]string{"api": "ListOffsets"})).NotTo(BeEmpty())

	// kstatus: a reconciled, proven policy is Current.
	g.Expect(kstatusOf(g, h.ns, "billing").Status).To(Equal(status.CurrentStatus))
}

func with(labels map[string]string, k, v string) map[string]string {
	out := map[string]string{k: v}
	for lk, lv := range labels {
		out[lk] = lv
	}
	return out
}

// Seed 000, live: a fan-out consumer stays down past retention. While it
// lags, 200ms of retention leave the record at its committed offset no
// headroom for its window: Violated with RecoveryHeadroomShorterThanWindow
// (issue 22 item 6; a risk). Retention deletes the records past its
// committed offset; within one check interval the policy is Violated with
// the exact number of expired records, an event marking the loss and the
// metric. Resetting the group's offsets to log start proves it again.
func TestSeed000ExpiredCommittedOffset(t *testing.T) {
	c := kafkatest.NewCluster(t)
	// 200ms of retention, applied only when the test calls ApplyRetention.
	c.CreateTopic(t, "outbox", 2, map[string]string{"retention.ms": "200"})
	c.Produce(t, "outbox", 20) // one batch of 10 per partition
	// Seed 000's fan-out assigns its partitions statically and commits: a
	// simple group, whose offsets expire per commit. Once retention has
	// deleted the records before its committed offsets nothing dates its
	// commits but __consumer_offsets, which the policy reads.
	c.CreateOffsetsTopic(t, 3)
	c.CommitOffsets(t, "fanout", "outbox", map[int32]int64{0: 3, 1: 10})
	c.LogCommits(t, "fanout")
	const interval = 2 * time.Second
	h := startManager(t, harnessOptions{interval: interval})
	createPolicy(t, h.ns, "fanout", "fanout", []string{"outbox"},
		policyOptions{servers: c.Addrs, window: 100 * time.Millisecond})

	g := NewWithT(t)
	g.Eventually(verdictOf(h.ns, "fanout"), eventually, poll).Should(Equal(rgv1.VerdictViolated))
	g.Expect(readyReason(g, getPolicy(g, h.ns, "fanout"))).To(Equal(proof.ReasonRecoveryHeadroomShorterThanWindow),
		"200ms of retention leaves the lagging partition no headroom for its window")

	// The consumer is down; retention deletes what it has not read.
	g.Eventually(func() int64 {
		c.ApplyRetention()
		return logStart(t, c, "outbox", 0)
	}, eventually, 50*time.Millisecond).Should(BeNumerically(">", 3))
	start := logStart(t, c, "outbox", 0)
	g.Expect(logStart(t, c, "outbox", 1)).To(Equal(int64(10)), "partition 1 was read to its end: nothing lost there")
	deleted := time.Now()

	g.Eventually(func(g Gomega) string { return readyReason(g, getPolicy(g, h.ns, "fanout")) }, interval+10*time.Second, poll).
		Should(Equal(proof.ReasonCommittedOffsetExpired))
	t.Logf("Violated %s after retention deleted the records (check interval %s)", time.Since(deleted).Round(time.Millisecond), interval)
	p := getPolicy(g, h.ns, "fanout")
	g.Expect(readyReason(g, p)).To(Equal(proof.ReasonCommittedOffsetExpired))
	assertConditions(g, p.Status, map[string]condWant{
		proof.ClauseOffsetsInRange: {metav1.ConditionFalse, proof.ReasonCommittedOffsetExpired},
		proof.ClauseReady:          {metav1.ConditionFalse, proof.ReasonCommittedOffsetExpired},
	}, ConditionStalled, ConditionReconciling)
	ps := p.Status.Proof
	g.Expect(ps.ExpiredRecords).To(Equal(start - 3))
	g.Expect(ps.PartitionSummary).To(Equal(rgv1.PartitionSummary{Total: 2, InRange: 1, Expired: 1}))
	g.Expect(ps.Violations).To(HaveLen(1))
	g.Expect(ps.Violations[0].Reason).To(Equal(proof.ReasonCommittedOffsetExpired))
	g.Expect(*ps.Violations[0].Partition).To(Equal(int32(0)))
	proofID := ps.ProofID
	g.Expect(proofID).NotTo(BeEmpty())

	ev := eventWith(h.ns, "fanout", proof.ReasonCommittedOffsetExpired)
	g.Eventually(ev, eventually, poll).ShouldNot(BeNil())
	e := ev(g)
	g.Expect(e.Type).To(Equal(corev1.EventTypeWarning))
	g.Expect(e.Note).To(ContainSubstring("was Violated: " + proof.ReasonRecoveryHeadroomShorterThanWindow))
	g.Expect(e.Note).To(ContainSubstring("committed offset 3"))
	g.Expect(e.Note).To(ContainSubstring("log start " + strconv.FormatInt(start, 10)))
	g.Expect(e.Note).To(ContainSubstring(strconv.FormatInt(start-3, 10) + " records expired"))
	g.Expect(e.Note).To(ContainSubstring(proofID))

	labels := map[string]string{"namespace": h.ns, "policy": "fanout"}
	g.Expect(gauge(g, "retentionguard_expired_records", with(labels, "topic", "outbox"))).To(Equal(float64(start - 3)))
	g.Expect(gauge(g, "retentionguard_policy_verdict", with(labels, "verdict", "Violated"))).To(Equal(1.0))
	g.Expect(gauge(g, "retentionguard_policy_verdict", with(labels, "verdict", "Proven"))).To(Equal(0.0))

	// The same gap on the next checks: the same proofID, no new event, and
	// no new status write: the heartbeat Lease confirms the proof.
	checked := p.Status.Proof.CheckedAt
	g.Eventually(heartbeatRenewed(p), eventually, poll).Should(BeTemporally(">", checked.Time))
	g.Expect(getPolicy(g, h.ns, "fanout").Status.Proof.CheckedAt).To(Equal(checked))
	g.Expect(getPolicy(g, h.ns, "fanout").Status.Proof.ProofID).To(Equal(proofID))
	g.Expect(eventReasons(policyEvents(g, h.ns, "fanout"))).To(Equal([]string{proof.ReasonRecoveryHeadroomShorterThanWindow, proof.ReasonCommittedOffsetExpired}))

	// The way out: reset the group's offsets to log start.
	c.CommitOffsets(t, "fanout", "outbox", map[int32]int64{0: start})
	c.LogCommits(t, "fanout")
	g.Eventually(verdictOf(h.ns, "fanout"), interval+10*time.Second, poll).Should(Equal(rgv1.VerdictProven))
	p = getPolicy(g, h.ns, "fanout")
	g.Expect(p.Status.Proof.ProofID).To(BeEmpty())
	g.Expect(p.Status.Proof.ExpiredRecords).To(BeZero())
	g.Expect(readyReason(g, p)).To(Equal(proof.ReasonProven))
	g.Eventually(eventWith(h.ns, "fanout", EventReasonRecovered), eventually, poll).ShouldNot(BeNil())
	g.Expect(gauge(g, "retentionguard_policy_verdict", with(labels, "verdict", "Proven"))).To(Equal(1.0))
	g.Expect(gauge(g, "retentionguard_expired_records", with(labels, "topic", "outbox"))).To(Equal(0.0))
}

// Seed 003, live: the group's committed offsets are gone (deleted, as
// expiry does) while the log no longer starts at 0: nothing proves the
// group read what was deleted.
func TestSeed003OffsetsGone(t *testing.T) {
	c := kafkatest.NewCluster(t)
	c.CreateTopic(t, "settle-task", 1, map[string]string{"retention.ms": strconv.FormatInt(30*24*int64(time.Hour/time.Millisecond), 10)})
	c.Produce(t, "settle-task", 20)
	c.DeleteRecords(t, "settle-task", 0, 5)
	c.Commit(t, "ledger-settle-consumer", "settle-task", 0, 12)
	h := startManager(t, harnessOptions{interval: 2 * time.Second})
	createPolicy(t, h.ns, "settle", "ledger-settle-consumer", []string{"settle-task"}, policyOptions{servers: c.Addrs})

	g := NewWithT(t)
	g.Eventually(verdictOf(h.ns, "settle"), eventually, poll).Should(Equal(rgv1.VerdictProven))

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := c.Admin(t).DeleteGroup(ctx, "ledger-settle-consumer")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(resp.Err).NotTo(HaveOccurred())

	g.Eventually(verdictOf(h.ns, "settle"), eventually, poll).Should(Equal(rgv1.VerdictViolated))
	p := getPolicy(g, h.ns, "settle")
	g.Expect(readyReason(g, p)).To(Equal(proof.ReasonNoCommittedOffset))
	g.Expect(p.Status.Proof.PartitionSummary).To(Equal(rgv1.PartitionSummary{Total: 1, Missing: 1}))
	g.Expect(p.Status.Proof.Violations).To(HaveLen(1))
	g.Expect(p.Status.Proof.Violations[0].Message).To(ContainSubstring("log start is 5"))
	g.Eventually(eventWith(h.ns, "settle", proof.ReasonNoCommittedOffset), eventually, poll).ShouldNot(BeNil())
}

// A stopped broker makes the proof Unknown (fail closed), and a broker back
// on the same address with the data makes it Proven again.
func TestBrokerDownAndBack(t *testing.T) {
	seed := func(c *kafkatest.Cluster) {
		c.CreateTopic(t, "orders", 2, map[string]string{"retention.ms": strconv.FormatInt(sevenDaysMs, 10)})
		c.Produce(t, "orders", 20)
		c.CommitOffsets(t, "billing", "orders", map[int32]int64{0: 10, 1: 7})
	}
	c := kafkatest.NewCluster(t)
	seed(c)
	_, portText, err := net.SplitHostPort(c.Addrs[0])
	if err != nil {
		t.Fatal(err)
	}
	port, _ := strconv.Atoi(portText)
	h := startManager(t, harnessOptions{interval: 2 * time.Second})
	createPolicy(t, h.ns, "billing", "billing", []string{"orders"}, policyOptions{servers: c.Addrs})

	g := NewWithT(t)
	g.Eventually(verdictOf(h.ns, "billing"), eventually, poll).Should(Equal(rgv1.VerdictProven))

	c.Close()
	g.Eventually(verdictOf(h.ns, "billing"), 30*time.Second, poll).Should(Equal(rgv1.VerdictUnknown))
	p := getPolicy(g, h.ns, "billing")
	assertConditions(g, p.Status, map[string]condWant{
		proof.ClauseKafkaReachable: {metav1.ConditionFalse, proof.ReasonBrokerUnreachable},
		proof.ClauseReady:          {metav1.ConditionUnknown, proof.ReasonBrokerUnreachable},
	}, ConditionStalled)
	g.Expect(p.Status.Proof.ProofID).NotTo(BeEmpty())
	g.Eventually(eventWith(h.ns, "billing", proof.ReasonBrokerUnreachable), eventually, poll).ShouldNot(BeNil())

	c2 := kafkatest.NewCluster(t, kafkatest.WithKfake(kfake.Ports(port)))
	g.Expect(c2.Addrs).To(Equal(c.Addrs))
	seed(c2)
	g.Eventually(verdictOf(h.ns, "billing"), 30*time.Second, poll).Should(Equal(rgv1.VerdictProven))
	g.Eventually(eventWith(h.ns, "billing", EventReasonRecovered), eventually, poll).ShouldNot(BeNil())
	g.Expect(eventReasons(policyEvents(g, h.ns, "billing"))).To(Equal(
		[]string{EventReasonProven, proof.ReasonBrokerUnreachable, EventReasonRecovered}))
}

// A SASL Secret rotated to a wrong password takes effect at once
// (AuthenticationFailed), and the password shows in no status field, no
// event and no log line, even at the highest verbosity.
func TestRotatedSASLSecret(t *testing.T) {
	const (
		right = "correct-horse-Battery-5taple"
		wrong = "wr0ng-Passw0rd-9f3c1e77"
	)
	c := kafkatest.NewCluster(t, kafkatest.WithSASL("SCRAM-SHA-512", "guard", right))
	c.CreateTopic(t, "orders", 1, map[string]string{"retention.ms": strconv.FormatInt(sevenDaysMs, 10)})
	c.Produce(t, "orders", 5)
	c.Commit(t, "billing", "orders", 0, 5)
	// A long interval: only the Secret watch can make the rotation take effect
	// within the test's deadlines.
	h := startManager(t, harnessOptions{interval: time.Hour, logLevel: 5})

	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "kafka-user", Namespace: h.ns},
		Data:       map[string][]byte{"username": []byte("guard"), "password": []byte(right)},
	}
	g := NewWithT(t)
	g.Expect(env.Client.Create(testCtx(t), secret)).To(Succeed())
	createPolicy(t, h.ns, "billing", "billing", []string{"orders"}, policyOptions{servers: c.Addrs, sasl: "kafka-user"})
	g.Eventually(verdictOf(h.ns, "billing"), eventually, poll).Should(Equal(rgv1.VerdictProven))

	secret.Data["password"] = []byte(wrong)
	g.Expect(env.Client.Update(testCtx(t), secret)).To(Succeed())
	g.Eventually(func(g Gomega) string {
		c := condition(getPolicy(g, h.ns, "billing").Status, proof.ClauseKafkaReachable)
		g.Expect(c).NotTo(BeNil())
		return c.Reason
	}, eventually, poll).Should(Equal(proof.ReasonAuthenticationFailed))
	p := getPolicy(g, h.ns, "billing")
	g.Expect(p.Status.Proof.Verdict).To(Equal(rgv1.VerdictUnknown))
	g.Expect(readyReason(g, p)).To(Equal(proof.ReasonAuthenticationFailed))
	g.Eventually(eventWith(h.ns, "billing", proof.ReasonAuthenticationFailed), eventually, poll).ShouldNot(BeNil())

	statusJSON, err := json.Marshal(p.Status)
	g.Expect(err).NotTo(HaveOccurred())
	eventsJSON, err := json.Marshal(policyEvents(g, h.ns, "billing"))
	g.Expect(err).NotTo(HaveOccurred())
	logs := h.logs.String()
	// The capture is real: it holds the SASL exchange (franz-go's debug
	// logs) and the reconciler's account of the failure.
	g.Expect(strings.Contains(logs, "SASLAuthenticate")).To(BeTrue(), "franz-go's SASL logs were captured")
	g.Expect(strings.Contains(logs, proof.ReasonAuthenticationFailed)).To(BeTrue(), "the failure was logged")
	for _, pw := range []string{wrong, right} {
		mustNotContain(t, pw, map[string]string{
			"status": string(statusJSON), "events": string(eventsJSON), "logs": logs,
		})
	}
}

// A policy naming a server outside --allowed-bootstrap-servers is refused
// without a connection: the listener it names never accepts one. The same
// listener, allowed, is dialed: the check can fail.
func TestBootstrapServerNotAllowed(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	var accepted atomic.Int64
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			accepted.Add(1)
			_ = conn.Close()
		}
	}()

	const interval = time.Second
	h := startManager(t, harnessOptions{interval: interval, allow: []string{"*.kafka.svc:9093"}})
	createPolicy(t, h.ns, "rogue", "billing", []string{"orders"}, policyOptions{servers: []string{ln.Addr().String()}})

	g := NewWithT(t)
	g.Eventually(verdictOf(h.ns, "rogue"), eventually, poll).Should(Equal(rgv1.VerdictUnknown))
	p := getPolicy(g, h.ns, "rogue")
	assertConditions(g, p.Status, map[string]condWant{
		proof.ClauseKafkaReachable: {metav1.ConditionFalse, proof.ReasonBootstrapServerNotAllowed},
		proof.ClauseReady:          {metav1.ConditionFalse, proof.ReasonBootstrapServerNotAllowed},
		ConditionStalled:           {metav1.ConditionTrue, proof.ReasonBootstrapServerNotAllowed},
	}, ConditionReconciling)
	g.Expect(condition(p.Status, proof.ClauseReady).Message).To(ContainSubstring(ln.Addr().String()))
	g.Expect(p.Status.ObservedGeneration).To(Equal(p.Generation))
	g.Eventually(eventWith(h.ns, "rogue", proof.ReasonBootstrapServerNotAllowed), eventually, poll).ShouldNot(BeNil())
	g.Expect(gauge(g, "retentionguard_policy_verdict",
		map[string]string{"namespace": h.ns, "policy": "rogue", "verdict": "Unknown"})).To(Equal(1.0))
	// kstatus: a policy that needs a person is Failed.
	g.Expect(kstatusOf(g, h.ns, "rogue").Status).To(Equal(status.FailedStatus))
	g.Consistently(accepted.Load, 3*interval, poll).Should(BeZero(), "no connection was ever attempted")
	h.stop()

	// Control: allowed, the same listener is dialed.
	startManager(t, harnessOptions{namespace: h.ns, interval: interval, allow: []string{"127.0.0.1:*"}})
	g.Eventually(accepted.Load, eventually, poll).Should(BeNumerically(">", 0))
	g.Eventually(func(g Gomega) string {
		return condition(getPolicy(g, h.ns, "rogue").Status, proof.ClauseKafkaReachable).Reason
	}, eventually, poll).Should(Equal(proof.ReasonBrokerUnreachable))
}

// Secure by default (the chart's allowedBootstrapServers: []): a policy
// naming any server inline, or through a KafkaConnection of its namespace,
// makes the manager dial nothing: no port scanner for whoever may create a
// policy. Both are Stalled, BootstrapServerNotAllowed, and the message says
// how to allow the server (or to use a ClusterKafkaConnection).
func TestEmptyAllowlistDialsNothing(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	var accepted atomic.Int64
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			accepted.Add(1)
			_ = conn.Close()
		}
	}()

	const interval = time.Second
	system := labeledNamespace(t, "rg-system-", nil)
	h := startManager(t, harnessOptions{interval: interval, managerNamespace: system, allow: []string{}, cursorHosts: []string{}})
	createPolicy(t, h.ns, "inline", "billing", []string{"orders"}, policyOptions{servers: []string{ln.Addr().String()}})
	g := NewWithT(t)
	g.Expect(env.Client.Create(testCtx(t), &rgv1.KafkaConnection{ObjectMeta: metav1.ObjectMeta{Namespace: h.ns, Name: "scan"},
		Spec: rgv1.KafkaConnectionSpec{BootstrapServers: []string{ln.Addr().String()}}})).To(Succeed())
	refPolicy(t, h.ns, "via-connection", "billing", []string{"orders"}, rgv1.KindKafkaConnection, "scan")

	for _, name := range []string{"inline", "via-connection"} {
		g.Eventually(func(g Gomega) string { return readyReason(g, getPolicy(g, h.ns, name)) }, eventually, poll).
			Should(Equal(proof.ReasonBootstrapServerNotAllowed), name)
		p := getPolicy(g, h.ns, name)
		g.Expect(p.Status.Proof).NotTo(BeNil())
		g.Expect(p.Status.Proof.Verdict).To(Equal(rgv1.VerdictUnknown), name)
		g.Expect(condition(p.Status, ConditionStalled).Status).To(Equal(metav1.ConditionTrue), name)
		g.Expect(condition(p.Status, proof.ClauseReady).Message).To(And(ContainSubstring(ln.Addr().String()),
			ContainSubstring("--allowed-bootstrap-servers is empty"), ContainSubstring("allowedBootstrapServers"),
			ContainSubstring("ClusterKafkaConnection")), name)
	}
	g.Consistently(accepted.Load, 3*interval, poll).Should(BeZero(), "no connection was ever attempted")
}

// kstatus conformance over a policy's life: proof pending is InProgress
// (Reconciling=True), a spec problem is Failed (Stalled=True), fixing it
// leads to Current once proven.
func TestKstatusConformance(t *testing.T) {
	c := kafkatest.NewCluster(t, kafkatest.WithSASL("SCRAM-SHA-512", "guard", "pw-1"))
	c.CreateTopic(t, "orders", 1, map[string]string{"retention.ms": strconv.FormatInt(sevenDaysMs, 10)})
	c.Produce(t, "orders", 5)
	c.Commit(t, "billing", "orders", 0, 5)

	// A broker that accepts connections and never answers keeps the first
	// proof pending for the whole pass.
	silent := silentListener(t)

	h := startManager(t, harnessOptions{interval: 2 * time.Second})
	g := NewWithT(t)

	createPolicy(t, h.ns, "pending", "billing", []string{"orders"}, policyOptions{servers: []string{silent.Addr().String()}})
	g.Eventually(func(g Gomega) *metav1.Condition {
		return condition(getPolicy(g, h.ns, "pending").Status, ConditionReconciling)
	}, eventually, poll).ShouldNot(BeNil())
	res := kstatusOf(g, h.ns, "pending")
	g.Expect(res.Status).To(Equal(status.InProgressStatus))
	p := getPolicy(g, h.ns, "pending")
	g.Expect(condition(p.Status, proof.ClauseReady).Status).To(Equal(metav1.ConditionUnknown))
	g.Expect(readyReason(g, p)).To(Equal(ReasonProofPending))

	// A Secret without its password: Stalled, kstatus Failed.
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "kafka-user", Namespace: h.ns},
		Data:       map[string][]byte{"username": []byte("guard")},
	}
	g.Expect(env.Client.Create(testCtx(t), secret)).To(Succeed())
	createPolicy(t, h.ns, "billing", "billing", []string{"orders"}, policyOptions{servers: c.Addrs, sasl: "kafka-user"})
	g.Eventually(func(g Gomega) status.Status { return kstatusOf(g, h.ns, "billing").Status }, eventually, poll).
		Should(Equal(status.FailedStatus))
	p = getPolicy(g, h.ns, "billing")
	assertConditions(g, p.Status, map[string]condWant{
		ConditionStalled:  {metav1.ConditionTrue, resolve.ReasonSecretKeyMissing},
		proof.ClauseReady: {metav1.ConditionFalse, resolve.ReasonSecretKeyMissing},
	}, ConditionReconciling)
	g.Expect(condition(p.Status, proof.ClauseReady).Message).To(ContainSubstring(`"password"`))

	// The Secret is fixed: the watch brings the policy back, and it is
	// proven: Current.
	secret.Data["password"] = []byte("pw-1")
	g.Expect(env.Client.Update(testCtx(t), secret)).To(Succeed())
	g.Eventually(func(g Gomega) status.Status { return kstatusOf(g, h.ns, "billing").Status }, eventually, poll).
		Should(Equal(status.CurrentStatus))
	p = getPolicy(g, h.ns, "billing")
	g.Expect(p.Status.Proof.Verdict).To(Equal(rgv1.VerdictProven))
	assertConditions(g, p.Status, nil, ConditionStalled, ConditionReconciling)

	// A new generation: observedGeneration catches up once it is proven,
	// and the policy is Current again.
	p.Spec.RecoveryWindow = metav1.Duration{Duration: 48 * time.Hour}
	g.Expect(env.Client.Update(testCtx(t), p)).To(Succeed())
	g.Eventually(func(g Gomega) int64 { return getPolicy(g, h.ns, "billing").Status.ObservedGeneration }, eventually, poll).
		Should(Equal(p.Generation))
	g.Expect(kstatusOf(g, h.ns, "billing").Status).To(Equal(status.CurrentStatus))
}

// A deleted policy leaves no metric series behind, and its target is
// unregistered.
func TestDeletedPolicyLosesItsSeries(t *testing.T) {
	c := kafkatest.NewCluster(t)
	c.CreateTopic(t, "orders", 2, map[string]string{"retention.ms": strconv.FormatInt(sevenDaysMs, 10)})
	c.Produce(t, "orders", 20)
	c.CommitOffsets(t, "billing", "orders", map[int32]int64{0: 10, 1: 10})
	h := startManager(t, harnessOptions{})
	p := createPolicy(t, h.ns, "billing", "billing", []string{"orders"}, policyOptions{servers: c.Addrs})

	g := NewWithT(t)
	g.Eventually(verdictOf(h.ns, "billing"), eventually, poll).Should(Equal(rgv1.VerdictProven))
	labels := map[string]string{"namespace": h.ns, "policy": "billing"}
	g.Expect(seriesOf("retentionguard_policy_verdict", labels)).To(HaveLen(3))
	g.Expect(seriesOf("retentionguard_expired_records", labels)).To(HaveLen(1))
	g.Expect(seriesOf("retentionguard_recovery_headroom_seconds", labels)).To(HaveLen(1))
	g.Expect(seriesOf("retentionguard_policy_recovery_window_seconds", labels)).To(HaveLen(1))
	g.Expect(seriesOf("retentionguard_policy_info", labels)).To(HaveLen(1))
	headroom, _ := metricValue("retentionguard_recovery_headroom_seconds", labels)
	g.Expect(headroom).To(Equal(float64(sevenDaysMs/1000)), "caught up: the full retention.ms")
	// Absolute: the check's time plus that headroom, in unix seconds.
	g.Expect(seriesOf("retentionguard_recovery_headroom_expiration_timestamp_seconds", labels)).To(HaveLen(1))
	expiresAt, _ := metricValue("retentionguard_recovery_headroom_expiration_timestamp_seconds", labels)
	g.Expect(expiresAt-float64(sevenDaysMs/1000)).To(BeNumerically("~", float64(time.Now().Unix()), 5*60),
		"checked within the last minutes")

	g.Expect(env.Client.Delete(testCtx(t), p)).To(Succeed())
	for _, name := range []string{
		"retentionguard_policy_verdict", "retentionguard_expired_records",
		"retentionguard_recovery_headroom_seconds", "retentionguard_group_offsets_expiry_seconds",
		"retentionguard_recovery_headroom_expiration_timestamp_seconds", "retentionguard_group_offsets_expiration_timestamp_seconds",
		"retentionguard_policy_recovery_window_seconds", "retentionguard_policy_info",
	} {
		g.Eventually(func() int { return len(seriesOf(name, labels)) }, eventually, poll).Should(BeZero(), name)
	}
	g.Eventually(h.coalescer.Registered, eventually, poll).Should(BeZero(), "the deleted policy's target is unregistered")
}

// silentListener accepts connections and never answers, like a hung
// broker. Its connections are closed when the test ends.
func silentListener(t *testing.T) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var (
		mu    sync.Mutex
		conns []net.Conn
	)
	t.Cleanup(func() {
		_ = ln.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			_ = c.Close()
		}
	})
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, conn)
			mu.Unlock()
		}
	}()
	return ln
}
