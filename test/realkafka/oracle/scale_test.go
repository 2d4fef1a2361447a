package oracle

import (
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/retentionguard/retention-guard/internal/kafka/apachekafka"
)

// Every clock of a trial is a production clock scaled by one factor:
// offsets.retention.minutes' default of 7 days becomes its floor, one
// minute (GroupCoordinatorConfig: atLeast(1)), so the factor is 1/10080,
// and every other clock — the brokers' defaults, the topic's settings,
// the recovery window, the commit's age — is divided by the same 10080.
// A rate measured on the scaled brokers (how often offsets expire within a
// window, how often retention deletes a lagging record) is then the rate a
// cluster of those settings sees in production.
const timeScale = 10080 // 7 days / 1 minute

// scaled is a production duration on the trials' clock, to the
// millisecond, at least 1 ms (Kafka's floor for the intervals below).
func scaled(d time.Duration) time.Duration {
	return max(time.Millisecond, (d / timeScale).Round(time.Millisecond))
}

const day = 24 * time.Hour

// The brokers' defaults (Kafka 3.9 and 4.4 alike unless said), scaled.
var (
	// log.retention.hours=168 (topic retention.ms): 60 s.
	defaultRetention = scaled(7 * day)
	// log.roll.hours=168 (topic segment.ms): 60 s.
	defaultSegment = scaled(7 * day)
	// log.cleaner.delete.retention.ms, 1 day (topic delete.retention.ms):
	// 8.571 s.
	defaultDeleteRetention = scaled(day)
)

// scaledBroker are the options that give a line's broker its defaults
// scaled: the clocks the proof or the outcome depends on. What the
// harness's defaults set otherwise (session timeouts, rebalance delays:
// membership, not retention) stays as it is.
func scaledBroker(line string) []apachekafka.Option {
	ms := func(d time.Duration) string { return strconv.FormatInt(d.Milliseconds(), 10) }
	opts := []apachekafka.Option{
		// 7 days → 1 minute: the floor, and the factor's origin.
		apachekafka.WithOffsetsRetention(scaled(7 * day)),
		// 600 000 ms → 60 ms (atLeast(1)).
		apachekafka.WithBrokerConfig("offsets.retention.check.interval.ms", ms(scaled(10*time.Minute))),
		// 300 000 ms → 30 ms (atLeast(1)).
		apachekafka.WithBrokerConfig("log.retention.check.interval.ms", ms(scaled(5*time.Minute))),
		apachekafka.WithBrokerConfig("log.retention.ms", ms(defaultRetention)),
		apachekafka.WithBrokerConfig("log.roll.ms", ms(defaultSegment)),
		apachekafka.WithBrokerConfig("log.cleaner.delete.retention.ms", ms(defaultDeleteRetention)),
		// 15 000 ms → 1 ms (1.49 ms, to the millisecond; atLeast(0)).
		apachekafka.WithBrokerConfig("log.cleaner.backoff.ms", ms(scaled(15*time.Second))),
		// 30 000 ms → 3 ms.
		apachekafka.WithBrokerConfig("log.initial.task.delay.ms", ms(scaled(30*time.Second))),
		// Not a clock, but as deployed: __consumer_offsets of 50
		// partitions (the harness makes it one, to start fast). With one,
		// every trial's group shares it, and one trial's transactional
		// commit held open holds back the last stable offset, so the exact
		// times, of every other group: the reader does not reach the high
		// watermark, and the proof falls back to bounds.
		apachekafka.WithBrokerConfig("offsets.topic.num.partitions", "50"),
		// Bytes scaled too, by 1/1024: log.segment.bytes 1 GiB → 1 MiB
		// (segmentBytes; atLeast(14) on 3.9, 1 MiB the floor on 4.x). A
		// topic's traffic then fills a segment in a few MB, as a
		// production topic's does in gigabytes (drawTraffic); the trials'
		// own records, a few bytes each, never do. Not a clock, and no
		// rule of the proof reads it.
		apachekafka.WithBrokerConfig("log.segment.bytes", strconv.Itoa(segmentBytes)),
	}
	if kip848Line(line) {
		// 4.x: one hour → 357 ms (atLeast(0)). 3.x keeps Long.MAX_VALUE:
		// unbounded, as deployed, scaled or not.
		opts = append(opts, apachekafka.WithBrokerConfig("log.message.timestamp.after.max.ms", ms(scaled(time.Hour))))
	}
	return opts
}

