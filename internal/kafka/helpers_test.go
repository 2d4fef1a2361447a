package kafka

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"

	"github.com/retentionguard/retention-guard/internal/proof"
)

// logSink collects everything logged, at every verbosity, so tests can
// assert what never appears in it.
type logSink struct {
	mu    sync.Mutex
	lines []string
}

func (s *logSink) logger() logr.Logger {
	return funcr.New(func(prefix, args string) {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.lines = append(s.lines, prefix+" "+args)
	}, funcr.Options{Verbosity: 10})
}

func (s *logSink) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return strings.Join(s.lines, "\n")
}

// requestCounter counts requests by API through WithRequestHook.
type requestCounter struct {
	mu    sync.Mutex
	byAPI map[string]int
}

func (c *requestCounter) hook(api string, _ time.Duration, _ error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.byAPI == nil {
		c.byAPI = make(map[string]int)
	}
	c.byAPI[api]++
}

func (c *requestCounter) reset() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	got := c.byAPI
	c.byAPI = nil
	return got
}

func total(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

// newTestObserver is an Observer with short timeouts, logging into a sink.
func newTestObserver(t testing.TB, opts ...Option) (*Observer, *logSink) {
	t.Helper()
	sink := &logSink{}
	o := NewObserver(append([]Option{
		WithLogger(sink.logger()),
		WithTimeouts(time.Second, 2*time.Second, 3*time.Second),
	}, opts...)...)
	t.Cleanup(o.Close)
	return o, sink
}

func observe(t testing.TB, o *Observer, conn Connection, targets ...Target) []proof.Observation {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	obs := o.Observe(ctx, conn, targets)
	if len(obs) != len(targets) {
		t.Fatalf("got %d observations for %d targets", len(obs), len(targets))
	}
	return obs
}

func partition(t testing.TB, obs proof.Observation, topic string, p int32) proof.PartitionObservation {
	t.Helper()
	for _, to := range obs.Topics {
		if to.Name != topic {
			continue
		}
		for _, po := range to.Partitions {
			if po.Partition == p {
				return po
			}
		}
	}
	t.Fatalf("no partition %s/%d in observation %+v", topic, p, obs.Topics)
	return proof.PartitionObservation{}
}

func topicObs(t testing.TB, obs proof.Observation, topic string) proof.TopicObservation {
	t.Helper()
	for _, to := range obs.Topics {
		if to.Name == topic {
			return to
		}
	}
	t.Fatalf("no topic %s in observation", topic)
	return proof.TopicObservation{}
}

func requireNoFailures(t testing.TB, obs proof.Observation) {
	t.Helper()
	if len(obs.Failures) > 0 {
		t.Fatalf("unexpected failures: %s", describeFailures(obs.Failures))
	}
}

// requireFailure finds a failure with the reason and API, and topic when
// not empty.
func requireFailure(t testing.TB, obs proof.Observation, reason, api, topic string) proof.Failure {
	t.Helper()
	for _, f := range obs.Failures {
		if f.Reason == reason && f.API == api && (topic == "" || f.Topic == topic) {
			return f
		}
	}
	t.Fatalf("no failure %s/%s/%q among %s", reason, api, topic, describeFailures(obs.Failures))
	return proof.Failure{}
}

func describeFailures(fs []proof.Failure) string {
	var b strings.Builder
	for _, f := range fs {
		fmt.Fprintf(&b, "\n  %s api=%s topic=%s partition=%d: %s", f.Reason, f.API, f.Topic, f.Partition, f.Message)
	}
	if b.Len() == 0 {
		return "(none)"
	}
	return b.String()
}

func value(v string) proof.ConfigValue { return proof.ConfigValue{Present: true, Value: v} }

// is reports whether a config value read is v, wherever it came from.
func is(cv proof.ConfigValue, v string) bool { return cv.Present && !cv.Null && cv.Value == v }
