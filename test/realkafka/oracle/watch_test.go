package oracle

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/retentionguard/retention-guard/internal/assemble"
	"github.com/retentionguard/retention-guard/internal/kafka"
	"github.com/retentionguard/retention-guard/internal/kafka/apachekafka"
	"github.com/retentionguard/retention-guard/internal/proof"
	"github.com/retentionguard/retention-guard/internal/proofstatus"
)

// A diverged trial is judged the way the manager judges: one long-lived
// observer, whose group memory is kept from pass to pass, looks once after
// the commit and before the fault (a manager's pass at its interval), then
// takes the verdict after the log grew back. It does not look while the
// log end is down: the fault and the regrowth fall between two passes, the
// case the memory's fall alone would miss. What it keeps is the leader
// epoch it first saw the commit in (internal/groupmemory, Witness), which
// it asks the new leader about; an epoch-less commit on a diverged log is
// seen that way on both lines. A one-shot `check` has no memory: on 3.x,
// whose CreateTime no broker bounds, it cannot see such a commit's log
// diverged (docs/concepts.md, "What one look cannot see"), so a diverged
// trial's verdict is the manager's.

// watcher is a diverged trial's manager path.
type watcher struct {
	o      *kafka.Observer
	conn   kafka.Connection
	target kafka.Target
	pol    proof.Policy
}

// newWatcher is check's observer and policy for s, kept across passes.
func newWatcher(t *testing.T, b *apachekafka.Broker, s Scenario) *watcher {
	w := &watcher{
		// The cleaning allowance scaled like every clock, as check is given it.
		o:    kafka.NewObserver(kafka.WithCleaningAllowance(scaled(proof.DefaultCleaningAllowance))),
		conn: kafka.Connection{BootstrapServers: b.Addrs()},
		target: kafka.Target{Group: s.GroupID(), Topics: []string{s.Topic()},
			ReadOffsetsTopic: s.ReadOffsetsTopic, RecoveryWindow: s.Window},
		pol: proof.Policy{GroupID: s.GroupID(), Topics: []string{s.Topic()}, RecoveryWindow: s.Window},
	}
	t.Cleanup(w.o.Close)
	return w
}

// pass is one observation and its proof, assembled as the manager
// assembles it, bounded as check bounds it.
func (w *watcher) pass() (proof.Observation, proof.Result) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	observed := w.o.Observe(ctx, w.conn, []kafka.Target{w.target})[0]
	now := observed.ObservedAt
	if now.IsZero() {
		now = time.Now()
	}
	proved := assemble.Proof(assemble.Input{Policy: w.pol, Observation: observed, Now: now})
	return proved.Observation, proved.Result
}

// verdict is a pass's proof as the policy's status.proof says it (the
// fields check's JSON shares with it), with each partition's headroom.
func (w *watcher) verdict(t *testing.T) verdict {
	t.Helper()
	obs, res := w.pass()
	b, err := json.Marshal(proofstatus.From(res, obs))
	if err != nil {
		t.Fatal(err)
	}
	var v verdict
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("status.proof %s: %v", b, err)
	}
	for _, p := range res.Partitions {
		pv := partitionVerdict{Partition: p.Partition}
		if p.HasHeadroom {
			s := int64(p.Headroom.Seconds())
			pv.HeadroomSeconds = &s
		}
		v.Partitions = append(v.Partitions, pv)
	}
	return v
}
