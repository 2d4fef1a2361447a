package oracle

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"
)

// offsetsRetention is the brokers' offsets.retention.minutes (Kafka's
// floor, one minute): its default of 7 days scaled (scale_test.go), as
// every clock of a scenario is.
const offsetsRetention = time.Minute

// Group kinds a scenario sets up.
const (
	groupClassic  = "classic"  // joins as a classic consumer, commits, leaves (Empty)
	groupSimple   = "simple"   // commits without joining (Flink, Spark, assign())
	groupConsumer = "consumer" // KIP-848: joins with the consumer protocol, commits, leaves
)

// Scenario is one trial: the state set up on a real broker before the
// verdict, the window the consumer then stays down, and how it restarts.
// Every duration is a production one scaled by 1/10080 (scale_test.go),
// against offsets.retention.minutes of 1.
type Scenario struct {
	Seed  uint64
	Index int
	Line  string // broker line, e.g. "3.9", "4.4"

	Partitions    int32
	Records       int   // per partition, before the commit
	RetentionMs   int64 // topic retention.ms
	SegmentMs     int64 // topic segment.ms: how often a segment rolls (on append)
	CleanupPolicy string
	// DeleteRetentionMs is the topic's delete.retention.ms (compact only):
	// how long the cleaner keeps a tombstone.
	DeleteRetentionMs int64

	Group string // groupClassic, groupSimple or groupConsumer
	// Running: a member is still in the group at the verdict and leaves
	// right after it (classic and consumer only); otherwise the group is
	// down (Empty, or simple) from its commit on.
	Running bool
	// Lag is how many records per partition the commit leaves unread.
	Lag int
	// CommitAge is the time from the commit to the verdict.
	CommitAge time.Duration
	// Window is the recovery window the verdict is asked for, and how
	// long the consumer stays down after it.
	Window time.Duration
	// Rate is records per second per partition produced while down (at
	// least one: every trial has records to lose).
	Rate int
	// RollEvery is how often the topic's traffic besides the group's
	// records fills a segment (drawTraffic): a record of padBytes on every
	// partition that often while the consumer is down, after one before
	// the group's records so that the first of the window rolls the
	// segment. Zero: a quiet topic, only the group's records.
	RollEvery time.Duration
	// FirstRoll is when the window's first such record comes, from its
	// start (less than RollEvery): how full the active segment was.
	FirstRoll time.Duration
	// ReadOffsetsTopic: the check reads exact commit times from
	// __consumer_offsets.
	ReadOffsetsTopic bool
	// Reset is the restarted consumer's auto.offset.reset.
	Reset string

	// Issue 33's kinds that one broker per line can show (those that need
	// a cluster of their own follow them).

	// AddPartition: right after the group's commit the topic gets one
	// more partition (CreatePartitions), written to before the verdict and
	// while the consumer is down. The group has no offset on it: the
	// restarted consumer starts it at Reset, and must read it from 0
	// (item 4: latest skips it).
	AddPartition bool
	// TxnCommit is how long the group's commit stays in an open
	// transaction (AddOffsetsToTxn, TxnOffsetCommit as the member, or
	// without one for a simple group) before it commits: the offset is
	// stamped when sent, and shows when the transaction ends (item 5).
	// Zero: a plain OffsetCommit.
	TxnCommit time.Duration
	// TxnProducer: every record is written in a transaction of its own
	// producer (an exactly-once writer): control markers sit between the
	// records, and after the last one (the committed offset of a
	// caught-up group is one past a marker).
	TxnProducer bool
	// Tombstones (compact only) per partition: keys written once and
	// deleted right before the commit, never written again, all behind
	// the committed offset (Lag covers them): the consumer must read each
	// tombstone, which the cleaner drops delete.retention.ms after the
	// cleaning that first saw it, counted from when it was written
	// (item 2).
	Tombstones int

	// Issue 33's kinds that need a cluster of their own (diverged_test.go,
	// tiered_test.go): started only when a trial draws them, one per line.

	// Diverged: the topic lives on the line's three-node cluster, each
	// partition on two replicas; the last Truncated records before the
	// commit are written while the follower is down, the commit points
	// into them (Lag < Truncated), and before the verdict the leader
	// crashes and the stale follower is elected uncleanly: the log is
	// truncated below the commit and grows back past it (item 1).
	Diverged  bool
	Truncated int
	// EpochLess: the diverged trial's commit carries no leader epoch, as
	// kafka-consumer-groups --reset-offsets and
	// Admin.alterConsumerGroupOffsets commit; otherwise it carries the
	// epoch the records it points past were written in (a KIP-320
	// client's commit).
	EpochLess bool
	// Tiered: the topic lives on the line's tiered broker
	// (remote.storage.enable, local.retention.ms of a second): closed
	// segments move to the remote tier, remote expiry moves the log start,
	// and the record at a lagging group's offset may be served from the
	// remote tier or not at all (item 3).
	Tiered bool
}

