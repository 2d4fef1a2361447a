package webhook

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	rgv1 "github.com/retentionguard/retention-guard/api/v1alpha1"
	"github.com/retentionguard/retention-guard/internal/coalesce"
	"github.com/retentionguard/retention-guard/internal/cursor"
	"github.com/retentionguard/retention-guard/internal/cursor/cursortest"
	"github.com/retentionguard/retention-guard/internal/gather"
	"github.com/retentionguard/retention-guard/internal/kafka"
	"github.com/retentionguard/retention-guard/internal/kafka/kafkatest"
	"github.com/retentionguard/retention-guard/internal/resolve"
)

// A real PostgreSQL for the business cursor admission test, started on
// first use.
var pg = cursortest.LazyPostgres()

// Seed 003's nightly run scaled from zero, judged live by the product's
// own LiveChecker (the connection resolver, the observation coalescer, the
// Kafka observer and the cursor reader) against a kfake broker and the
// business cursor table in a real PostgreSQL: a cursor below the log start
// is refused with the cursor's numbers first; once the cursor is
// reconciled past it, the same start is allowed.
func TestStartJudgedLiveWithTheBusinessCursor(t *testing.T) {
	s := startSuite(t)
	db := pg.Get(t)
	ns := s.newNamespace(t, "settlement")
	ctx := ctxFor(t)

	c := kafkatest.NewCluster(t)
	c.CreateTopic(t, "settle-task", 2, map[string]string{"retention.ms": fmt.Sprint((30 * 24 * time.Hour).Milliseconds())})
	for p := range int32(2) {
		c.ProduceTo(t, "settle-task", p, 600)
		c.DeleteRecords(t, "settle-task", p, 150)
	}
	if err := db.CursorTable(context.Background(), "consumer_cursor"); err != nil {
		t.Fatal(err)
	}
	write := func(p int32, next int64) {
		if err := db.WriteCursor(context.Background(), "consumer_cursor", "ledger-settle-consumer", p, next-1); err != nil {
			t.Fatal(err)
		}
	}
	write(0, 600)
	write(1, 140)
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "settle-db", Namespace: ns}, StringData: map[string]string{"dsn": db.AdminDSN()}}
	if err := s.admin.Create(ctx, secret); err != nil {
		t.Fatal(err)
	}

	reader := cursor.NewReader()
	defer reader.Close()
	observer := kafka.NewObserver()
	defer observer.Close()
	coalescer := coalesce.New(observer, coalesce.Options{})
	defer coalescer.Close()
	// The broker and the database listen on loopback: allowed (an empty
	// allowlist allows nothing).
	loopback, err := resolve.NewBootstrapAllowlist([]string{"127.0.0.1:*"})
	if err != nil {
		t.Fatal(err)
	}
	cursorHosts, err := resolve.NewCursorHostAllowlist([]string{"127.0.0.1:*"})
	if err != nil {
		t.Fatal(err)
	}
	live := &gather.LiveChecker{Gatherer: &gather.Gatherer{
		Resolver: &resolve.ConnectionResolver{Metadata: s.admin, Secrets: s.admin, Cursors: reader,
			Allowlist: loopback, CursorHosts: cursorHosts},
		Coalescer: coalescer,
	}}
	s.live.set(ns, live.Check)

	p := settlePolicy(withConsumer("settle", resetEnv, commitEnv), withCursorSpec(rgv1.ResumeFromCursor))
	p.ObjectMeta = metav1.ObjectMeta{Name: p.Name, Namespace: ns}
	p.Spec.Kafka.BootstrapServers = c.Addrs
	if err := s.admin.Create(ctx, p); err != nil {
		t.Fatal(err)
	}
	// The status the reconciler last wrote says Proven; a start is judged
	// live all the same.
	s.setProof(t, p, proven(), 0)

	msg := mustDeny(t, s.alice.Create(ctx, settleDeployment(ns, "settle", 1)))
	t.Logf("denial:\n%s", msg)
	mustContain(t, msg, "is Violated", "checked live",
		"- CursorExpired: cursor 140 is below log start 150 on settle-task[1]: 10 records were never processed and are gone — reconcile them from the source")
	mustLack(t, msg, cursortest.Password, "NoCommittedOffset")

	// The team reconciles the 10 records from the source and writes the
	// cursor past them.
	write(1, 200)
	if err := s.alice.Create(ctx, settleDeployment(ns, "settle", 1)); err != nil {
		t.Errorf("the start after the cursor was reconciled was refused: %v", err)
	}
}
