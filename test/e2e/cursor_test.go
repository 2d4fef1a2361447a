package e2e

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	rgv1 "github.com/retentionguard/retention-guard/api/v1alpha1"
	"github.com/retentionguard/retention-guard/internal/cursor/cursortest"
	"github.com/retentionguard/retention-guard/test/e2e/e2eutil"
)

// The business cursor database: a real PostgreSQL from Debian's package,
// started on first use, stopped by TestMain.
var pg = cursortest.LazyPostgres()

// cursorPolicy creates a Deny policy with spec.cursor reading seed 003's
// table through the Secret settle-db.
func cursorPolicy(t *testing.T, ns, name, group, topic, app string, resume rgv1.ResumeFrom) *rgv1.ConsumerRetentionPolicy {
	t.Helper()
	p := &rgv1.ConsumerRetentionPolicy{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: rgv1.ConsumerRetentionPolicySpec{
			GroupID:        group,
			Topics:         []string{topic},
			RecoveryWindow: metav1.Duration{Duration: 240 * time.Hour},
			Selector:       metav1.LabelSelector{MatchLabels: map[string]string{"app": app}},
			Enforcement:    rgv1.EnforcementDeny,
			CheckInterval:  &metav1.Duration{Duration: 10 * time.Second},
			Kafka:          rgv1.PolicyKafka{BootstrapServers: []string{stk.BrokerAddr}},
			Cursor: &rgv1.CursorSpec{ResumeFrom: resume, SQL: rgv1.CursorSQL{
				Driver: rgv1.CursorDriverPostgres, SecretRef: rgv1.SecretKeyReference{Name: "settle-db", Key: "dsn"}}},
		},
	}
	e2eutil.Must(t, stk.Env.Client.Create(e2eutil.Ctx(t), p))
	return p
}