// TotalPartitions is how many partitions the topic has once the
// scenario is set up (one more when a partition is added).
func (s Scenario) TotalPartitions() int32 {
	if s.AddPartition {
		return s.Partitions + 1
	}
	return s.Partitions
}

// Generate draws trial i of a seeded run on one of lines (round robin):
// the same seed and index give the same scenario.
func Generate(seed uint64, i int, lines []string) Scenario {
	r := rand.New(rand.NewPCG(seed, uint64(i)))
	pick := func(xs ...int) int { return xs[r.IntN(len(xs))] }
	s := Scenario{
		Seed:       seed,
		Index:      i,
		Line:       lines[i%len(lines)],
		Partitions: int32(1 + r.IntN(2)),
		Records:    10 + r.IntN(21),
		SegmentMs:  int64(1000 * (1 + r.IntN(4))),
		Group:      []string{groupClassic, groupSimple, groupConsumer}[r.IntN(3)],
		// Windows around offsets.retention.minutes (60 s): below it the
		// clocks of commits and records decide, above it the setting.
		Window:           time.Duration(pick(15, 20, 25, 30, 40, 50, 70)) * time.Second,
		CommitAge:        time.Duration(pick(0, 0, 5, 15, 30, 45)) * time.Second,
		Rate:             1 + r.IntN(3),
		ReadOffsetsTopic: r.IntN(2) == 0,
		Reset:            []string{"earliest", "latest"}[r.IntN(2)],
		CleanupPolicy:    "delete",
	}
	if s.Group == groupConsumer && !kip848Line(s.Line) {
		// The setup's client (franz-go) speaks KIP-848 from Kafka 4.0
		// (ConsumerGroupHeartbeat v1) and joins 3.9's preview as a classic
		// member: a 3.9 trial of a KIP-848 group would be a classic one.
		s.Group = []string{groupClassic, groupSimple}[r.IntN(2)]
	}
	if s.Group != groupSimple {
		s.Running = r.IntN(2) == 0
	}
	if r.IntN(2) == 0 {
		s.Lag = 1 + r.IntN(s.Records)
	}
	// Retention relative to the window: shorter, equal, a little and a lot
	// longer; never under 5 s.
	f := []float64{0.5, 1, 1.5, 3}[r.IntN(4)]
	s.RetentionMs = max(5000, int64(f*float64(s.Window.Milliseconds())))
	if r.IntN(4) == 0 {
		s.CleanupPolicy = "compact"
		s.DeleteRetentionMs = max(5000, int64([]float64{0.5, 2}[r.IntN(2)]*float64(s.Window.Milliseconds())))
	}
	// Issue 33's kinds, each with a modest probability and drawn after
	// everything above, so that the rest of a seed's scenarios stay as
	// they were drawn before.
	s.AddPartition = r.IntN(6) == 0
	if r.IntN(6) == 0 {
		s.TxnCommit = time.Duration(2+r.IntN(4)) * time.Second
	}
	s.TxnProducer = r.IntN(8) == 0
	if s.Compacted() && r.IntN(2) == 0 {
		s.Tombstones = 1 + r.IntN(3)
		s.Lag = max(s.Lag, s.Tombstones)
		// delete.retention.ms around the window and the commit's age:
		// the tombstones were written CommitAge before the verdict.
		s.DeleteRetentionMs = max(5000, int64([]float64{0.5, 1, 1.5, 2}[r.IntN(4)]*float64(s.Window.Milliseconds())))
	}
	// Every clock a production one, scaled (scale_test.go): drawn after
	// the rest, replacing the clocks in seconds drawn above.
	drawProduction(r, &s)
	// The kinds that need a cluster of their own (clusters_test.go).
	drawClusterKinds(r, &s)
	// The topic's traffic (scale_test.go), last.
	drawTraffic(r, &s)
	return s
}

