package faults

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/retentionguard/retention-guard/internal/kafka"
	"github.com/retentionguard/retention-guard/internal/proof"
)

// guard proves one group on one topic the way `retention-guard check`
// does: a pooled Observer (kept across passes, as the manager keeps it),
// then proof.Evaluate. Its request hook lets a test inject a fault in the
// middle of a pass.
type guard struct {
	t      *testing.T
	o      *kafka.Observer
	conn   kafka.Connection
	target kafka.Target
	pol    proof.Policy

	mu     sync.Mutex
	onCall func(api string) // called once per Kafka request answered
}

func newGuard(t *testing.T, f *fixture, group, topic string) *guard {
	g := &guard{
		t:      t,
		conn:   kafka.Connection{BootstrapServers: f.b.Addrs()},
		target: kafka.Target{Group: group, Topics: []string{topic}},
		pol:    proof.Policy{GroupID: group, Topics: []string{topic}, RecoveryWindow: time.Hour},
	}
	// The check command's observer: its default timeouts.
	g.o = kafka.NewObserver(kafka.WithRequestHook(func(api string, _ time.Duration, _ error) {
		g.mu.Lock()
		fn := g.onCall
		g.mu.Unlock()
		if fn != nil {
			fn(api)
		}
	}))
	t.Cleanup(g.o.Close)
	return g
}

// once runs fault the first time a request of api is answered after the
// call (on the client's goroutine: the pass waits for it).
func (g *guard) once(api string, fault func()) {
	var done sync.Once
	g.mu.Lock()
	g.onCall = func(a string) {
		if a == api {
			done.Do(fault)
		}
	}
	g.mu.Unlock()
}

// pass is one observation and its proof, bounded as check bounds it.
func (g *guard) pass() (proof.Observation, proof.Result) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	obs := g.o.Observe(ctx, g.conn, []kafka.Target{g.target})[0]
	return obs, proof.Evaluate(obs, g.pol, time.Now())
}

// truth is what partition 0 really holds.
type truth struct {
	committed, logStart, logEnd int64
}

// describe is a result on one line, for logs and failures.
func describe(res proof.Result) string {
	var sb strings.Builder
	sb.WriteString(string(res.Verdict))
	for _, p := range res.Partitions {
		fmt.Fprintf(&sb, " %s/%d committed=%d logStart=%d logEnd=%d", p.Topic, p.Partition, p.Committed, p.LogStart, p.LogEnd)
	}
	for _, c := range res.Conditions {
		if c.Status != proof.ConditionTrue {
			fmt.Fprintf(&sb, "; %s %s: %s", c.Type, c.Reason, c.Message)
		}
	}
	return sb.String()
}

// honest fails the test when res claims what the cluster does not hold: a
// Proven whose numbers are not the truth (a committed offset read as
// missing proves a fresh group), or a Violated on a healthy group. Unknown
// is always honest.
func honest(t *testing.T, when string, res proof.Result, want truth) {
	t.Helper()
	switch res.Verdict {
	case proof.Unknown:
		return
	case proof.Violated:
		t.Errorf("%s: Violated on a group that lost nothing: %s", when, describe(res))
		return
	}
	if !matches(res, want) {
		t.Errorf("%s: Proven on facts that are not the cluster's (want committed=%d logStart=%d logEnd=%d): %s",
			when, want.committed, want.logStart, want.logEnd, describe(res))
	}
}

func matches(res proof.Result, want truth) bool {
	if len(res.Partitions) != 1 {
		return false
	}
	p := res.Partitions[0]
	return p.Committed == want.committed && p.LogStart == want.logStart && p.LogEnd == want.logEnd
}

// untilProven runs passes until one proves the truth, each honest, and
// fails after waitLimit: the guard recovers by itself once Kafka can answer.
func (g *guard) untilProven(when string, want truth) (unknowns int) {
	g.t.Helper()
	deadline := time.Now().Add(waitLimit)
	var last proof.Result
	for time.Now().Before(deadline) {
		_, last = g.pass()
		honest(g.t, when, last, want)
		if last.Verdict == proof.Proven && matches(last, want) {
			return unknowns
		}
		unknowns++
		time.Sleep(500 * time.Millisecond)
	}
	g.t.Fatalf("%s: the guard did not prove the group again within %s; last: %s", when, waitLimit, describe(last))
	return unknowns
}

// untilViolated runs passes until one reports the group's committed
// offset beyond the log end, each before it Unknown (never Proven: the
// records the group read are gone), and returns that violation.
func (g *guard) untilViolated(when string) proof.Violation {
	g.t.Helper()
	deadline := time.Now().Add(waitLimit)
	var last proof.Result
	for time.Now().Before(deadline) {
		_, last = g.pass()
		switch last.Verdict {
		case proof.Proven:
			g.t.Fatalf("%s: Proven on a truncated log: %s", when, describe(last))
		case proof.Violated:
			for _, v := range last.Violations {
				if v.Reason == proof.ReasonCommittedOffsetBeyondLogEnd {
					return v
				}
			}
			g.t.Fatalf("%s: Violated without CommittedOffsetBeyondLogEnd: %s", when, describe(last))
		}
		time.Sleep(500 * time.Millisecond)
	}
	g.t.Fatalf("%s: no CommittedOffsetBeyondLogEnd within %s; last: %s", when, waitLimit, describe(last))
	return proof.Violation{}
}
