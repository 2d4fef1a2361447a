package kafka

import (
	"context"
	"fmt"
	"os"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/retentionguard/retention-guard/internal/cursor"
	"github.com/retentionguard/retention-guard/internal/cursor/cursortest"
	"github.com/retentionguard/retention-guard/internal/kafka/kafkatest"
	"github.com/retentionguard/retention-guard/internal/proof"
)

// A real PostgreSQL for the business cursor tests, started on first use.
var pg = cursortest.LazyPostgres()

func TestMain(m *testing.M) {
	code := m.Run()
	pg.Stop()
	os.Exit(code)
}

// busyConsumer is a consumer that keeps processing while the guard
// observes: when its cursor is read, it has just produced more records and
// written its cursor at the new end (a live consumer between the guard's
// reads). It reads the real cursor from PostgreSQL through cursor.Query.
type busyConsumer struct {
	cursor.Query
	work func()
}

func (b busyConsumer) ReadCursor(ctx context.Context) proof.CursorObservation {
	b.work()
	return b.Query.ReadCursor(ctx)
}

// The cursor is read between the committed offsets and the log end, with
// the record timestamps at it: a consumer that writes its cursor past the
// log end between two of the guard's reads is never "beyond log end", and
// the observation carries its rows and the timestamp of the record at a
// cursor inside the log.
func TestCursorReadBeforeLogEnd(t *testing.T) {
	db := pg.Get(t)
	ctx := context.Background()
	table := "cursor_busy"
	if err := db.CursorTable(ctx, table); err != nil {
		t.Fatal(err)
	}
	c := kafkatest.NewCluster(t)
	c.CreateTopic(t, "settle-task", 2, nil)
	c.ProduceTo(t, "settle-task", 0, 10)
	c.ProduceTo(t, "settle-task", 1, 10)
	c.CommitOffsets(t, "settle", "settle-task", map[int32]int64{0: 10, 1: 4})
	// Partition 1's business cursor lags: last processed offset 3.
	if err := db.WriteCursor(ctx, table, "settle", 1, 3); err != nil {
		t.Fatal(err)
	}
	reader := cursor.NewReader()
	defer reader.Close()
	q := cursor.Query{Reader: reader, Group: "settle", Source: cursor.Source{Driver: cursor.DriverPostgres, DSN: db.AdminDSN(),
		Query: fmt.Sprintf("SELECT partition_id AS partition, last_offset + 1 AS next_offset, updated_at FROM %s WHERE group_id = $1", table)}}
	busy := busyConsumer{Query: q, work: func() {
		// Five more records arrive on partition 0 and the consumer
		// processes them at once: its cursor is the new log end, 15.
		c.ProduceTo(t, "settle-task", 0, 5)
		if err := db.WriteCursor(ctx, table, "settle", 0, 14); err != nil {
			t.Error(err)
		}
	}}
	o, _ := newTestObserver(t)
	obs := observe(t, o, Connection{BootstrapServers: c.Addrs}, Target{Group: "settle", Topics: []string{"settle-task"}, Cursor: busy})[0]
	requireNoFailures(t, obs)
	if !obs.Cursor.Read || len(obs.Cursor.Rows) != 2 {
		t.Fatalf("cursor %+v", obs.Cursor)
	}
	p0, p1 := partition(t, obs, "settle-task", 0), partition(t, obs, "settle-task", 1)
	if p0.LogEnd < 15 {
		t.Errorf("partition 0 log end %d was read before the cursor (15)", p0.LogEnd)
	}
	if p1.CursorTimestamp.IsZero() {
		t.Errorf("no timestamp of the record at partition 1's cursor 4")
	}
	res := proof.Evaluate(obs, proof.Policy{GroupID: "settle", Topics: []string{"settle-task"}, RecoveryWindow: time.Hour,
		Cursor: &proof.CursorPolicy{ResumeFrom: proof.ResumeFromCursor}}, obs.ObservedAt)
	for _, v := range res.Violations {
		if v.Reason == proof.ReasonCursorBeyondLogEnd {
			t.Errorf("a live consumer's cursor reads as beyond log end: %s", v.Message)
		}
	}
	// The group committed 10 on partition 0 before the consumer processed
	// 5 more: a restart from the group replays them (seed 002).
	if res.Verdict != proof.Proven || res.Cursor == nil || res.Cursor.ReplayRecords != 5 || res.Cursor.AheadRecords != 0 {
		t.Errorf("verdict %s, cursor summary %+v: want Proven, 5 records to replay", res.Verdict, res.Cursor)
	}
}

