package kafka

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/retentionguard/retention-guard/internal/kafka/kafkatest"
	"github.com/retentionguard/retention-guard/internal/proof"
)

// Any broker may coordinate a transactional ID: the loosest of the
// brokers' transaction settings bounds how long a transactional commit
// may stay hidden; a value that does not parse wins (the proof then
// dates nothing by a change it saw), and two-phase commit on any broker
// wins.
func TestLoosestTransactionConfig(t *testing.T) {
	v := func(s string) proof.ConfigValue { return proof.ConfigValue{Present: true, Value: s} }
	brokers := []int32{1, 2, 3}
	got := loosestTransactionConfig(brokers, map[int32]map[string]proof.ConfigValue{
		1: {proof.KeyTransactionMaxTimeoutMs: v("900000"), proof.KeyTransactionAbortCheckIntervalMs: v("10000"), proof.KeyTransactionTwoPhaseCommit: v("false")},
		2: {proof.KeyTransactionMaxTimeoutMs: v("3600000"), proof.KeyTransactionAbortCheckIntervalMs: v("5000"), proof.KeyTransactionTwoPhaseCommit: v("true")},
		3: {proof.KeyTransactionMaxTimeoutMs: v("60000")}, // a 3.9 broker: no two-phase commit key
	}, false)
	if got.MaxTimeoutMs.Value != "3600000" || got.AbortCheckIntervalMs.Value != "10000" || got.TwoPhaseCommitEnable.Value != "true" {
		t.Errorf("loosest %+v, want 3600000, 10000 and two-phase commit true", got)
	}
	got = loosestTransactionConfig(brokers, map[int32]map[string]proof.ConfigValue{
		1: {proof.KeyTransactionMaxTimeoutMs: v("900000")},
		2: {proof.KeyTransactionMaxTimeoutMs: v("15m")},
		3: {proof.KeyTransactionMaxTimeoutMs: v("3600000")},
	}, false)
	if got.MaxTimeoutMs.Value != "15m" || got.TwoPhaseCommitEnable.Present {
		t.Errorf("a value that does not parse: %+v, want it to win, and no two-phase commit key", got)
	}
	if got := loosestTransactionConfig(brokers, nil, true); got != (proof.TransactionConfig{}) {
		t.Errorf("broker configs not read: %+v, want nothing", got)
	}
}

// End to end through a pass on kfake: the brokers' transaction.max.timeout.ms
// reaches the observation, and a simple group caught up past a writer's
// transaction marker is dated by the marker (seed 000's Outbox).
func TestObserveTransactionFacts(t *testing.T) {
	t.Parallel()
	c := kafkatest.NewCluster(t)
	c.CreateTopic(t, "outbox", 1, nil)
	cl := c.Client(t, kgo.TransactionalID("outbox-writer"), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err := cl.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := cl.ProduceSync(t.Context(), &kgo.Record{Topic: "outbox", Value: []byte("o")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	before := time.Now().Truncate(time.Millisecond)
	if err := cl.EndTransaction(t.Context(), kgo.TryCommit); err != nil {
		t.Fatal(err)
	}
	after := time.Now()
	c.Commit(t, "fanout", "outbox", 0, 2) // the record, the marker: caught up

	o, _ := newTestObserver(t)
	obs := observe(t, o, Connection{BootstrapServers: c.Addrs}, Target{Group: "fanout", Topics: []string{"outbox"}})[0]
	if v := obs.Transactions.MaxTimeoutMs; !v.Present || v.Value != "900000" {
		t.Errorf("transaction.max.timeout.ms %+v, want kfake's 900000", v)
	}
	p := partition(t, obs, "outbox", 0)
	if m := p.PrecedingMarkerTimestamp; m.Before(before) || m.After(after) || !p.PrecedingTimestamp.IsZero() {
		t.Errorf("committed %d after the marker: marker %v (want between %v and %v), record %v (want none)",
			p.Committed, m, before, after, p.PrecedingTimestamp)
	}
	if r := proof.Evaluate(obs, proof.Policy{GroupID: "fanout", Topics: []string{"outbox"}, RecoveryWindow: 72 * time.Hour}, obs.ObservedAt); r.Verdict != proof.Proven {
		t.Errorf("a caught-up simple group after a marker: %s %+v, want Proven", r.Verdict, r.Violations)
	}
}
