package controllers

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"

	rgv1 "github.com/retentionguard/retention-guard/api/v1alpha1"
	"github.com/retentionguard/retention-guard/internal/cursor/cursortest"
	"github.com/retentionguard/retention-guard/internal/kafka/kafkatest"
	"github.com/retentionguard/retention-guard/internal/proof"
	"github.com/retentionguard/retention-guard/internal/resolve"
)

// A real PostgreSQL for the business cursor tests, started on first use
// and stopped by TestMain.
var pg = cursortest.LazyPostgres()

// cursorDB creates seed 003's cursor table under its own name for a test
// and a Secret holding the connection string; it returns the spec.cursor.
func cursorDB(t *testing.T, db *cursortest.Server, ns, table, dsn string, resume rgv1.ResumeFrom) *rgv1.CursorSpec {
	t.Helper()
	if err := db.CursorTable(context.Background(), table); err != nil {
		t.Fatal(err)
	}
	name := strings.ReplaceAll(table, "_", "-")
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, StringData: map[string]string{"dsn": dsn}}
	if err := env.Client.Create(testCtx(t), secret); err != nil {
		t.Fatal(err)
	}
	return &rgv1.CursorSpec{ResumeFrom: resume, SQL: rgv1.CursorSQL{
		Driver:    rgv1.CursorDriverPostgres,
		SecretRef: rgv1.SecretKeyReference{Name: name, Key: "dsn"},
		Query:     fmt.Sprintf("SELECT partition_id AS partition, last_offset + 1 AS next_offset, updated_at FROM %s WHERE group_id = $1", table),
	}}
}

func writeCursor(t *testing.T, db *cursortest.Server, table, group string, cursors map[int32]int64) {
	t.Helper()
	for p, next := range cursors {
		if err := db.WriteCursor(context.Background(), table, group, p, next-1); err != nil {
			t.Fatal(err)
		}
	}
}

// settleTask is seed 003's topic after the outage: 2 partitions of 600
// records whose log start moved to 150.
func settleTask(t *testing.T, c *kafkatest.Cluster) {
	c.CreateTopic(t, "settle-task", 2, map[string]string{"retention.ms": fmt.Sprint((30 * 24 * time.Hour).Milliseconds())})
	for p := range int32(2) {
		c.ProduceTo(t, "settle-task", p, 600)
		c.DeleteRecords(t, "settle-task", p, 150)
	}
}

// Seed 003 to its end, through the reconciler: the group's offsets are
// gone, but the business cursor table in PostgreSQL says where processing
// stopped. Resuming from the cursor is proven; once a cursor falls behind
// the log start the policy is Violated with CursorExpired and the count.
func TestSeed003ResumeFromCursor(t *testing.T) {
	db := pg.Get(t)
	c := kafkatest.NewCluster(t)
	settleTask(t, c)
	h := startManager(t, harnessOptions{cursorHosts: []string{"127.0.0.1:*"}})
	spec := cursorDB(t, db, h.ns, "settle_cursor", db.AdminDSN(), rgv1.ResumeFromCursor)
	writeCursor(t, db, "settle_cursor", "ledger-settle-consumer", map[int32]int64{0: 200, 1: 600})
	createPolicy(t, h.ns, "settle", "ledger-settle-consumer", []string{"settle-task"}, policyOptions{servers: c.Addrs, window: 240 * time.Hour, cursor: spec})

	g := NewWithT(t)
	g.Eventually(verdictOf(h.ns, "settle"), eventually, poll).Should(Equal(rgv1.VerdictProven))
	p := getPolicy(g, h.ns, "settle")
	g.Expect(p.Status.Proof.Cursor).To(Equal(&rgv1.CursorStatus{ResumeFrom: rgv1.ResumeFromCursor}))
	inRange := condition(p.Status, proof.ClauseCursorInRange)
	g.Expect(inRange).NotTo(BeNil())
	g.Expect(inRange.Status).To(Equal(metav1.ConditionTrue))
	// The group offsets' facts stay in their conditions, marked as not
	// deciding, and are warned about.
	offsets := condition(p.Status, proof.ClauseOffsetsInRange)
	g.Expect(offsets.Status).To(Equal(metav1.ConditionFalse))
	g.Expect(offsets.Message).To(HavePrefix("not deciding (spec.cursor.resumeFrom Cursor"))
	g.Expect(strings.Join(p.Status.Proof.Warnings, "\n")).To(ContainSubstring("seek to the cursor on start: group offsets NoCommittedOffset"))
	g.Expect(kstatusOf(g, h.ns, "settle").Status).To(Equal(status.CurrentStatus))

	// Partition 1's cursor falls behind the log start: 10 records were
	// never processed and are gone.
	writeCursor(t, db, "settle_cursor", "ledger-settle-consumer", map[int32]int64{1: 140})
	g.Eventually(verdictOf(h.ns, "settle"), eventually, poll).Should(Equal(rgv1.VerdictViolated))
	p = getPolicy(g, h.ns, "settle")
	g.Expect(readyReason(g, p)).To(Equal(proof.ReasonCursorExpired))
	g.Expect(p.Status.Proof.ExpiredRecords).To(Equal(int64(10)))
	g.Expect(p.Status.Proof.PartitionSummary).To(Equal(rgv1.PartitionSummary{Total: 2, InRange: 1, Expired: 1}))
	g.Expect(p.Status.Proof.Violations).To(ConsistOf(rgv1.ViolationStatus{
		Reason: proof.ReasonCursorExpired, Topic: "settle-task", Partition: ptrTo(int32(1)),
		Message: "cursor 140 is below log start 150 on settle-task[1]: 10 records were never processed and are gone — reconcile them from the source",
		// The same numbers as data; the group has no committed offset.
		LogStart: ptrTo(int64(150)), LogEnd: ptrTo(int64(600)), ExpiredRecords: ptrTo(int64(10)), Cursor: ptrTo(int64(140)),
	}))
	g.Eventually(eventWith(h.ns, "settle", proof.ReasonCursorExpired), eventually, poll).ShouldNot(BeNil())
}