// stalledDatabase is a business cursor whose database answers only when the
// test says: a tenant's slow database. When released it has processed five
// more records on partition 0 (the consumer went on while its database was
// slow) and answers its cursor at the new log end.
type stalledDatabase struct {
	c        *kafkatest.Cluster
	t        *testing.T
	started  chan struct{}
	released chan struct{}
}

func (s stalledDatabase) Key() string { return "stalled" }

func (s stalledDatabase) ReadCursor(ctx context.Context) proof.CursorObservation {
	close(s.started)
	select {
	case <-s.released:
	case <-ctx.Done():
		return proof.CursorObservation{Problem: "the database did not answer"}
	}
	s.c.ProduceTo(s.t, "settle-task", 0, 5)
	return proof.CursorObservation{Read: true, Rows: []proof.CursorRow{{Partition: 0, NextOffset: 15}}}
}

// One tenant's slow database holds back no other policy of its Kafka
// cluster: the target without a cursor is delivered while the cursor read
// still hangs, and the target with it is delivered once its database
// answers, with a log end read after its cursor (never "beyond log end").
func TestSlowCursorHoldsBackNoNeighbour(t *testing.T) {
	c := kafkatest.NewCluster(t)
	c.CreateTopic(t, "settle-task", 1, nil)
	c.ProduceTo(t, "settle-task", 0, 10)
	c.Commit(t, "settle", "settle-task", 0, 10)
	c.Commit(t, "billing", "settle-task", 0, 7)
	db := stalledDatabase{c: c, t: t, started: make(chan struct{}), released: make(chan struct{})}
	o, _ := newTestObserver(t)

	type delivery struct {
		i        int
		observed Observed
		obs      proof.Observation
	}
	delivered := make(chan delivery, 2)
	done := make(chan ClusterObservation, 1)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	go func() {
		done <- o.ObserveCluster(ctx, Connection{BootstrapServers: c.Addrs}, ClusterRequest{
			Targets: []Target{
				{Group: "settle", Topics: []string{"settle-task"}, Cursor: db},
				{Group: "billing", Topics: []string{"settle-task"}},
			},
			// Built when delivered, as the Coalescer's first reader does:
			// the neighbour's while the cursor pass still runs.
			Deliver: func(i int, obs Observed) { delivered <- delivery{i, obs, obs.Observation()} },
		})
	}()

	var first delivery
	select {
	case first = <-delivered:
	case <-time.After(30 * time.Second):
		t.Fatal("nothing was delivered within 30 s while the cursor database hung")
	}
	if first.i != 1 {
		t.Fatalf("target %d was delivered first, want the neighbour without a cursor (1)", first.i)
	}
	requireNoFailures(t, first.obs)
	if p := partition(t, first.obs, "settle-task", 0); p.Committed != 7 || p.LogEnd != 10 {
		t.Errorf("the neighbour's partition: committed %d, log end %d, want 7 and 10", p.Committed, p.LogEnd)
	}
	select {
	case <-db.started:
	case <-time.After(30 * time.Second):
		t.Fatal("the cursor was never read")
	}
	select {
	case <-done:
		t.Fatal("the pass ended while the cursor database still hung")
	default:
	}

	close(db.released)
	var second delivery
	select {
	case second = <-delivered:
	case <-time.After(30 * time.Second):
		t.Fatal("the cursor target was not delivered once its database answered")
	}
	if second.i != 0 {
		t.Fatalf("target %d delivered second, want 0", second.i)
	}
	requireNoFailures(t, second.obs)
	if !second.obs.Cursor.Read {
		t.Fatalf("cursor %+v", second.obs.Cursor)
	}
	if p := partition(t, second.obs, "settle-task", 0); p.LogEnd < 15 || p.Committed != 10 {
		t.Errorf("the cursor target's partition: committed %d, log end %d, want 10 and a log end read after the cursor (≥ 15)", p.Committed, p.LogEnd)
	}
	co := <-done
	if co.Observations != nil {
		t.Errorf("ObserveCluster returned %d observations beside delivering each", len(co.Observations))
	}
	// Read again once the pass has ended: the same observations.
	if again := first.observed.Observation(); !reflect.DeepEqual(again, first.obs) {
		t.Errorf("the neighbour's observation read again differs:\n%+v\nfirst:\n%+v", again, first.obs)
	}
	if again := second.observed.Observation(); !reflect.DeepEqual(again, second.obs) {
		t.Errorf("the cursor target's observation read again differs:\n%+v\nfirst:\n%+v", again, second.obs)
	}
}