// drawProduction draws the scenario's clocks from production-shaped
// values, scaled: retention 1–14 days (the default of 7 half as often as
// the rest together), segments rolled every hour to every 7 days (the
// default), tombstones kept 1 hour to 7 days (1 day the default), a
// window of 6 hours to 3 days, and a group down since its commit for
// nothing to 6 days. It runs after every other draw of Generate, so the
// draws before it stay as they were; it replaces their clocks in seconds.
func drawProduction(r *rand.Rand, s *Scenario) {
	pick := func(ds ...time.Duration) time.Duration { return scaled(ds[r.IntN(len(ds))]) }
	s.RetentionMs = pick(1*day, 2*day, 3*day, 5*day, 7*day, 7*day, 14*day).Milliseconds()
	s.SegmentMs = pick(time.Hour, 6*time.Hour, day, 7*day, 7*day).Milliseconds()
	s.Window = pick(6*time.Hour, 12*time.Hour, day, 2*day, 3*day)
	s.CommitAge = 0
	if r.IntN(3) > 0 {
		s.CommitAge = pick(time.Hour, 6*time.Hour, day, 3*day, 6*day)
	}
	if s.Compacted() {
		s.DeleteRetentionMs = pick(time.Hour, day, day, 7*day).Milliseconds()
	}
}

// segmentBytes is the brokers' log.segment.bytes: Kafka's 1 GiB scaled
// by 1/1024.
const segmentBytes = 1 << 20

// padBytes is one record of a topic's traffic (drawTraffic): most of a
// segment, within max.message.bytes (1 MiB) and kgo's batch bound
// (1,000,012 bytes), so that the active segment holding one is rolled by
// the next (LogSegment.shouldRoll: size > segment.bytes − the batch's).
const padBytes = 900_000

// trafficPeriods are the production periods in which a topic's traffic
// fills a segment (drawTraffic); 0 is a quiet topic.
var trafficPeriods = []time.Duration{0, time.Hour, 6 * time.Hour, day}

// drawTraffic draws how busy the topic is besides the group's own records
// (a few a second, which never fill a segment): quiet (segments roll on
// segment.ms alone), or traffic that fills a segment (1 GiB, scaled) every
// hour, 6 hours or day — one of the four alike — with the active segment
// at the window's start filled to a point drawn uniformly (the first roll
// comes that share of RollEvery into the window). A production topic's
// traffic rolls its segments by size; without it no trial could show a
// rule that counts on a roll (a tombstone goes only from a cleaned, so
// rolled, segment) holding, or a Proven that a roll breaks. The kinds with
// a cluster of their own draw it too: a diverged log's new leader and a
// tiered topic's remote tier see their segments roll by size as well. It
// runs after every other draw of Generate.
func drawTraffic(r *rand.Rand, s *Scenario) {
	every := trafficPeriods[r.IntN(len(trafficPeriods))]
	phase := r.Float64()
	if every == 0 {
		return
	}
	s.RollEvery = scaled(every)
	s.FirstRoll = time.Duration(phase * float64(s.RollEvery)).Round(time.Millisecond)
}

// withoutDefaults drops from a topic's configs the clocks equal to the
// broker's (scaled) default: the topic is then created as deployed, with
// no override.
func withoutDefaults(c map[string]string) map[string]string {
	for k, d := range map[string]time.Duration{"retention.ms": defaultRetention, "segment.ms": defaultSegment, "delete.retention.ms": defaultDeleteRetention} {
		if c[k] == strconv.FormatInt(d.Milliseconds(), 10) {
			delete(c, k)
		}
	}
	return c
}
