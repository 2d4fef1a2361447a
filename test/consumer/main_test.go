package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
)

// The real-node tier trusts this consumer's log to prove what a pod read
// and skipped; these tests pin that log against a real (in-process) kfake
// broker: a resume at the committed offset, the silent jump of earliest
// and latest, and none refusing to skip.

type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) { s.mu.Lock(); defer s.mu.Unlock(); return s.b.Write(p) }

func (s *syncBuf) lines(msg string) []map[string]any {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []map[string]any
	for _, l := range strings.Split(s.b.String(), "\n") {
		var m map[string]any
		if json.Unmarshal([]byte(l), &m) == nil && m["msg"] == msg {
			out = append(out, m)
		}
	}
	return out
}

type broker struct {
	addr  string
	admin *kadm.Client
	cl    *kgo.Client
}

func newBroker(t *testing.T, records int, committed int64, logStart int64) *broker {
	t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "t"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...), kgo.DefaultProduceTopic("t"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	b := &broker{addr: c.ListenAddrs()[0], admin: kadm.NewClient(cl), cl: cl}
	ctx := context.Background()
	b.produce(t, records)
	if committed >= 0 {
		var os kadm.Offsets
		os.Add(kadm.Offset{Topic: "t", Partition: 0, At: committed, LeaderEpoch: -1})
		if err := b.admin.CommitAllOffsets(ctx, "g", os); err != nil {
			t.Fatal(err)
		}
	}
	if logStart > 0 {
		var os kadm.Offsets
		os.Add(kadm.Offset{Topic: "t", Partition: 0, At: logStart, LeaderEpoch: -1})
		if rs, err := b.admin.DeleteRecords(ctx, os); err != nil || rs.Error() != nil {
			t.Fatal(err, rs.Error())
		}
	}
	return b
}

func (b *broker) produce(t *testing.T, n int) {
	t.Helper()
	for i := 0; i < n; i++ {
		if err := b.cl.ProduceSync(context.Background(), &kgo.Record{Value: []byte("r")}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
}

// consume runs the consumer until it exits (idle) and returns its log.
func consume(t *testing.T, b *broker, reset string) (*syncBuf, error) {
	t.Helper()
	buf := &syncBuf{}
	return buf, consumeInto(t, buf, b, reset)
}

func consumeInto(t *testing.T, buf *syncBuf, b *broker, reset string) error {
	cfg, err := configFromEnv(func(k string) string {
		return map[string]string{
			"KAFKA_BOOTSTRAP_SERVERS": b.addr, "KAFKA_GROUP_ID": "g", "KAFKA_TOPICS": "t",
			"KAFKA_AUTO_OFFSET_RESET": reset, "KAFKA_ENABLE_AUTO_COMMIT": "false", "CONSUMER_EXIT_AFTER_IDLE": "2s",
		}[k]
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return run(ctx, cfg, &out{w: json.NewEncoder(buf)})
}

func first(t *testing.T, buf *syncBuf) map[string]any {
	t.Helper()
	f := buf.lines("first record")
	if len(f) != 1 {
		t.Fatalf("want one first-record line, got %d:\n%s", len(f), buf.b.String())
	}
	return f[0]
}

func TestResumesAtTheCommittedOffset(t *testing.T) {
	b := newBroker(t, 10, 5, 0)
	buf, err := consume(t, b, "none")
	if err != nil {
		t.Fatal(err)
	}
	f := first(t, buf)
	if f["offset"] != 5.0 || f["committed"] != 5.0 || f["reset"] != false || f["skipped"] != 0.0 {
		t.Errorf("first record %v, want offset 5 = committed, no reset", f)
	}
	if s := buf.lines("skipped"); len(s) != 0 {
		t.Errorf("gaps reported: %v", s)
	}
	if c := buf.lines("committed"); len(c) == 0 {
		t.Error("no commit logged")
	}
}

// Seed 000: earliest silently jumps over the expired records to the new
// log start; the log says so with the numbers.
func TestEarliestJumpsOverExpiredRecords(t *testing.T) {
	b := newBroker(t, 100, 30, 75)
	buf, err := consume(t, b, "earliest")
	if err != nil {
		t.Fatal(err)
	}
	f := first(t, buf)
	if f["offset"] != 75.0 || f["committed"] != 30.0 || f["reset"] != true || f["resetCause"] != "OffsetOutOfRange" || f["skipped"] != 45.0 {
		t.Errorf("first record %v, want offset 75, committed 30, reset by OffsetOutOfRange, 45 skipped", f)
	}
}

// Seed 003: no committed offset (expired), latest: everything before the
// end is skipped; the first record is one produced after the start.
func TestLatestWithoutCommittedOffsetStartsAtTheEnd(t *testing.T) {
	b := newBroker(t, 10, -1, 0)
	done := make(chan struct{})
	buf := &syncBuf{}
	var err error
	go func() { defer close(done); err = consumeInto(t, buf, b, "latest") }()
	// Produce until it reads something: only records written after it
	// positioned itself at the end reach it.
	for deadline := time.Now().Add(20 * time.Second); len(buf.lines("first record")) == 0 && time.Now().Before(deadline); {
		b.produce(t, 1)
		time.Sleep(300 * time.Millisecond)
	}
	<-done
	if err != nil {
		t.Fatal(err)
	}
	f := first(t, buf)
	if off, _ := f["offset"].(float64); off < 10 || f["committed"] != -1.0 || f["reset"] != true || f["resetCause"] != "NoCommittedOffset" {
		t.Errorf("first record %v, want offset ≥ 10 (the 10 records before the start skipped), no committed offset, reset", f)
	}
}

func TestNoneRefusesToSkip(t *testing.T) {
	b := newBroker(t, 100, 30, 75)
	buf, err := consume(t, b, "none")
	if err == nil || !strings.Contains(err.Error(), "committed offset 30 is out of range") {
		t.Fatalf("want a refusal naming committed offset 30, got %v\n%s", err, buf.b.String())
	}
	if f := buf.lines("first record"); len(f) != 0 {
		t.Errorf("consumed despite none: %v", f)
	}
}
