package kafka

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/retentionguard/retention-guard/internal/proof"
)

// A topic without its own override of a config reports the value the
// answering broker derives from its own settings, and every partition
// leader applies its own: brokers configured differently delete a topic's
// partitions on different clocks. The observer asks every broker for the
// settings below and judges such a topic by the strictest broker.
//
// How Kafka derives the topic value from a broker's settings (Kafka's
// KafkaConfig.logRetentionTimeMillis and LogConfig's synonyms; see
// docs/kafka-semantics.md):
//
//	retention.ms                     log.retention.ms, else log.retention.minutes × 60000, else log.retention.hours × 3600000 (negative: -1, infinite)
//	retention.bytes                  log.retention.bytes
//	cleanup.policy                   log.cleanup.policy
//	delete.retention.ms              log.cleaner.delete.retention.ms
//	message.timestamp.type           log.message.timestamp.type
//	message.timestamp.before.max.ms  log.message.timestamp.before.max.ms (Kafka 3.6+)
const (
	brokerLogRetentionMs         = "log.retention.ms"
	brokerLogRetentionMinutes    = "log.retention.minutes"
	brokerLogRetentionHours      = "log.retention.hours"
	brokerLogRetentionBytes      = "log.retention.bytes"
	brokerLogCleanupPolicy       = "log.cleanup.policy"
	brokerDeleteRetentionMs      = "log.cleaner.delete.retention.ms"
	brokerTimestampType          = "log.message.timestamp.type"
	brokerTimestampBeforeMaxMs   = "log.message.timestamp.before.max.ms"
	millisPerMinute, millisPerHr = 60_000, 3_600_000
)

var brokerDefaultKeys = []string{
	brokerLogRetentionMs, brokerLogRetentionMinutes, brokerLogRetentionHours, brokerLogRetentionBytes,
	brokerLogCleanupPolicy, brokerDeleteRetentionMs, brokerTimestampType, brokerTimestampBeforeMaxMs,
}

// brokerDefaultSource reports whether a config's source is a broker's
// setting rather than the topic's own override.
func brokerDefaultSource(src kmsg.ConfigSource) bool {
	switch src {
	case kmsg.ConfigSourceDynamicBrokerConfig, kmsg.ConfigSourceDynamicDefaultBrokerConfig,
		kmsg.ConfigSourceStaticBrokerConfig, kmsg.ConfigSourceDefaultConfig:
		return true
	}
	return false
}

// applyBrokerDefaults replaces each inherited topic config by the strictest
// value the brokers derive for it. When a broker's settings for a key could
// not be read, the topic's value stays as the answering broker gave it.
func (p *pass) applyBrokerDefaults(inherited map[string]map[string]bool, defaults map[int32]map[string]proof.ConfigValue) {
	if len(p.brokers) == 0 {
		return
	}
	for name, keys := range inherited {
		ts := p.topics[name]
		if ts == nil {
			continue
		}
		for key, fromBroker := range keys {
			if !fromBroker {
				continue
			}
			target := ts.configValue(key)
			if target == nil || !target.Present {
				continue
			}
			v, ok := strictestDefault(key, p.brokers, defaults)
			if !ok {
				p.o.opts.logger.V(1).Info("a broker's default for an inherited topic config could not be read; the answering broker's value stands",
					"connection", p.conn.String(), "topic", name, "config", key)
				continue
			}
			if v.Value != target.Value {
				p.o.opts.logger.V(1).Info("brokers' defaults differ from the answering broker's; the strictest governs",
					"connection", p.conn.String(), "topic", name, "config", key, "answered", target.Value, "strictest", v.Value)
			}
			*target = v
		}
	}
}

func (ts *topicState) configValue(key string) *proof.ConfigValue {
	switch key {
	case configRetentionMs:
		return &ts.retentionMs
	case configRetentionBytes:
		return &ts.retentionBytes
	case configCleanupPolicy:
		return &ts.cleanupPolicy
	case configDeleteRetentionMs:
		return &ts.deleteRetentionMs
	case configTimestampType:
		return &ts.timestampType
	case configTimestampBeforeMaxMs:
		return &ts.timestampBeforeMaxMs
	}
	return nil
}

// brokerValue is one broker's derived value for a topic config.
type brokerValue struct {
	value  string
	source string // the broker setting it comes from
}

