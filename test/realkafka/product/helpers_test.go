// Package product runs retention-guard's own entry points against real
// Apache Kafka brokers (3.9 and the newest 4.x, internal/kafka/apachekafka):
// `check` and `scan` as a user runs them, and the manager's batched pass
// (coalesce.Coalescer over kafka.Observer: one observation of every
// policy on a cluster). The kfake tests in internal/kafka, internal/cli and
// controllers stand in for these where they agree; where a broker answers
// differently from kfake these tests decide.
package product

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/retentionguard/retention-guard/internal/cli"
	"github.com/retentionguard/retention-guard/internal/kafka/apachekafka"
)

// eachLine runs f against a fresh broker of every assembled line, the
// lines side by side.
func eachLine(t *testing.T, f func(t *testing.T, b *apachekafka.Broker), opts ...apachekafka.Option) {
	t.Helper()
	for _, d := range apachekafka.Dists(t) {
		t.Run(d.Line(), func(t *testing.T) {
			t.Parallel()
			f(t, apachekafka.Start(t, d, opts...))
		})
	}
}

// produceBatched writes records with a lingering producer, so that each
// partition's records of one call form one batch, as a busy producer's do
// (linger.ms, batch.size): batches of many records, far larger than a
// record.
func produceBatched(t *testing.T, b *apachekafka.Broker, records ...*kgo.Record) {
	t.Helper()
	cl := b.Client(t, kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerLinger(500*time.Millisecond),
		// A topic just created may not be served yet: retry until it is.
		kgo.UnknownTopicRetries(-1))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := cl.ProduceSync(ctx, records...).FirstErr(); err != nil {
		t.Fatalf("producing %d records: %v", len(records), err)
	}
}

// records returns n records for one partition of topic.
func records(topic string, partition int32, n int) []*kgo.Record {
	out := make([]*kgo.Record, 0, n)
	for i := range n {
		out = append(out, &kgo.Record{Topic: topic, Partition: partition, Value: fmt.Appendf(nil, "%s event %d of a session", topic, i)})
	}
	return out
}

// checkResult is the parts of `check --output json` these tests read.
type checkResult struct {
	Group            string `json:"group"`
	Verdict          string `json:"verdict"`
	ExpiredRecords   int64  `json:"expiredRecords"`
	OffsetsRetention *int64 `json:"offsetsRetentionMinutes"`
	GroupState       string `json:"groupState"`
	GroupProtocol    string `json:"groupProtocol"`
	PartitionSummary struct {
		Total, InRange, Expired, Missing, BeyondEnd int
	} `json:"partitionSummary"`
	OffsetExpiry *struct {
		Clock string `json:"clock"`
		Exact bool   `json:"exact"`
	} `json:"offsetExpiry"`
	Violations []struct {
		Reason  string `json:"reason"`
		Message string `json:"message"`
	} `json:"violations"`
	Partitions []struct {
		Topic           string `json:"topic"`
		Partition       int32  `json:"partition"`
		Committed       int64  `json:"committed"`
		LogStart        int64  `json:"logStart"`
		LogEnd          int64  `json:"logEnd"`
		ExpiredRecords  int64  `json:"expiredRecords"`
		HeadroomSeconds *int64 `json:"headroomSeconds"`
		Verdict         string `json:"verdict"`
	} `json:"partitions"`
}

func (r checkResult) reasons() []string {
	var out []string
	for _, v := range r.Violations {
		out = append(out, v.Reason)
	}
	return out
}

// run runs the retention-guard command line in process and returns its
// exit code and output.
func run(args ...string) (int, string, string) {
	var stdout, stderr bytes.Buffer
	code := cli.Execute(args, &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}

// check runs `retention-guard check --output json` against the broker.
func check(t *testing.T, b *apachekafka.Broker, args ...string) (int, checkResult) {
	t.Helper()
	code, stdout, stderr := run(append([]string{"check", "--output", "json", "--bootstrap-server", b.Addrs()[0]}, args...)...)
	var res checkResult
	if err := json.Unmarshal([]byte(stdout), &res); err != nil {
		t.Fatalf("check printed no JSON (%v), exit %d:\n%s\nstderr: %s", err, code, stdout, stderr)
	}
	return code, res
}