// kip848Line reports whether a broker line has KIP-848 generally
// available (4.0 and later).
func kip848Line(line string) bool {
	major, _, _ := strings.Cut(line, ".")
	n, err := strconv.Atoi(major)
	return err == nil && n >= 4
}

// Topic and GroupID name the scenario's own topic and group on a shared
// broker.
func (s Scenario) Topic() string   { return fmt.Sprintf("oracle-%d-%d", s.Seed, s.Index) }
func (s Scenario) GroupID() string { return fmt.Sprintf("oracle-%d-%d-%s", s.Seed, s.Index, s.Group) }

// TopicConfigs are the topic's configs as created.
func (s Scenario) TopicConfigs() map[string]string {
	c := map[string]string{
		"cleanup.policy": s.CleanupPolicy,
		"retention.ms":   fmt.Sprint(s.RetentionMs),
		"segment.ms":     fmt.Sprint(s.SegmentMs),
	}
	if s.CleanupPolicy == "compact" {
		c["delete.retention.ms"] = fmt.Sprint(s.DeleteRetentionMs)
		c["min.cleanable.dirty.ratio"] = "0.01"
		c["min.compaction.lag.ms"] = "0"
	}
	c = withoutDefaults(c)
	maps.Copy(c, s.clusterKindConfigs())
	return c
}

// Compacted reports whether the topic compacts (a record is then lost only
// when the last one of its key is).
func (s Scenario) Compacted() bool { return strings.Contains(s.CleanupPolicy, "compact") }

// String is the scenario in one line, with what reproduces it.
func (s Scenario) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "seed %d trial %d on Kafka %s: %d partition(s) of %d records, cleanup.policy=%s retention.ms=%d segment.ms=%d",
		s.Seed, s.Index, s.Line, s.Partitions, s.Records, s.CleanupPolicy, s.RetentionMs, s.SegmentMs)
	if s.Compacted() {
		fmt.Fprintf(&b, " delete.retention.ms=%d", s.DeleteRetentionMs)
	}
	state := "down from its commit"
	if s.Running {
		state = "running at the verdict, down right after"
	}
	if s.TxnProducer {
		b.WriteString(", written by a transactional producer")
	}
	if s.Tombstones > 0 {
		fmt.Fprintf(&b, ", %d tombstone(s) per partition behind the commit", s.Tombstones)
	}
	commit := "commit"
	if s.TxnCommit > 0 {
		commit = fmt.Sprintf("transactional commit (open %s)", s.TxnCommit)
	}
	fmt.Fprintf(&b, "; %s group %s, lag %d, %s %s before the verdict", s.Group, state, s.Lag, commit, s.CommitAge)
	if s.AddPartition {
		fmt.Fprintf(&b, "; partition %d added after the commit", s.Partitions)
	}
	traffic := "a quiet topic"
	if s.RollEvery > 0 {
		traffic = fmt.Sprintf("traffic filling a segment every %s (the first %s into the window)", s.RollEvery, s.FirstRoll)
	}
	fmt.Fprintf(&b, "; window %s, %d records/s per partition while down, %s; readOffsetsTopic=%t; restart with auto.offset.reset=%s",
		s.Window, s.Rate, traffic, s.ReadOffsetsTopic, s.Reset)
	b.WriteString(s.clusterKindString())
	return b.String()
}