// Seed 003 to its end, through the installed product (the chart's RBAC
// and flags, the manager binary, the broker process) with the business
// cursor table in a real PostgreSQL: the group's offsets expired during
// the outage, and the guard proves the consumer can resume from its
// cursor (the nightly run is allowed); a partition whose cursor then fell
// behind the log start is refused with the count; an auto-committing twin
// whose group ran ahead of its cursor is refused with GroupAheadOfCursor.
// The connection string's password appears nowhere.
func TestSeed003BusinessCursor(t *testing.T) {
	ctx := e2eutil.Ctx(t)
	db := pg.Get(t)
	const ns, topic, group = "settlement-cursor", "settle-ledger", "ledger-settle-cursor"
	stk.Admin().Namespace(t, ns)
	e2eutil.Must(t, kafka.CreateTopic(ctx, topic, 3, map[string]string{"retention.ms": "2592000000"}))
	e2eutil.Must(t, kafka.Produce(ctx, topic, 3, 200))
	// The last run processed everything, wrote its cursor in the same
	// transaction as the settlement, and committed.
	e2eutil.Must(t, db.CursorTable(ctx, "consumer_cursor"))
	for p := range int32(3) {
		e2eutil.Must(t, db.WriteCursor(ctx, "consumer_cursor", group, p, 199))
	}
	e2eutil.Must(t, kafka.CommitAsMember(ctx, group, topic, map[int32]int64{0: 200, 1: 200, 2: 200}))
	e2eutil.Must(t, stk.Env.Client.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "settle-db"},
		StringData: map[string]string{"dsn": db.AdminDSN()}}))

	// Eight days down: new tasks, retention moves the log start to 150,
	// the group's offsets expire.
	e2eutil.Must(t, kafka.Produce(ctx, topic, 3, 150))
	e2eutil.Must(t, kafka.DeleteRecords(ctx, topic, map[int32]int64{0: 150, 1: 150, 2: 150}))
	e2eutil.Must(t, kafka.SetBrokerConfig(ctx, "offset.retention.ms", "500"))
	restored := false
	restore := func() {
		if !restored {
			restored = true
			e2eutil.Must(t, kafka.SetBrokerConfig(context.Background(), "offset.retention.ms", brokerConfigs["offset.retention.ms"]))
		}
	}
	defer restore()
	deadline := time.Now().Add(20 * time.Second)
	for {
		committed, err := kafka.Committed(ctx, group, topic)
		e2eutil.Must(t, err)
		if len(committed) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the group's offsets did not expire: %v", committed)
		}
		time.Sleep(200 * time.Millisecond)
	}
	restore()

	p := cursorPolicy(t, ns, "settle", group, topic, "settle", rgv1.ResumeFromCursor)
	key := client.ObjectKeyFromObject(p)
	deployment(t, ns, "settle", "settle", 0)
	p = stk.Admin().WaitPolicy(t, key, 30*time.Second, "Proven from the cursor", e2eutil.Proven)
	if c := p.Status.Proof.Cursor; c == nil || c.ResumeFrom != rgv1.ResumeFromCursor {
		t.Errorf("status.proof.cursor = %+v", c)
	}
	e2eutil.Contains(t, "the Ready message", e2eutil.Ready(p).Message, "resume from its business cursor without losing a record")
	e2eutil.Contains(t, "the OffsetsInRange condition", e2eutil.Describe(p), "OffsetsInRange=False NoCommittedOffset: not deciding")
	e2eutil.Must(t, stk.Admin().Scale(t, ns, "settle", 1)) // the nightly run resumes from its cursor
	e2eutil.Must(t, stk.Admin().Scale(t, ns, "settle", 0))

	// Partition 2's cursor falls behind: the run stopped at offset 159 and
	// retention moved the log start to 170.
	e2eutil.Must(t, db.WriteCursor(ctx, "consumer_cursor", group, 2, 159))
	e2eutil.Must(t, kafka.DeleteRecords(ctx, topic, map[int32]int64{2: 170}))
	p = stk.Admin().WaitPolicy(t, key, 30*time.Second, "Violated with CursorExpired", func(p *rgv1.ConsumerRetentionPolicy) bool {
		return e2eutil.Verdict(p) == "Violated" && e2eutil.Ready(p).Reason == "CursorExpired"
	})
	if p.Status.Proof.ExpiredRecords != 10 {
		t.Errorf("expiredRecords %d, want 10 (log start 170 - cursor 160): %s", p.Status.Proof.ExpiredRecords, e2eutil.Describe(p))
	}
	msg := e2eutil.Denied(t, stk.Admin().Scale(t, ns, "settle", 1))
	t.Logf("denial:\n%s", msg)
	e2eutil.Contains(t, "the denial", msg,
		"CursorExpired: cursor 160 is below log start 170 on "+topic+"[2]: 10 records were never processed and are gone — reconcile them from the source")
	stk.Admin().WaitEvent(t, p, "Warning", "CursorExpired")

	// The auto-committing twin: enable.auto.commit=true committed what it
	// fetched (the log end, 350), while the business processed partition
	// 1 only up to 299.
	const twin = "ledger-settle-auto"
	for part, last := range map[int32]int64{0: 349, 1: 299, 2: 349} {
		e2eutil.Must(t, db.WriteCursor(ctx, "consumer_cursor", twin, part, last))
	}
	e2eutil.Must(t, kafka.CommitAsMember(ctx, twin, topic, map[int32]int64{0: 350, 1: 350, 2: 350}))
	tp := cursorPolicy(t, ns, "settle-auto", twin, topic, "settle-auto", "")
	tkey := client.ObjectKeyFromObject(tp)
	deployment(t, ns, "settle-auto", "settle-auto", 0)
	tp = stk.Admin().WaitPolicy(t, tkey, 30*time.Second, "Violated with GroupAheadOfCursor", func(p *rgv1.ConsumerRetentionPolicy) bool {
		return e2eutil.Verdict(p) == "Violated" && e2eutil.Ready(p).Reason == "GroupAheadOfCursor"
	})
	if c := tp.Status.Proof.Cursor; c == nil || c.AheadRecords != 50 || c.ResumeFrom != rgv1.ResumeFromGroupOffsets {
		t.Errorf("status.proof.cursor = %+v, want 50 records ahead, resumeFrom GroupOffsets", c)
	}
	msg = e2eutil.Denied(t, stk.Admin().Scale(t, ns, "settle-auto", 1))
	t.Logf("denial:\n%s", msg)
	e2eutil.Contains(t, "the denial", msg, "GroupAheadOfCursor: committed offset 350 is ahead of cursor 300 on "+topic+"[1]",
		"skips 50 records the business")

	log, err := os.ReadFile(stk.Manager.LogPath)
	e2eutil.Must(t, err)
	if strings.Contains(string(log), cursortest.Password) {
		t.Errorf("the cursor database's password appears in the manager's log")
	}
	for _, pol := range []*rgv1.ConsumerRetentionPolicy{p, tp} {
		if strings.Contains(e2eutil.Describe(pol), cursortest.Password) {
			t.Errorf("the password appears in the status of %s", pol.Name)
		}
	}
}
