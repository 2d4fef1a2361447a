package oracle

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/retentionguard/retention-guard/internal/cli"
	"github.com/retentionguard/retention-guard/internal/kafka/apachekafka"
	"github.com/retentionguard/retention-guard/internal/kafka/kafkatest"
	"github.com/retentionguard/retention-guard/internal/proof"
)

// Outcomes of a trial: the verdict against what the restarted consumer
// really read.
const (
	trueProven  = "true Proven"  // Proven, nothing lost
	falseProven = "FALSE PROVEN" // Proven, and the consumer skipped records
	// warnedProven: Proven, the consumer skipped records, and the proof's
	// own numbers said it would: every partition that lost records had a
	// recovery headroom below the window, or the group's offsets were to
	// expire within it (groupOffsetsExpireIn). Since issue 22 item 6 those
	// numbers make the proof Violated (RecoveryHeadroomShorterThanWindow,
	// EmptyGroupOffsetsExpireBeforeWindow), so such a Proven is a false
	// Proven like any other: counted apart (it says which rule slipped),
	// failed on all the same.
	warnedProven = "false Proven, warned"
	trueAlarm    = "true alarm"  // not Proven, and records were lost
	falseAlarm   = "false alarm" // not Proven, and nothing was lost
	// inconclusive: what decides where the restarted consumer resumes
	// changed between the window's end and its return (an offset expired,
	// a segment was deleted in that moment), or it never was assigned: the
	// verdict is not held to it.
	inconclusive = "inconclusive"
)

// jvmLead is how long before the window's end the consumer's JVM starts
// behind the gate: time to load kafka-clients on two loaded cores (with
// load averages of 60 to 90, a JVM's start and join took up to a minute).
// A JVM slower than that only connects later, which the end-of-window
// state check covers.
const jvmLead = 45 * time.Second

// consumerIdle is how long the restarted consumer waits without a record
// (once through the gate) before it commits and exits: long enough to join
// and fetch on a loaded machine.
const consumerIdle = 20 * time.Second

// compactionKeys is how many keys a compacting topic's records spread
// over: enough that some keys are not written again after the restart (a
// consumer that skipped to the end would see their last value again
// otherwise, and lose nothing).
const compactionKeys = 20

// produced is one record the trial wrote.
type produced struct {
	offset    int64
	key       string
	tombstone bool
}

// verdict is what `retention-guard check --output json` said.
type verdict struct {
	Verdict  string   `json:"verdict"`
	Warnings []string `json:"warnings"`
	// ConfigWarnings say, among others, why __consumer_offsets gave no
	// exact times (not read to its end: an open transaction, a deadline).
	ConfigWarnings []string `json:"configWarnings"`
	// The group as the observer classified it, and the clock the proof
	// dated its offsets by.
	GroupState        string `json:"groupState"`
	GroupProtocol     string `json:"groupProtocol"`
	GroupProtocolType string `json:"groupProtocolType"`
	OffsetExpiry      *struct {
		Clock string `json:"clock"`
	} `json:"offsetExpiry"`
	// GroupOffsetsExpireIn is a Go duration ("14s"), set while a clock
	// runs on the group's offsets.
	GroupOffsetsExpireIn string             `json:"groupOffsetsExpireIn"`
	Partitions           []partitionVerdict `json:"partitions"`
	Violations           []struct {
		Reason string `json:"reason"`
	} `json:"violations"`
}

type partitionVerdict struct {
	Partition       int32  `json:"partition"`
	HeadroomSeconds *int64 `json:"headroomSeconds"`
}

// warned reports whether the proof's own numbers put the loss of
// partition p inside the window: its recovery headroom, or the group's
// offsets' expiry, below the window.
func (v verdict) warned(p int32, window time.Duration) bool {
	if d, err := time.ParseDuration(v.GroupOffsetsExpireIn); err == nil && d < window {
		return true
	}
	for _, pr := range v.Partitions {
		if pr.Partition == p && pr.HeadroomSeconds != nil && time.Duration(*pr.HeadroomSeconds)*time.Second < window {
			return true
		}
	}
	return false
}