// Seed 003's auto-committing twin: the group committed what it fetched,
// 90 records ahead of what the business processed. Resuming from the
// group's offsets would skip them: Violated, GroupAheadOfCursor.
func TestGroupAheadOfCursor(t *testing.T) {
	db := pg.Get(t)
	c := kafkatest.NewCluster(t)
	settleTask(t, c)
	c.RunConsumer(t, "settle-auto", "settle-task", map[int32]int64{0: 600, 1: 250})
	h := startManager(t, harnessOptions{})
	spec := cursorDB(t, db, h.ns, "auto_cursor", db.AdminDSN(), "")
	writeCursor(t, db, "auto_cursor", "settle-auto", map[int32]int64{0: 600, 1: 160})
	createPolicy(t, h.ns, "auto", "settle-auto", []string{"settle-task"}, policyOptions{servers: c.Addrs, cursor: spec})

	g := NewWithT(t)
	g.Eventually(verdictOf(h.ns, "auto"), eventually, poll).Should(Equal(rgv1.VerdictViolated))
	p := getPolicy(g, h.ns, "auto")
	g.Expect(readyReason(g, p)).To(Equal(proof.ReasonGroupAheadOfCursor))
	g.Expect(p.Status.Proof.Cursor).To(Equal(&rgv1.CursorStatus{ResumeFrom: rgv1.ResumeFromGroupOffsets, AheadRecords: 90}))
	g.Expect(p.Status.Proof.Violations).To(HaveLen(1))
	g.Expect(p.Status.Proof.Violations[0].Message).To(ContainSubstring("skips 90 records the business never processed"))
	v := p.Status.Proof.Violations[0]
	g.Expect([]*int64{v.Committed, v.Cursor}).To(Equal([]*int64{ptrTo(int64(250)), ptrTo(int64(160))}), "the positions as data")
}