// strictestDefault derives key on every broker and folds the values to the
// strictest, with a Source that says where it comes from. ok is false when
// a broker's setting could not be read.
func strictestDefault(key string, brokers []int32, defaults map[int32]map[string]proof.ConfigValue) (proof.ConfigValue, bool) {
	values := make([]brokerValue, 0, len(brokers))
	for _, id := range brokers {
		bv, ok := deriveDefault(key, defaults[id])
		if !ok {
			return proof.ConfigValue{}, false
		}
		values = append(values, bv)
	}
	best := values[0]
	for _, v := range values[1:] {
		best = stricter(key, best, v)
	}
	distinct := map[string]bool{}
	for _, v := range values {
		distinct[v.value] = true
	}
	src := "broker default " + best.source
	if len(distinct) > 1 {
		src += fmt.Sprintf(", the strictest of %d brokers that disagree", len(brokers))
	}
	return proof.ConfigValue{Present: true, Value: best.value, Source: src}, true
}

// brokerDefaultOf is the broker setting each topic config defaults to, for
// the configs that take one setting as is (Kafka's ServerTopicConfigSynonyms).
var brokerDefaultOf = map[string]string{
	configRetentionBytes:       brokerLogRetentionBytes,
	configCleanupPolicy:        brokerLogCleanupPolicy,
	configDeleteRetentionMs:    brokerDeleteRetentionMs,
	configTimestampType:        brokerTimestampType,
	configTimestampBeforeMaxMs: brokerTimestampBeforeMaxMs,
}

// deriveDefault is Kafka's derivation of a topic config from one broker's
// settings.
func deriveDefault(key string, b map[string]proof.ConfigValue) (brokerValue, bool) {
	read := func(k string) (string, bool) {
		v, ok := b[k]
		if !ok || !v.Present || v.Null {
			return "", false
		}
		return strings.TrimSpace(v.Value), true
	}
	switch key {
	case configRetentionMs:
		// KafkaConfig.logRetentionTimeMillis: ms, else minutes, else hours;
		// negative is infinite (-1).
		var ms int64
		var src string
		for _, u := range []struct {
			key  string
			unit int64
		}{{brokerLogRetentionMs, 1}, {brokerLogRetentionMinutes, millisPerMinute}, {brokerLogRetentionHours, millisPerHr}} {
			v, ok := read(u.key)
			if !ok {
				continue
			}
			n, ok := brokerValue{value: v}.config().Int()
			if !ok {
				return brokerValue{}, false
			}
			ms, src = n*u.unit, u.key
			break
		}
		if src == "" {
			return brokerValue{}, false
		}
		if ms < 0 {
			ms = -1
		}
		return brokerValue{strconv.FormatInt(ms, 10), src}, true
	}
	// The other topic configs take one broker setting as their default.
	if bk, ok := brokerDefaultOf[key]; ok {
		v, ok := read(bk)
		return brokerValue{v, bk}, ok
	}
	return brokerValue{}, false
}

// stricter returns the value that deletes sooner or protects less:
//
//	retention.ms, retention.bytes  the smallest non-negative (negative: unbounded, the loosest)
//	delete.retention.ms            the smallest
//	cleanup.policy                 the union (held to both rules)
//	message.timestamp.type         CreateTime over LogAppendTime (producer clocks)
//	message.timestamp.before.max   the largest (the loosest bound on old timestamps)
//
// A value that does not parse wins: the proof reports it unreadable.
func stricter(key string, a, b brokerValue) brokerValue {
	switch key {
	case configRetentionMs, configRetentionBytes, configDeleteRetentionMs:
		x, y, bad := parseBoth(a, b)
		if bad != nil {
			return *bad
		}
		bound := func(n int64) int64 {
			if n < 0 && key != configDeleteRetentionMs {
				return math.MaxInt64
			}
			return n
		}
		if bound(y) < bound(x) {
			return b
		}
		return a
	case configCleanupPolicy:
		var items []string
		for _, v := range []string{a.value, b.value} {
			for item := range strings.SplitSeq(v, ",") {
				item = strings.ToLower(strings.TrimSpace(item))
				if item != "" && !slices.Contains(items, item) {
					items = append(items, item)
				}
			}
		}
		slices.Sort(items)
		src := a.source
		return brokerValue{strings.Join(items, ","), src}
	case configTimestampType:
		if a.config().LogAppendTime() {
			return b
		}
		return a
	case configTimestampBeforeMaxMs:
		x, y, bad := parseBoth(a, b)
		switch {
		case bad != nil:
			return *bad
		case y > x:
			return b
		}
		return a
	}
	return a
}

// parseBoth parses both values as integers; when one does not parse, it
// is returned as bad (a first), to win: the proof reports it unreadable.
func parseBoth(a, b brokerValue) (x, y int64, bad *brokerValue) {
	x, okA := a.config().Int()
	if !okA {
		return 0, 0, &a
	}
	y, okB := b.config().Int()
	if !okB {
		return 0, 0, &b
	}
	return x, y, nil
}

// config is the broker setting as a config value, read by the proof's one
// rule (proof.ConfigValue.Int).
func (b brokerValue) config() proof.ConfigValue {
	return proof.ConfigValue{Present: true, Value: b.value}
}