func (v verdict) reasons() []string {
	var out []string
	for _, x := range v.Violations {
		if !slices.Contains(out, x.Reason) {
			out = append(out, x.Reason)
		}
	}
	return out
}

// outcome is one trial's result.
type outcome struct {
	scenario Scenario
	verdict  verdict
	kind     string
	// lost are the offsets, per partition, that the consumer had to read
	// (produced at or after the committed offset: every one, or on a
	// compacting topic the last of each key) and did not.
	lost     map[int32][]int64
	required int
	// inconclusive says why the trial could not judge the verdict.
	inconclusive string
	// down is how long the consumer was really down: from the verdict to
	// its restart's assignment; late is how much of that came after the
	// window's end (the join once the gate opened).
	down, late time.Duration
	resets     map[int32]string // partitions whose position the client reset, and why
	// restart is, per partition, where the restarted client was told to
	// resume (the group's committed offset then) and the log's bounds.
	restart map[int32]string
	// consumerLog is the restarted consumer's stdout, for a false Proven.
	consumerLog string
	took        time.Duration
	// claims are the verdict's reasons, each scored against what the
	// broker did (score_test.go); alarm says how a true alarm is true
	// (alarmLost, alarmClaims).
	claims []claimResult
	alarm  string
	// tombstonesBehind: as the verdict was taken, the group was behind a
	// tombstone it needs (the last record of its key at or after the
	// committed offset; the compacting topics' records are one in five a
	// tombstone of a random key, besides Scenario.Tombstones).
	tombstonesBehind bool
}

// warned: the proof's numbers predicted the loss of every partition that
// lost records.
func (o outcome) warned() bool {
	for p := range o.lost {
		if !o.verdict.warned(p, o.scenario.Window) {
			return false
		}
	}
	return true
}

func (o outcome) lostCount() int {
	n := 0
	for _, l := range o.lost {
		n += len(l)
	}
	return n
}

func (o outcome) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s", o.kind)
	if o.alarm != "" {
		fmt.Fprintf(&b, " (%s)", o.alarm)
	}
	fmt.Fprintf(&b, ": verdict %s", o.verdict.Verdict)
	if rs := o.verdict.reasons(); len(rs) > 0 {
		fmt.Fprintf(&b, " %v", rs)
	}
	for _, c := range o.claims {
		switch {
		case c.Claim == "":
			fmt.Fprintf(&b, "; %s not scored", c.Reason)
		case c.Held:
			fmt.Fprintf(&b, "; %s: %s, held", c.Reason, c.Claim)
		default:
			fmt.Fprintf(&b, "; %s: %s, did NOT hold", c.Reason, c.Claim)
		}
	}
	fmt.Fprintf(&b, " (group seen as %s", o.verdict.GroupProtocol)
	if o.verdict.GroupProtocol == "classic" {
		fmt.Fprintf(&b, " protocol type %q", o.verdict.GroupProtocolType)
	}
	fmt.Fprintf(&b, ", %s", o.verdict.GroupState)
	if e := o.verdict.OffsetExpiry; e != nil && e.Clock != "" {
		fmt.Fprintf(&b, ", offsets dated by %s", e.Clock)
	}
	b.WriteString(")")
	if o.down > 0 {
		fmt.Fprintf(&b, "; down %s (back %s after the window)", o.down.Round(100*time.Millisecond), o.late.Round(100*time.Millisecond))
	}
	if o.kind == inconclusive {
		fmt.Fprintf(&b, "; %s", o.inconclusive)
	}
	fmt.Fprintf(&b, "; %d of %d records the consumer had to read were lost", o.lostCount(), o.required)
	for _, p := range sortedKeys(o.lost) {
		l := o.lost[p]
		fmt.Fprintf(&b, "; partition %d lost %d (offsets %d..%d)", p, len(l), l[0], l[len(l)-1])
	}
	for _, p := range sortedKeys(o.restart) {
		fmt.Fprintf(&b, "; restart p%d: %s", p, o.restart[p])
	}
	if len(o.resets) > 0 {
		fmt.Fprintf(&b, "; client resets %v", o.resets)
	}
	for _, w := range o.verdict.Warnings {
		fmt.Fprintf(&b, "; warning: %s", w)
	}
	for _, w := range o.verdict.ConfigWarnings {
		fmt.Fprintf(&b, "; config warning: %s", w)
	}
	return b.String()
}