// instantCursor is a business cursor that answers at once, at next offset
// 0 on partition 0.
type instantCursor struct{}

func (instantCursor) Key() string { return "instant" }

func (instantCursor) ReadCursor(context.Context) proof.CursorObservation {
	return proof.CursorObservation{Read: true, Rows: []proof.CursorRow{{Partition: 0, NextOffset: 0}}}
}

// Issue 34 (observations built when read): a target's observation is
// built from its pass while the cursor pass of another target of the same
// group still runs, so the cursor pass writes maps of its own. Seed 000's
// compacted outbox, its group lagging behind a tombstone: the pass scans
// the tombstones at the committed offset for the group, and the cursor
// pass scans them again for its copy of the group. Run with -race (make
// test-go): a shared map is a data race here.
func TestCursorPassWritesNoMapItsNeighbourReads(t *testing.T) {
	c := kafkatest.NewCluster(t)
	c.CreateTopic(t, "outbox-state", 1, map[string]string{"cleanup.policy": "compact"})
	cl := c.Client(t, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err := cl.ProduceSync(t.Context(), &kgo.Record{Topic: "outbox-state", Key: []byte("acct-1"), Value: []byte("open")},
		&kgo.Record{Topic: "outbox-state", Key: []byte("acct-1")}, // the delete
		&kgo.Record{Topic: "outbox-state", Key: []byte("acct-2"), Value: []byte("open")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	c.Commit(t, "outbox", "outbox-state", 0, 0)

	o, _ := newTestObserver(t)
	var (
		wg        sync.WaitGroup
		passEnded = make(chan struct{})
		neighbour = make(chan proof.Observation, 1)
	)
	co := o.ObserveCluster(t.Context(), Connection{BootstrapServers: c.Addrs}, ClusterRequest{
		Targets: []Target{
			{Group: "outbox", Topics: []string{"outbox-state"}, Cursor: instantCursor{}},
			{Group: "outbox", Topics: []string{"outbox-state"}},
		},
		Deliver: func(i int, obs Observed) {
			if i != 1 {
				return
			}
			// Read the neighbour's observation until the pass ends, as
			// reconcilers do while a cursor pass runs.
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					got := obs.Observation()
					select {
					case <-passEnded:
						neighbour <- got
						return
					default:
					}
				}
			}()
		},
	})
	close(passEnded)
	wg.Wait()
	if co.Observations != nil {
		t.Fatalf("ObserveCluster returned %d observations beside delivering each", len(co.Observations))
	}
	obs := <-neighbour
	requireNoFailures(t, obs)
	if p := partition(t, obs, "outbox-state", 0); p.Tombstones == nil || len(p.Tombstones.Found) != 1 || p.Tombstones.Found[0].Offset != 1 {
		t.Fatalf("the neighbour's tombstone scan %+v: want the delete at 1 (the map the cursor pass must not share)", p.Tombstones)
	}
}

// A pass that cannot start (here: the observer is closed; a connection
// whose client cannot be built is the same path) still answers a target
// with a business cursor: every target gets the failure, the cursor reads
// as unread, and nothing panics. It indexed a cursor table the failed
// pass never made.
func TestPassThatCannotStartAnswersACursorTarget(t *testing.T) {
	o := NewObserver()
	o.Close()
	obs := o.Observe(t.Context(), Connection{BootstrapServers: []string{"127.0.0.1:1"}},
		[]Target{{Group: "settle", Topics: []string{"settle-task"}, Cursor: instantCursor{}}})
	if len(obs) != 1 || len(obs[0].Failures) != 1 || obs[0].Cursor.Read {
		t.Fatalf("observations %+v: want one, with the failure and its cursor unread", obs)
	}
}
