// Command consumer is a real Kafka consumer (franz-go's kgo) for the
// real-node tier (test/node): it runs in a pod the way a team's consumer
// does, configured from the environment the way a ConsumerRetentionPolicy's
// `consumer` clause expects, and logs — one JSON object per line on stdout —
// what it read and what it skipped, so a test can prove from its log that no
// record was lost, or exactly which were.
//
// Environment:
//
//	KAFKA_BOOTSTRAP_SERVERS   host:port[,host:port]   (required)
//	KAFKA_GROUP_ID            consumer group          (required)
//	KAFKA_TOPICS              topic[,topic]           (required)
//	KAFKA_AUTO_OFFSET_RESET   earliest | latest (Kafka's default) | none | error
//	KAFKA_ENABLE_AUTO_COMMIT  true (Kafka's default) | false: commit after each processed batch
//	KAFKA_AUTO_COMMIT_INTERVAL_MS   default 5000, as Kafka's auto.commit.interval.ms
//	CONSUMER_EXIT_AFTER_IDLE  a Go duration: exit 0 (after a last commit) once no record came
//	                          for that long — a batch consumer (a Job) that runs and exits
//
// auto.offset.reset follows Kafka: it decides where a partition starts when
// the group has no committed offset for it, and where it resumes when the
// committed offset is out of range (expired by retention). With none (or
// error, librdkafka's name) the consumer refuses both and exits 1: it fails
// loudly instead of skipping.
//
// Log lines (field "msg"):
//
//	"assigned"     topic, partition, committed (-1: the group has none)
//	"first record" topic, partition, offset (the first offset consumed),
//	               committed, reset (true when the client did not resume at
//	               the committed offset), resetCause (NoCommittedOffset or
//	               OffsetOutOfRange), skipped (offset − committed when a
//	               committed offset was jumped over)
//	"skipped"      topic, partition, from, to, count: a gap while consuming
//	"consumed"     topic, partition, first, last, count: one fetched batch
//	"committed"    the offsets committed (manual commit)
//	"fatal"        why the consumer stops (exit 1)
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Config is read from the environment.
type Config struct {
	Brokers        []string
	Group          string
	Topics         []string
	Reset          string // earliest, latest, none
	AutoCommit     bool
	CommitInterval time.Duration
	ExitAfterIdle  time.Duration // 0: run until SIGTERM
}

func configFromEnv(getenv func(string) string) (Config, error) {
	c := Config{
		Brokers: splitList(getenv("KAFKA_BOOTSTRAP_SERVERS")),
		Group:   strings.TrimSpace(getenv("KAFKA_GROUP_ID")),
		Topics:  splitList(getenv("KAFKA_TOPICS")),
		Reset:   "latest",
		// Kafka's defaults.
		AutoCommit:     true,
		CommitInterval: 5 * time.Second,
	}
	var errs []error
	if len(c.Brokers) == 0 {
		errs = append(errs, errors.New("KAFKA_BOOTSTRAP_SERVERS is empty: set host:port[,host:port]"))
	}
	if c.Group == "" {
		errs = append(errs, errors.New("KAFKA_GROUP_ID is empty: set the consumer group"))
	}
	if len(c.Topics) == 0 {
		errs = append(errs, errors.New("KAFKA_TOPICS is empty: set topic[,topic]"))
	}
	switch v := strings.ToLower(strings.TrimSpace(getenv("KAFKA_AUTO_OFFSET_RESET"))); v {
	case "":
	case "earliest", "latest":
		c.Reset = v
	case "none", "error":
		c.Reset = "none"
	default:
		errs = append(errs, fmt.Errorf("KAFKA_AUTO_OFFSET_RESET=%q: use earliest, latest, none or error", v))
	}
	switch v := strings.ToLower(strings.TrimSpace(getenv("KAFKA_ENABLE_AUTO_COMMIT"))); v {
	case "", "true":
	case "false":
		c.AutoCommit = false
	default:
		errs = append(errs, fmt.Errorf("KAFKA_ENABLE_AUTO_COMMIT=%q: use true or false", v))
	}
	if v := strings.TrimSpace(getenv("KAFKA_AUTO_COMMIT_INTERVAL_MS")); v != "" {
		ms, err := strconv.Atoi(v)
		if err != nil || ms <= 0 {
			errs = append(errs, fmt.Errorf("KAFKA_AUTO_COMMIT_INTERVAL_MS=%q: use a positive number of milliseconds", v))
		} else {
			c.CommitInterval = time.Duration(ms) * time.Millisecond
		}
	}
	if v := strings.TrimSpace(getenv("CONSUMER_EXIT_AFTER_IDLE")); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			errs = append(errs, fmt.Errorf("CONSUMER_EXIT_AFTER_IDLE=%q: use a positive Go duration such as 5s", v))
		} else {
			c.ExitAfterIdle = d
		}
	}
	return c, errors.Join(errs...)
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// out writes one JSON object per line.
type out struct {
	mu sync.Mutex
	w  *json.Encoder
}