func sortedKeys[V any](m map[int32]V) []int32 {
	ks := make([]int32, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

// trial runs one scenario on broker b: set the state up, take the verdict,
// keep the consumer down for the window while producing, restart it and
// compare what it read with what was produced.
func trial(t *testing.T, b *apachekafka.Broker, s Scenario, consumer consumerCommand) outcome {
	t.Helper()
	start := time.Now()
	topic, group := s.Topic(), s.GroupID()
	rng := rand.New(rand.NewPCG(s.Seed, uint64(s.Index)+1<<32))
	log := map[int32][]produced{}
	seq := 0
	// parts is the topic's partition count: one more once a partition is
	// added (AddPartition).
	parts := s.Partitions
	newProducer := func() *kgo.Client {
		if s.TxnProducer {
			return txnProducer(t, b, writerID(s))
		}
		return producer(t, b)
	}
	pcl := newProducer()
	write := func(recs []*kgo.Record) {
		if s.TxnProducer {
			produceInTransaction(t, pcl, recs)
		} else {
			produceRecords(t, pcl, recs)
		}
		for _, r := range recs {
			log[r.Partition] = append(log[r.Partition], produced{offset: r.Offset, key: string(r.Key), tombstone: r.Value == nil})
		}
	}
	produce := func(perPartition int) {
		var recs []*kgo.Record
		for p := range parts {
			for range perPartition {
				r := &kgo.Record{Topic: topic, Partition: p, Value: []byte(fmt.Sprintf("v%d", seq))}
				r.Key = []byte(fmt.Sprintf("r%d", seq))
				if s.Compacted() {
					r.Key = []byte(fmt.Sprintf("k%d", rng.IntN(compactionKeys)))
					if rng.IntN(5) == 0 {
						r.Value = nil // a tombstone
					}
				}
				seq++
				recs = append(recs, r)
			}
		}
		if len(recs) == 0 {
			return
		}
		write(recs)
	}

	// The topic's traffic besides the group's records (drawTraffic): a
	// record of padBytes on every partition, incompressible (kgo
	// compresses), keyed for a compacting topic (the last one of its key
	// stays). One before the group's records fills the first segment, so
	// that the window's first one rolls it.
	var padding []byte
	pad := func() {
		if padding == nil {
			padding = make([]byte, padBytes)
			for i := range padding {
				padding[i] = byte(rng.Uint32())
			}
		}
		var recs []*kgo.Record
		for p := range parts {
			recs = append(recs, &kgo.Record{Topic: topic, Partition: p, Key: []byte("traffic"), Value: padding})
		}
		write(recs)
	}

	// The state before the verdict.
	div := createTopic(t, b, s)
	if s.RollEvery > 0 {
		pad()
	}
	if div != nil {
		// The last Truncated records on the leader alone.
		produce(s.Records - s.Truncated)
		div.isolate(t, b)
		produce(s.Truncated)
	} else {
		produce(s.Records)
	}
	if s.Tombstones > 0 {
		// Keys written once and deleted, never written again: behind the
		// commit (Lag covers the tombstones), the last record of their
		// key, which the consumer must read.
		var recs []*kgo.Record
		for p := range parts {
			for j := range s.Tombstones {
				recs = append(recs, &kgo.Record{Topic: topic, Partition: p, Key: []byte(fmt.Sprintf("gone-%d", j)), Value: []byte("v")})
			}
			for j := range s.Tombstones {
				recs = append(recs, &kgo.Record{Topic: topic, Partition: p, Key: []byte(fmt.Sprintf("gone-%d", j))})
			}
		}
		write(recs)
	}
	committed := map[int32]int64{}
	for p := range s.Partitions {
		end := log[p][len(log[p])-1].offset + 1
		committed[p] = max(0, end-int64(s.Lag))
	}
	var member *kgo.Client
	epochs := div.commitEpochs(t, b, s)
	switch s.Group {
	case groupSimple:
		if s.TxnCommit > 0 {
			txnCommitOffsets(t, b, nil, group, topic, committed, s.TxnCommit)
		} else {
			commitOffsets(t, b, group, topic, committed, epochs)
		}
	case groupClassic, groupConsumer:
		protocol := kafkatest.Classic
		if s.Group == groupConsumer {
			protocol = kafkatest.Consumer
		}
		if s.TxnCommit > 0 {
			member = join(t, b, group, protocol, topic)
			txnCommitOffsets(t, b, member, group, topic, committed, s.TxnCommit)
		} else {
			member = joinAndCommit(t, b, group, protocol, topic, committed, epochs)
		}
		if !s.Running && div == nil {
			member.Close()
			member = nil
			waitEmpty(t, b, group)
		}
	}
	if s.AddPartition {
		// A partition added after the commit, written to before the
		// verdict and while the consumer is down: the group has no offset
		// on it, and must read it from 0.
		addPartition(t, b, topic, parts)
		pcl.Close()
		pcl = newProducer()
		committed[parts] = 0
		parts++
		var recs []*kgo.Record
		for range s.Rate {
			recs = append(recs, &kgo.Record{Topic: topic, Partition: parts - 1, Key: []byte(fmt.Sprintf("r%d", seq)), Value: []byte(fmt.Sprintf("v%d", seq))})
			seq++
		}
		write(recs)
	}
	commitAt := time.Now()
	divergedTo := map[int32]int64{}
	var watch *watcher
	if div != nil {
		// The manager's pass before the fault (watch_test.go).
		watch = newWatcher(t, b, s)
		watch.pass()
		// The unclean election, during the commit's age (longer when the
		// fault takes longer), and the log growing back past the commit
		// (diverged_test.go). The group read the records below its commit;
		// those from the truncation on were replaced by records it never
		// read: it has to read from there.
		ends := div.electUncleanly(t, b)
		for p, end := range ends {
			log[p] = truncate(log[p], end)
			if epochs != nil && committed[p] > end {
				// A commit with its epoch past the truncation: the
				// consumer validates it and rewinds to end (claimRewinds).
				divergedTo[p] = end
			}
			committed[p] = min(committed[p], end)
		}
		pcl.Close() // its sequence numbers went with the truncated records
		pcl = newProducer()
		produce(s.Truncated + 1)
		regrown(t, log, ends, s.Truncated+1)
		if member != nil && !s.Running {
			member.Close()
			member = nil
			waitEmpty(t, b, group)
		}
	}
	time.Sleep(time.Until(commitAt.Add(s.CommitAge)))

	// Whether the group is behind a tombstone it needs (the last record
	// of its key, at or after the commit) as the verdict is taken: the
	// floor (unprovable) counts on it.
	behind := false
	if s.Compacted() {
		for _, offs := range neededTombstones(log, committed) {
			behind = behind || len(offs) > 0
		}
	}

	// The verdict, through the product's own pipeline. The window runs
	// from before the check (the proof's own now is later: its window ends
	// no sooner).
	downAt := time.Now()
	var v verdict
	if watch != nil {
		v = watch.verdict(t)
	} else {
		v = check(t, b, s)
	}
	if member != nil {
		member.Close() // the member leaves: the group is Empty from now
	}

	// Down for the window, records coming in. The consumer's JVM starts
	// before the window ends, behind a gate that holds its connections;
	// at the window's end the harness reads the broker's state (the
	// group's committed offsets, the log starts) and opens the gate.
	protocol := "classic"
	if s.Group == groupConsumer {
		protocol = "consumer"
	}
	g := newGate(t, b.Addrs()[0])
	env := map[string]string{
		"KAFKA_BOOTSTRAP_SERVERS":       g.addr(),
		"KAFKA_GROUP_ID":                group,
		"KAFKA_TOPICS":                  topic,
		"KAFKA_AUTO_OFFSET_RESET":       s.Reset,
		"KAFKA_GROUP_PROTOCOL":          protocol,
		"KAFKA_ENABLE_AUTO_COMMIT":      "true",
		"KAFKA_AUTO_COMMIT_INTERVAL_MS": "1000",
		// Its idle clock starts with the JVM: the gate's hold comes on
		// top. It is a backstop: the trial stops the consumer once it
		// caught up (caughtUp).
		"CONSUMER_EXIT_AFTER_IDLE": (jvmLead + consumerIdle).String(),
	}
	type restart struct {
		run consumerRun
		err error
	}
	restarted := make(chan restart, 1)
	rctx, rcancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer rcancel()
	end := downAt.Add(s.Window)
	launched := false
	// The log ends the restarted consumer must reach: production stops at
	// the window's end, and each partition's last record so far is known
	// when the consumer is launched only if nothing more comes; they are
	// read again, under the lock, once production stopped.
	logEnds := &ends{}
	if s.Compacted() {
		// A delete right as the window starts, of a key written nowhere
		// after it: the tombstone the rules about tombstones written while
		// the group is down speak of (TombstoneRetentionShorterThanWindow),
		// the one with the longest to be dropped before the consumer is
		// back; on a deleting topic the first records play that part.
		var recs []*kgo.Record
		for p := range parts {
			recs = append(recs, &kgo.Record{Topic: topic, Partition: p, Key: []byte("deleted-at-window-start")})
		}
		write(recs)
	}
	// Records every second, the traffic's every RollEvery from FirstRoll.
	nextRecords, nextPad := downAt.Add(time.Second), time.Time{}
	if s.RollEvery > 0 {
		nextPad = downAt.Add(s.FirstRoll)
	}
	for {
		if !launched && !time.Now().Before(end.Add(-jvmLead)) {
			launched = true
			go func() {
				run, err := consumer.run(rctx, env, func(lines []consumerLine) bool { return caughtUp(lines, topic, s.TotalPartitions(), logEnds) })
				restarted <- restart{run, err}
			}()
		}
		if !time.Now().Before(end) {
			break
		}
		next := nextRecords
		if !nextPad.IsZero() && nextPad.Before(next) {
			next = nextPad
		}
		if !launched {
			next = minTime(next, end.Add(-jvmLead))
		}
		time.Sleep(time.Until(minTime(next, end)))
		now := time.Now()
		if !now.Before(end) {
			continue
		}
		if !nextPad.IsZero() && !now.Before(nextPad) {
			pad()
			nextPad = nextPad.Add(s.RollEvery)
		}
		if !now.Before(nextRecords) {
			produce(s.Rate)
			nextRecords = nextRecords.Add(time.Second)
		}
	}
	last := map[int32]int64{}
	for p := range parts {
		last[p] = log[p][len(log[p])-1].offset
	}
	logEnds.set(last)
	atEnd := snapshot(t, b, group, topic)
	g.release()
	// The tombstones the group needs, as the log holds them now: read
	// beside the restarted consumer (which it does not delay), to score a
	// claim that they would be dropped.
	needed := map[int32][]int64{}
	if s.Compacted() {
		needed = neededTombstones(log, committed)
	}
	gone := make(chan map[int32]int, 1)
	reader := tombstoneReader(t, b, topic, needed)
	go func() { gone <- tombstonesGone(reader, needed) }()
	r := <-restarted
	tombs := <-gone
	run := r.run
	if run.unfinishedStop {
		t.Logf("%s: the consumer's JVM exited on the SIGTERM before it logged its stop (no last commit): judged on what it logged", s)
	}
	if r.err != nil || run.exitCode != 0 {
		t.Fatalf("%s: the restarted consumer failed (exit %d, %v, fatal %q):\nstdout:\n%s\nstderr:\n%s", s, run.exitCode, r.err, run.fatal(), run.stdout, tail(run.stderr, 40))
	}
	o := outcome{scenario: s, verdict: v, lost: map[int32][]int64{}, resets: run.resets(topic), restart: run.assigned(topic), consumerLog: run.stdout,
		tombstonesBehind: behind}
	back, ok := run.backAt(topic, parts)
	if !ok {
		o.kind, o.inconclusive = inconclusive, fmt.Sprintf("the restarted consumer was not assigned all %d partitions before it went idle", parts)
		o.took = time.Since(start)
		return o
	}
	o.down, o.late = back.Sub(downAt), back.Sub(end)
	// The consumer was back a moment after the window: it judges the
	// window only if what decides where it resumes (the group's committed
	// offset, the log start under it) was the same when it was back as at
	// the window's end.
	if changed := atEnd.changedFor(run.assignedState(topic)); changed != "" {
		o.kind, o.inconclusive = inconclusive, "between the window's end and the restart "+changed
		o.took = time.Since(start)
		return o
	}

	// What it had to read against what it read.
	read := run.readOffsets(topic)
	for p := range parts {
		for _, off := range required(log[p], committed[p], s.Compacted()) {
			o.required++
			if !read[p][off] {
				o.lost[p] = append(o.lost[p], off)
			}
		}
	}
	// Records the consumer fetched in the poll the harness's stop woke
	// up in are not lost: the trial cannot judge (stoppedMidPoll).
	if o.lostCount() > 0 {
		seen, final := run.shown(topic)
		if why := stoppedMidPoll(o.lost, seen, final, run.assignedState(topic), snapshot(t, b, group, topic)); why != "" {
			o.kind, o.inconclusive = inconclusive, "the consumer was stopped in the poll that fetched what it had to read: "+why
			o.took = time.Since(start)
			return o
		}
	}
	// What the broker did, against what the verdict's reasons claim.
	facts := map[int32]partitionFacts{}
	restartedAt := run.restartedAt(topic)
	for p := range parts {
		f := partitionFacts{Committed: -1, CommittedBack: atEnd[p].committed, LogStartBack: atEnd[p].logStart, Last: -1,
			TombstonesNeeded: len(needed[p]), TombstonesGone: tombs[p]}
		if c, ok := committed[p]; ok && !(s.AddPartition && p == parts-1) {
			f.Committed = c
		}
		if n := len(log[p]); n > 0 {
			f.Last = log[p][n-1].offset
		}
		f.DivergedTo, f.Diverged = divergedTo[p]
		f.RestartedAt = -1
		if at, ok := restartedAt[p]; ok {
			f.RestartedAt = at
		}
		facts[p] = f
	}
	o.claims = scoreClaims(v.reasons(), facts)
	o.kind, o.alarm = judge(v.Verdict == "Proven", o.lostCount() > 0, o.warned(), o.claims)
	o.took = time.Since(start)
	return o
}

// required are the offsets a consumer resuming at committed must read:
// every record from committed on or, on a compacting topic (which keeps
// the last record of each key and drops the rest), the last record of each
// key written from committed on.
func required(log []produced, committed int64, compacted bool) []int64 {
	var out []int64
	if !compacted {
		for _, r := range log {
			if r.offset >= committed {
				out = append(out, r.offset)
			}
		}
		return out
	}
	last := map[string]int64{}
	for _, r := range log {
		last[r.key] = max(last[r.key], r.offset)
	}
	for _, off := range last {
		if off >= committed {
			out = append(out, off)
		}
	}
	slices.Sort(out)
	return out
}

// check takes the verdict as a user does: `retention-guard check --output
// json`, in process (the command's own assembly of observer and proof).
func check(t *testing.T, b *apachekafka.Broker, s Scenario) verdict {
	t.Helper()
	args := []string{"check", "--output", "json", "--timeout", "60s",
		"--bootstrap-server", strings.Join(b.Addrs(), ","),
		"--group", s.GroupID(), "--topic", s.Topic(), "--recovery-window", s.Window.String(),
		// Drawn both ways: the exact times (check's default) and the
		// bounds a principal denied the topic gets.
		"--read-offsets-topic=" + strconv.FormatBool(s.ReadOffsetsTopic),
		// The assumed longest log cleaning, an hour as deployed
		// (proof.DefaultCleaningAllowance), scaled like every clock: a
		// cleaning of these logs of a few records takes milliseconds.
		"--cleaning-allowance", scaled(proof.DefaultCleaningAllowance).String()}
	var stdout, stderr bytes.Buffer
	code := cli.Execute(args, &stdout, &stderr)
	var v verdict
	if err := json.Unmarshal(stdout.Bytes(), &v); err != nil || code == cli.ExitUsage {
		t.Fatalf("%s: check exited %d with no verdict (%v):\n%s\n%s", s, code, err, stdout.String(), stderr.String())
	}
	return v
}

func tail(s string, n int) string {
	ls := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(ls) > n {
		ls = ls[len(ls)-n:]
	}
	return strings.Join(ls, "\n")
}

// ends holds each partition's last offset once production stopped (nil
// before).
type ends struct {
	mu   sync.Mutex
	last map[int32]int64
}

func (e *ends) set(last map[int32]int64) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.last = last
}

func (e *ends) get() map[int32]int64 {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.last
}

// caughtUpQuiet is how long a restarted consumer may stay without a record
// once assigned every partition before it is stopped: it reset past the
// end, or nothing is left for it.
const caughtUpQuiet = 10 * time.Second

// caughtUp reports whether the restarted consumer has what the trial
// needs, so that it is stopped rather than left to its idle clock: every
// partition assigned and either read up to its last record, or quiet for
// caughtUpQuiet since its last assignment or record.
func caughtUp(lines []consumerLine, topic string, partitions int32, logEnds *ends) bool {
	last := logEnds.get()
	if last == nil {
		return false
	}
	assigned := map[int32]bool{}
	read := map[int32]int64{}
	var activity time.Time
	for _, l := range lines {
		if l.Topic != topic {
			continue
		}
		switch l.Msg {
		case "assigned":
			assigned[l.Partition] = true
			activity = l.Time
		case "consumed":
			read[l.Partition] = max(read[l.Partition], l.Last)
			activity = l.Time
		}
	}
	if len(assigned) < int(partitions) {
		return false
	}
	all := true
	for p := range partitions {
		if r, ok := read[p]; !ok || r < last[p] {
			all = false
		}
	}
	return all || time.Since(activity) >= caughtUpQuiet
}

// brokerState is what decides where a restarted consumer resumes, per
// partition: the group's committed offset (-1: none) and the log start.
type brokerState map[int32]partitionState

type partitionState struct {
	committed, logStart int64
}

// snapshot reads the group's committed offsets and the topic's log starts
// (reads only: neither moves an expiry clock).
func snapshot(t *testing.T, b *apachekafka.Broker, group, topic string) brokerState {
	t.Helper()
	ctx, cancel := setupContext()
	defer cancel()
	adm := b.Admin(t)
	starts, err := adm.ListStartOffsets(ctx, topic)
	if err == nil {
		err = starts.Error()
	}
	if err != nil {
		t.Fatalf("reading the log starts of %s at the window's end: %v", topic, err)
	}
	offsets, err := adm.FetchOffsets(ctx, group)
	if err == nil {
		err = offsets.Error()
	}
	if err != nil && !errors.Is(err, kerr.GroupIDNotFound) {
		t.Fatalf("reading the committed offsets of %s at the window's end: %v", group, err)
	}
	st := brokerState{}
	for p, lo := range starts[topic] {
		ps := partitionState{committed: -1, logStart: lo.Offset}
		if c, ok := offsets.Lookup(topic, p); ok && c.At >= 0 {
			ps.committed = c.At
		}
		st[p] = ps
	}
	return st
}

// changedFor says what of the state at the window's end differs from what
// the consumer found when it was back, as far as it decides where the
// consumer resumes: the committed offset, or the log start when it is
// above the committed offset (or there is none) at either time. Empty:
// nothing.
func (end brokerState) changedFor(back brokerState) string {
	var changes []string
	for _, p := range sortedKeys(end) {
		e, k := end[p], back[p]
		switch {
		case e.committed != k.committed:
			changes = append(changes, fmt.Sprintf("partition %d's committed offset went from %d to %d", p, e.committed, k.committed))
		case e.logStart != k.logStart && (e.committed < 0 || e.logStart > e.committed || k.logStart > k.committed):
			changes = append(changes, fmt.Sprintf("partition %d's log start went from %d to %d (committed %d)", p, e.logStart, k.logStart, e.committed))
		}
	}
	return strings.Join(changes, ", ")
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}