// What a person must fix about the cursor's source stalls the policy with
// the reason, and the proof still shows the Kafka facts with
// CursorUnreadable; a bad password is CursorUnreadable; no password
// appears in status, events or logs.
func TestCursorSourceProblems(t *testing.T) {
	db := pg.Get(t)
	c := kafkatest.NewCluster(t)
	settleTask(t, c)
	h := startManager(t, harnessOptions{cursorHosts: []string{"127.0.0.1:*"}})
	g := NewWithT(t)

	// The consumers resume from their cursors: only the cursor decides
	// (the group "g" has no offsets on a log that starts at 150).
	missing := &rgv1.CursorSpec{ResumeFrom: rgv1.ResumeFromCursor, SQL: rgv1.CursorSQL{Driver: rgv1.CursorDriverPostgres, SecretRef: rgv1.SecretKeyReference{Name: "nowhere", Key: "dsn"}}}
	createPolicy(t, h.ns, "missing", "g", []string{"settle-task"}, policyOptions{servers: c.Addrs, cursor: missing})
	stalled := func(name, reason string) {
		t.Helper()
		g.Eventually(func(g Gomega) string {
			p := getPolicy(g, h.ns, name)
			if s := condition(p.Status, ConditionStalled); s != nil && s.Status == metav1.ConditionTrue {
				return s.Reason
			}
			return ""
		}, eventually, poll).Should(Equal(reason))
		p := getPolicy(g, h.ns, name)
		g.Expect(p.Status.Proof.Verdict).To(Equal(rgv1.VerdictUnknown))
		g.Expect(readyReason(g, p)).To(Equal(proof.ReasonCursorUnreadable))
		g.Expect(condition(p.Status, proof.ClauseKafkaReachable).Status).To(Equal(metav1.ConditionTrue))
		g.Expect(kstatusOf(g, h.ns, name).Status).To(Equal(status.FailedStatus))
	}
	stalled("missing", resolve.ReasonSecretNotFound)

	// A host the manager does not allow is never contacted.
	far := cursorDB(t, db, h.ns, "far_cursor", "postgres://guard:"+cursortest.Password+"@db.elsewhere.example:5432/settlement", rgv1.ResumeFromCursor)
	createPolicy(t, h.ns, "far", "g", []string{"settle-task"}, policyOptions{servers: c.Addrs, cursor: far})
	stalled("far", resolve.ReasonDatabaseHostNotAllowed)

	// A wrong password: the cursor is unreadable, the message says why,
	// and the password is nowhere.
	const wrong = "Wr0ng-cursor-pa55"
	bad := cursorDB(t, db, h.ns, "bad_cursor", db.DSN(cursortest.User, wrong), rgv1.ResumeFromCursor)
	createPolicy(t, h.ns, "bad", "g", []string{"settle-task"}, policyOptions{servers: c.Addrs, cursor: bad})
	g.Eventually(func(g Gomega) string {
		p := getPolicy(g, h.ns, "bad")
		if c := condition(p.Status, proof.ClauseCursorInRange); c != nil {
			return c.Reason
		}
		return ""
	}, eventually, poll).Should(Equal(proof.ReasonCursorUnreadable))
	p := getPolicy(g, h.ns, "bad")
	g.Expect(condition(p.Status, proof.ClauseCursorInRange).Message).To(ContainSubstring("authentication failed"))
	g.Expect(condition(p.Status, ConditionStalled)).To(BeNil())

	// The missing Secret appears: the policy is no longer Stalled.
	cursorDB(t, db, h.ns, "nowhere", db.AdminDSN(), rgv1.ResumeFromCursor)
	g.Eventually(func(g Gomega) *metav1.Condition {
		return condition(getPolicy(g, h.ns, "missing").Status, ConditionStalled)
	}, eventually, poll).Should(BeNil())

	texts := map[string]string{"logs": h.logs.String(), "metrics": fmt.Sprint(scrape())}
	for _, name := range []string{"missing", "far", "bad"} {
		p := getPolicy(g, h.ns, name)
		texts["status of "+name] = fmt.Sprintf("%+v", p.Status)
		for _, e := range policyEvents(g, h.ns, name) {
			texts["event of "+name] += e.Note
		}
	}
	mustNotContain(t, wrong, texts)
	mustNotContain(t, cursortest.Password, texts)
}

// One tenant's slow database slows no other policy of its Kafka cluster:
// a policy whose cursor database accepts connections and never answers
// shares every pass of its cluster with a neighbour without a cursor. The
// neighbour is proven all the same (before, the cluster's batched pass read
// every cursor before anyone's log end: each pass waited for the silent
// database, up to twice the cursor timeout, and here ran out of its pass
// timeout first, so the neighbour stayed Unknown). The slow policy's
// cursor is unreadable, never Proven.
func TestSlowCursorDatabaseHoldsBackNoNeighbour(t *testing.T) {
	c := kafkatest.NewCluster(t)
	settleTask(t, c)
	c.CreateTopic(t, "orders", 1, map[string]string{"retention.ms": strconv.FormatInt(sevenDaysMs, 10)})
	c.Produce(t, "orders", 10)
	c.RunConsumer(t, "billing", "orders", map[int32]int64{0: 10})

	// The tenant's database: accepts, reads nothing, answers nothing, and
	// counts the connections the manager gave up on (closed).
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	var accepted, gaveUp atomic.Int64
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			accepted.Add(1)
			go func() {
				defer conn.Close()
				buf := make([]byte, 1024)
				for {
					if _, err := conn.Read(buf); err != nil {
						gaveUp.Add(1)
						return
					}
				}
			}()
		}
	}()

	ns := newNamespace(t)
	name := "slow-db"
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		StringData: map[string]string{"dsn": "postgres://guard:pw@" + ln.Addr().String() + "/settlement?sslmode=disable"}}
	if err := env.Client.Create(testCtx(t), secret); err != nil {
		t.Fatal(err)
	}
	spec := &rgv1.CursorSpec{SQL: rgv1.CursorSQL{Driver: rgv1.CursorDriverPostgres, SecretRef: rgv1.SecretKeyReference{Name: name, Key: "dsn"}}}
	// A cursor timeout beyond the pass timeout (6 s): a database that
	// never answers holds a cursor read for the whole pass.
	h := startManager(t, harnessOptions{namespace: ns, cursorTimeout: 10 * time.Second})
	createPolicy(t, ns, "slow", "ledger-settle-consumer", []string{"settle-task"}, policyOptions{servers: c.Addrs, window: 240 * time.Hour, cursor: spec})
	g := NewWithT(t)
	g.Eventually(accepted.Load, eventually, poll).Should(BeNumerically(">", 0), "the slow database was dialed")
	// From now on every pass of the cluster reads the silent database.
	createPolicy(t, ns, "neighbour", "billing", []string{"orders"}, policyOptions{servers: c.Addrs})
	g.Eventually(func(g Gomega) string {
		p := getPolicy(g, ns, "neighbour")
		if p.Status.Proof == nil {
			return "no proof"
		}
		return string(p.Status.Proof.Verdict) + " " + readyReason(g, p)
	}, 2*eventually, 20*time.Millisecond).Should(HavePrefix(string(rgv1.VerdictProven)))

	// Once its database times out, the slow policy's cursor is unreadable,
	// and the policy never Proven.
	g.Eventually(func(g Gomega) string {
		cond := condition(getPolicy(g, ns, "slow").Status, proof.ClauseCursorInRange)
		g.Expect(cond).NotTo(BeNil())
		return cond.Reason
	}, 2*eventually, poll).Should(Equal(proof.ReasonCursorUnreadable))
	g.Expect(getPolicy(g, ns, "slow").Status.Proof.Verdict).NotTo(Equal(rgv1.VerdictProven))
	g.Expect(gaveUp.Load()).To(BeNumerically(">", 0), "the manager gave up on the silent database")
	h.stop()
}