func (o *out) log(msg string, kv ...any) {
	m := map[string]any{"time": time.Now().UTC().Format(time.RFC3339Nano), "msg": msg}
	for i := 0; i+1 < len(kv); i += 2 {
		m[fmt.Sprint(kv[i])] = kv[i+1]
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	_ = o.w.Encode(m)
}

type tp struct {
	topic     string
	partition int32
}

// tracker remembers, per partition, where the group said to resume, whether
// the client reset the position, and the last offset consumed.
type tracker struct {
	mu        sync.Mutex
	committed map[tp]int64 // -1: none
	resetOOR  map[tp]int64 // OffsetOutOfRange reset: the offset that was out of range
	last      map[tp]int64
	started   map[tp]bool
}

func newTracker() *tracker {
	return &tracker{committed: map[tp]int64{}, resetOOR: map[tp]int64{}, last: map[tp]int64{}, started: map[tp]bool{}}
}

// kgoLogger forwards kgo's warnings and errors and catches the client's own
// report that it reset a position: kgo logs
// "received OFFSET_OUT_OF_RANGE on the first fetch, resetting to the
// configured ConsumeResetOffset" with the topic, partition and prior offset.
type kgoLogger struct {
	out *out
	t   *tracker
}

func (l kgoLogger) Level() kgo.LogLevel { return kgo.LogLevelInfo }

func (l kgoLogger) Log(level kgo.LogLevel, msg string, kv ...any) {
	if strings.Contains(msg, "OFFSET_OUT_OF_RANGE") {
		var (
			key   tp
			prior int64 = -1
		)
		for i := 0; i+1 < len(kv); i += 2 {
			switch kv[i] {
			case "topic":
				key.topic, _ = kv[i+1].(string)
			case "partition":
				key.partition, _ = kv[i+1].(int32)
			case "prior_offset":
				prior, _ = kv[i+1].(int64)
			}
		}
		l.t.mu.Lock()
		l.t.resetOOR[key] = prior
		l.t.mu.Unlock()
	}
	if level <= kgo.LogLevelWarn || strings.Contains(msg, "OFFSET_OUT_OF_RANGE") {
		l.out.log("kafka client: "+msg, append([]any{"level", level.String()}, kv...)...)
	}
}

func main() {
	o := &out{w: json.NewEncoder(os.Stdout)}
	cfg, err := configFromEnv(os.Getenv)
	if err != nil {
		o.log("fatal", "error", err.Error())
		os.Exit(64)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	if err := run(ctx, cfg, o); err != nil {
		o.log("fatal", "error", err.Error())
		os.Exit(1)
	}
}

func run(ctx context.Context, cfg Config, o *out) error {
	t := newTracker()
	reset := map[string]kgo.Offset{
		"earliest": kgo.NewOffset().AtStart(),
		"latest":   kgo.NewOffset().AtEnd(),
		"none":     kgo.NoResetOffset(),
	}[cfg.Reset]
	opts := []kgo.Opt{
		kgo.SeedBrokers(cfg.Brokers...),
		kgo.ConsumerGroup(cfg.Group),
		kgo.ConsumeTopics(cfg.Topics...),
		kgo.ConsumeResetOffset(reset),
		kgo.WithLogger(kgoLogger{out: o, t: t}),
		kgo.AdjustFetchOffsetsFn(func(_ context.Context, offsets map[string]map[int32]kgo.Offset) (map[string]map[int32]kgo.Offset, error) {
			t.mu.Lock()
			defer t.mu.Unlock()
			for topic, ps := range offsets {
				for p, off := range ps {
					key := tp{topic, p}
					committed := off.EpochOffset().Offset
					if committed < 0 {
						committed = -1 // kgo put the start offset of the reset policy here
					}
					t.committed[key] = committed
					delete(t.started, key)
					delete(t.resetOOR, key)
					o.log("assigned", "topic", topic, "partition", p, "committed", committed, "autoOffsetReset", cfg.Reset)
					if committed < 0 && cfg.Reset == "none" {
						// Kafka's "none": refuse to start without a
						// position, before the client fetches anything.
						o.log("fatal", "error", fmt.Sprintf("no committed offset for %s[%d] and auto.offset.reset=none: refusing to guess where to start", topic, p))
						os.Exit(1)
					}
				}
			}
			return offsets, nil
		}),
	}
	if cfg.AutoCommit {
		opts = append(opts, kgo.AutoCommitInterval(cfg.CommitInterval))
	} else {
		opts = append(opts, kgo.DisableAutoCommit())
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return fmt.Errorf("creating the Kafka client: %w", err)
	}
	defer cl.Close()
	o.log("started", "brokers", cfg.Brokers, "group", cfg.Group, "topics", cfg.Topics,
		"autoOffsetReset", cfg.Reset, "enableAutoCommit", cfg.AutoCommit)

	lastRecord := time.Now()
	reason := "signal"
	for {
		pollCtx, cancel := ctx, context.CancelFunc(func() {})
		if cfg.ExitAfterIdle > 0 {
			pollCtx, cancel = context.WithTimeout(ctx, time.Second)
		}
		fetches := cl.PollFetches(pollCtx)
		cancel()
		if ctx.Err() != nil {
			break
		}
		if fetches.NumRecords() > 0 {
			lastRecord = time.Now()
		} else if cfg.ExitAfterIdle > 0 && time.Since(lastRecord) >= cfg.ExitAfterIdle {
			reason = fmt.Sprintf("no record for %s", cfg.ExitAfterIdle)
			break
		}
		for _, fe := range fetches.Errors() {
			if errors.Is(fe.Err, context.Canceled) || errors.Is(fe.Err, context.DeadlineExceeded) {
				continue
			}
			if cfg.Reset == "none" && errors.Is(fe.Err, kerr.OffsetOutOfRange) {
				t.mu.Lock()
				committed := t.committed[tp{fe.Topic, fe.Partition}]
				t.mu.Unlock()
				return fmt.Errorf("%s[%d]: the committed offset %d is out of range (expired by retention?) and auto.offset.reset=none: refusing to skip",
					fe.Topic, fe.Partition, committed)
			}
			o.log("fetch error", "topic", fe.Topic, "partition", fe.Partition, "error", fe.Err.Error())
		}
		fetches.EachPartition(func(p kgo.FetchTopicPartition) {
			if len(p.Records) == 0 {
				return
			}
			t.record(o, p.Topic, p.Partition, p.Records)
		})
		if !cfg.AutoCommit && fetches.NumRecords() > 0 {
			if err := cl.CommitUncommittedOffsets(ctx); err != nil && ctx.Err() == nil {
				o.log("commit error", "error", err.Error())
			} else if ctx.Err() == nil {
				o.log("committed", "offsets", committedView(cl.CommittedOffsets()))
			}
		}
	}
	o.log("stopping", "reason", reason)
	// A last commit of what was consumed, as the Java client does on close
	// (auto commit) and as a manual committer does on shutdown.
	cctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := cl.CommitUncommittedOffsets(cctx); err != nil {
		o.log("commit error", "error", err.Error())
	} else {
		o.log("committed", "offsets", committedView(cl.CommittedOffsets()))
	}
	return nil
}

func (t *tracker) record(o *out, topic string, partition int32, recs []*kgo.Record) {
	key := tp{topic, partition}
	t.mu.Lock()
	defer t.mu.Unlock()
	first := recs[0].Offset
	if !t.started[key] {
		t.started[key] = true
		committed, known := t.committed[key]
		if !known {
			committed = -1
		}
		kv := []any{"topic", topic, "partition", partition, "offset", first, "committed", committed}
		switch prior, oor := t.resetOOR[key]; {
		case oor:
			kv = append(kv, "reset", true, "resetCause", "OffsetOutOfRange", "skipped", first-prior)
		case committed < 0:
			kv = append(kv, "reset", true, "resetCause", "NoCommittedOffset", "skipped", int64(0))
		case first != committed:
			kv = append(kv, "reset", true, "resetCause", "OffsetOutOfRange", "skipped", first-committed)
		default:
			kv = append(kv, "reset", false, "skipped", int64(0))
		}
		o.log("first record", kv...)
	} else if last := t.last[key]; first > last+1 {
		o.log("skipped", "topic", topic, "partition", partition, "from", last+1, "to", first-1, "count", first-last-1)
	}
	for i := 1; i < len(recs); i++ {
		if prev, cur := recs[i-1].Offset, recs[i].Offset; cur > prev+1 {
			o.log("skipped", "topic", topic, "partition", partition, "from", prev+1, "to", cur-1, "count", cur-prev-1)
		}
	}
	last := recs[len(recs)-1].Offset
	t.last[key] = last
	o.log("consumed", "topic", topic, "partition", partition, "first", first, "last", last, "count", len(recs))
}

func committedView(m map[string]map[int32]kgo.EpochOffset) map[string]map[string]int64 {
	out := map[string]map[string]int64{}
	for topic, ps := range m {
		out[topic] = map[string]int64{}
		for p, eo := range ps {
			out[topic][strconv.Itoa(int(p))] = eo.Offset
		}
	}
	return out
}