// A policy that names its connection (spec.kafka.connectionRef) keeps its
// cursor's Secret in its own namespace all the same: creating or rotating
// that Secret takes effect at once, not at the next check interval (an
// hour here). The Secret was indexed only for inline connections. The
// reasons the policy is Stalled with show it: first the missing Secret,
// then the host the new Secret's connection string names, which the
// manager does not allow (no database needed).
func TestConnectionRefPolicyCursorSecretWatched(t *testing.T) {
	c := kafkatest.NewCluster(t)
	settleTask(t, c)
	h := startManager(t, harnessOptions{cursorHosts: []string{"127.0.0.1:*"}, interval: time.Hour})
	kc := &rgv1.KafkaConnection{ObjectMeta: metav1.ObjectMeta{Namespace: h.ns, Name: "kafka"},
		Spec: rgv1.KafkaConnectionSpec{BootstrapServers: c.Addrs}}
	g := NewWithT(t)
	g.Expect(env.Client.Create(testCtx(t), kc)).To(Succeed())
	p := &rgv1.ConsumerRetentionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "settle", Namespace: h.ns},
		Spec: rgv1.ConsumerRetentionPolicySpec{
			GroupID: "ledger-settle-consumer", Topics: []string{"settle-task"},
			RecoveryWindow: metav1.Duration{Duration: 72 * time.Hour},
			Selector:       metav1.LabelSelector{MatchLabels: map[string]string{"app": "settle"}},
			CheckInterval:  &metav1.Duration{Duration: time.Hour},
			Kafka:          rgv1.PolicyKafka{ConnectionRef: &rgv1.ConnectionReference{Kind: rgv1.KindKafkaConnection, Name: "kafka"}},
			Cursor: &rgv1.CursorSpec{ResumeFrom: rgv1.ResumeFromCursor, SQL: rgv1.CursorSQL{
				Driver: rgv1.CursorDriverPostgres, SecretRef: rgv1.SecretKeyReference{Name: "settle-cursor", Key: "dsn"}}},
		},
	}
	g.Expect(env.Client.Create(testCtx(t), p)).To(Succeed())
	stalledReason := func(g Gomega) string {
		if s := condition(getPolicy(g, h.ns, "settle").Status, ConditionStalled); s != nil && s.Status == metav1.ConditionTrue {
			return s.Reason
		}
		return ""
	}
	g.Eventually(stalledReason, eventually, poll).Should(Equal(resolve.ReasonSecretNotFound))
	// Observed once: the next pass is an hour away.
	g.Eventually(func(g Gomega) metav1.ConditionStatus {
		if c := condition(getPolicy(g, h.ns, "settle").Status, proof.ClauseKafkaReachable); c != nil {
			return c.Status
		}
		return ""
	}, eventually, poll).Should(Equal(metav1.ConditionTrue))

	createSecret(t, h.ns, "settle-cursor", map[string]string{"dsn": "postgres://guard@db.elsewhere.example:5432/settlement"})
	g.Eventually(stalledReason, eventually, poll).Should(Equal(resolve.ReasonDatabaseHostNotAllowed))
}
