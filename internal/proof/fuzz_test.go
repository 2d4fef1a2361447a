package proof

import (
	"encoding/hex"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// FuzzEvaluate builds observations and policies from fuzz bytes and checks
// the proof's invariants: it is Proven exactly when every fact is readable
// and holds (an independent oracle below), Proven ⇔ empty proofID,
// violations and partitions sorted, the result deterministic and
// independent of input order, ExpiredRecords the sum over partitions, and
// no panic.
func FuzzEvaluate(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9})
	// healthy: one topic, 30d retention, in range
	f.Add([]byte{2, 5, 2, 6, 1, 3, 1, 0, 2, 1, 0, 5, 3, 3, 0, 2, 0, 0, 0})
	f.Add([]byte("seed000 committed below log start"))
	f.Add([]byte("seed003 offsets.retention.minutes 10080 vs 240h window, no committed offset"))
	f.Add([]byte("seed002 replay inside [logStart, logEnd]"))
	f.Add([]byte{255, 254, 253, 252, 251, 250, 249, 248, 247, 246, 245, 244, 243, 242, 241, 240})
	// A business cursor, mirrored from the committed offsets, with each
	// resumeFrom.
	f.Add([]byte{2, 5, 2, 6, 1, 3, 1, 0, 2, 1, 0, 5, 3, 3, 0, 2, 0, 0, 0, 0, 1, 0, 0, 0, 1})
	f.Add([]byte{2, 5, 2, 6, 1, 3, 1, 0, 2, 1, 0, 5, 3, 3, 0, 2, 0, 0, 0, 0, 2, 0, 1, 0, 1})
	f.Add([]byte("seed003 cursor behind log start, auto commit ahead of the cursor"))
	f.Fuzz(func(t *testing.T, data []byte) {
		in := fuzzInput(data)
		r := Evaluate(in.obs, in.policy, in.now)

		checkInvariants(t, in, r)

		if again := Evaluate(in.obs, in.policy, in.now); !reflect.DeepEqual(r, again) {
			t.Fatalf("Evaluate is not deterministic:\n%+v\n%+v", r, again)
		}
		if reordered := Evaluate(reverseInput(in.obs), reversed(in.policy), in.now); !reflect.DeepEqual(r, reordered) {
			t.Fatalf("Evaluate depends on input order:\n%+v\n%+v", r, reordered)
		}
	})
}

type fuzzCase struct {
	obs    Observation
	policy Policy
	now    time.Time
}

// byteReader hands out fuzz bytes; past the end it returns zeros.
type byteReader []byte

func (b *byteReader) next() byte {
	if len(*b) == 0 {
		return 0
	}
	c := (*b)[0]
	*b = (*b)[1:]
	return c
}

func (b *byteReader) pick(n int) int { return int(b.next()) % n }

// config is, half the time, the first (passing) value, so that inputs where
// everything else holds are common; otherwise any value, absent or null.
func (b *byteReader) config(values []string) ConfigValue {
	v := b.next()
	if v < 128 {
		return cfg(values[0])
	}
	switch i := int(v-128) % (len(values) + 2); i {
	case 0:
		return ConfigValue{}
	case 1:
		return ConfigValue{Present: true, Null: true}
	default:
		return cfg(values[i-2])
	}
}

// offset is mostly a small number, so that log start, log end and committed
// offsets meet at their boundaries, often NoOffset, and sometimes an
// extreme.
func (b *byteReader) offset() int64 {
	v := b.next()
	switch {
	case v < 200:
		return int64(v % 12)
	case v < 240:
		return NoOffset
	}
	extremes := []int64{-2, math.MaxInt64, math.MaxInt64 - 1, math.MinInt64, 1 << 40}
	return extremes[int(v-240)%len(extremes)]
}

func (b *byteReader) moment(base time.Time) time.Time {
	v := b.next()
	if v%4 == 0 {
		return time.Time{}
	}
	return base.Add(-time.Duration(v) * 3 * time.Hour)
}

var (
	fuzzTopics = []string{"a", "b", "c", "d"}
	// The first value of each list holds for every window in fuzzWindows.
	fuzzRetention  = []string{"2592000000", "-1", "-2", "0", "3600000", "863999999", "864000000", "9223372036854775807", "99999999999999999999", "7d", " 864000000 ", ""}
	fuzzBytes      = []string{"-1", "-2", "0", "1024", "x"}
	fuzzCleanup    = []string{"delete", "compact", "compact,delete", "delete, compact", "Delete", "tiered", "", "delete,"}
	fuzzOffsetsRet = []string{"43200", "10080", "14399", "14400", "0", "-5", "1", "9223372036854775807", "week"}
	fuzzWindows    = []time.Duration{time.Millisecond, time.Hour, 240 * time.Hour, 720 * time.Hour, 0}
	fuzzReasons    = []string{ReasonBrokerUnreachable, ReasonAuthenticationFailed, ReasonAuthorizationFailed, ReasonTopicNotFound, ReasonBootstrapServerNotAllowed, "", "Weird"}
	fuzzAPIs       = []string{"", "OffsetFetch", "ListOffsets", "DescribeConfigs", "DescribeGroups", "Metadata", "consumergroupdescribe"}
	fuzzStates     = []string{"", GroupStateEmpty, GroupStateStable, GroupStateDead}
	fuzzProtocols  = []string{"", ProtocolClassic, ProtocolConsumer, ProtocolStreams, "weird", ProtocolShare}
	// The first protocol type keeps a classic group on the GroupEmpty clock.
	fuzzProtocolTypes = []string{ProtocolTypeConsumer, "", "connect"}
	// The first value holds for every window in fuzzWindows.
	fuzzDeleteRetention = []string{"2592000000", "86400000", "0", "-1", "x"}
	fuzzTimestampTypes  = []string{"CreateTime", "LogAppendTime", "logappendtime", ""}
	fuzzTimestampBounds = []string{"604800000", "9223372036854775807", "0", "-1", "x"}
	// message.timestamp.after.max.ms: the first is Kafka 4.x's default.
	fuzzAfterBounds = []string{"3600000", "9223372036854775807", "0", "-1", "x", "864000000"}
	// remote.storage.enable: the first (absent on kfake) is not tiered.
	fuzzRemoteStorage = []string{"false", "true", "TRUE", "yes"}
	fuzzTopicIDs      = []string{"", "0a", "0b", "0A"}
)

func fuzzInput(data []byte) fuzzCase {
	b := byteReader(data)
	in := fuzzCase{now: now.Add(time.Duration(b.next()) * time.Minute)}
	flags := b.next()
	in.policy = Policy{
		UID:                       "uid-" + strconv.Itoa(int(flags>>4)),
		GroupID:                   "g",
		RecoveryWindow:            fuzzWindows[b.pick(len(fuzzWindows))],
		AllowInfiniteRetention:    flags&1 != 0,
		AllowSizeBoundedRetention: flags&2 != 0,
	}
	// The policy names the observed topics, or (when bit 7 is set) any
	// subset of fuzzTopics.
	topicBits := b.next()

	in.obs = Observation{
		ObservedAt:              in.now,
		OffsetsRetentionMinutes: b.config(fuzzOffsetsRet),
		Group: GroupObservation{
			ID:       "g",
			State:    fuzzStates[b.pick(len(fuzzStates))],
			Protocol: fuzzProtocols[b.pick(len(fuzzProtocols))],
		},
	}
	in.obs.Group.EmptySince = b.moment(in.now)
	groupBits := b.next()
	in.obs.Group.ProtocolType = fuzzProtocolTypes[int(groupBits)%len(fuzzProtocolTypes)]
	in.obs.Group.EmptySinceExact = groupBits&0x10 != 0
	in.obs.Group.SubscriptionKnown = groupBits&0x20 != 0
	in.obs.Group.MigrationPossible = groupBits&0x08 != 0
	for i, name := range fuzzTopics {
		if groupBits&(0x40<<i) != 0 { // topics a and b only: 0x40, 0x80
			in.obs.Group.Subscribed = append(in.obs.Group.Subscribed, name)
		}
	}

	observed := b.next()
	for i, name := range fuzzTopics[:3] {
		if observed&(1<<i) == 0 {
			continue
		}
		tp := TopicObservation{
			Name:                     name,
			RetentionMs:              b.config(fuzzRetention),
			RetentionBytes:           b.config(fuzzBytes),
			CleanupPolicy:            b.config(fuzzCleanup),
			DeleteRetentionMs:        b.config(fuzzDeleteRetention),
			TimestampType:            b.config(fuzzTimestampTypes),
			TimestampBeforeMaxMs:     b.config(fuzzTimestampBounds),
			TimestampAfterMaxMs:      b.config(fuzzAfterBounds),
			TimestampDifferenceMaxMs: b.config(fuzzAfterBounds),
			RemoteStorageEnable:      b.config(fuzzRemoteStorage),
			TopicID:                  fuzzTopicIDs[b.pick(len(fuzzTopicIDs))],
		}
		n := b.pick(4)
		seen := map[int32]bool{}
		for j := 0; j < n; j++ {
			p := PartitionObservation{Partition: int32(b.pick(5))}
			if seen[p.Partition] {
				continue
			}
			seen[p.Partition] = true
			p.LogStart, p.LogEnd, p.Committed = b.offset(), b.offset(), b.offset()
			p.CommittedTimestamp = b.moment(in.now)
			p.PrecedingTimestamp = b.moment(in.now)
			if v := b.next(); v < 128 {
				p.LastCommit = b.moment(in.now)
			} else {
				p.CommittedAfter = b.moment(in.now)
			}
			if v := b.next(); v >= 224 {
				p.ExpireAt = in.now.Add(time.Duration(v-224) * 24 * time.Hour)
			}
			p.CommitTopicID = fuzzTopicIDs[b.pick(len(fuzzTopicIDs))]
			if v := b.next(); v >= 64 {
				p.ShareLag, p.ShareLagKnown = int64(v%16), true
			}
			tp.Partitions = append(tp.Partitions, p)
		}
		in.obs.Topics = append(in.obs.Topics, tp)
		if topicBits&0x80 == 0 {
			in.policy.Topics = append(in.policy.Topics, name)
		}
	}
	if topicBits&0x80 != 0 {
		for i, name := range fuzzTopics {
			if topicBits&(1<<i) != 0 {
				in.policy.Topics = append(in.policy.Topics, name)
			}
		}
	}

	for n := b.pick(4); n > 1; n-- { // mostly no failure
		fl := Failure{
			Reason:    fuzzReasons[b.pick(len(fuzzReasons))],
			API:       fuzzAPIs[b.pick(len(fuzzAPIs))],
			Partition: int32(b.pick(4)) - 1,
			Message:   "failure " + strconv.Itoa(n),
		}
		if t := b.pick(len(fuzzTopics) + 1); t < len(fuzzTopics) {
			fl.Topic = fuzzTopics[t]
		}
		in.obs.Failures = append(in.obs.Failures, fl)
	}
	fuzzCursor(&b, &in)
	fuzzTransactions(&b, &in)
	return in
}

// Transactions: the brokers' transaction timeouts (Kafka's defaults
// first), and a transaction marker before some committed offsets.
var (
	fuzzTxnTimeouts = []string{"900000", "60000", "3600000", "0", "-1", "x"}
	fuzzTxnChecks   = []string{"10000", "1000", "-5", "y"}
	fuzzTwoPhase    = []string{"false", "true", "TRUE", "no"}
)

func fuzzTransactions(b *byteReader, in *fuzzCase) {
	in.obs.Transactions = TransactionConfig{
		MaxTimeoutMs:         b.config(fuzzTxnTimeouts),
		AbortCheckIntervalMs: b.config(fuzzTxnChecks),
		TwoPhaseCommitEnable: b.config(fuzzTwoPhase),
	}
	for i := range in.obs.Topics {
		for j := range in.obs.Topics[i].Partitions {
			in.obs.Topics[i].Partitions[j].PrecedingMarkerTimestamp = b.moment(in.now)
		}
	}
}

// fuzzCursor adds, for a third of the inputs each, a business cursor the
// consumer resumes from or one beside its group offsets: half the time its
// rows mirror the committed offsets (so that it holds), otherwise any rows.
func fuzzCursor(b *byteReader, in *fuzzCase) {
	switch b.pick(3) {
	case 0:
		return
	case 1:
		in.policy.Cursor = &CursorPolicy{ResumeFrom: ResumeFromGroupOffsets}
	default:
		in.policy.Cursor = &CursorPolicy{ResumeFrom: ResumeFromCursor}
	}
	c := &in.obs.Cursor
	switch v := b.next(); {
	case v < 200:
		c.Read = true
	case v < 230:
		c.Problem = "connection refused"
	}
	c.HasTopic = b.next()&1 == 1
	if b.next() < 128 {
		for _, t := range in.obs.Topics {
			for _, p := range t.Partitions {
				if p.Committed < 0 {
					continue
				}
				row := CursorRow{Partition: int64(p.Partition), NextOffset: p.Committed}
				if c.HasTopic {
					row.Topic = t.Name
				}
				c.Rows = append(c.Rows, row)
			}
		}
	} else {
		for n := b.pick(6); n > 0; n-- {
			row := CursorRow{Partition: int64(b.pick(6)) - 1, NextOffset: b.offset(), UpdatedAt: b.moment(in.now)}
			if c.HasTopic {
				if i := b.pick(len(fuzzTopics) + 1); i < len(fuzzTopics) {
					row.Topic = fuzzTopics[i]
				}
			}
			c.Rows = append(c.Rows, row)
		}
	}
	for i := range in.obs.Topics {
		for j := range in.obs.Topics[i].Partitions {
			in.obs.Topics[i].Partitions[j].CursorTimestamp = b.moment(in.now)
		}
	}
}

// reverseInput returns a deep copy with topics, partitions and failures in
// reverse order.
func reverseInput(o Observation) Observation {
	o.Topics = slices.Clone(o.Topics)
	slices.Reverse(o.Topics)
	for i := range o.Topics {
		o.Topics[i].Partitions = slices.Clone(o.Topics[i].Partitions)
		slices.Reverse(o.Topics[i].Partitions)
	}
	o.Failures = slices.Clone(o.Failures)
	slices.Reverse(o.Failures)
	o.Cursor.Rows = slices.Clone(o.Cursor.Rows)
	slices.Reverse(o.Cursor.Rows)
	return o
}

func reversed(p Policy) Policy {
	p.Topics = slices.Clone(p.Topics)
	slices.Reverse(p.Topics)
	return p
}

func checkInvariants(t *testing.T, in fuzzCase, r Result) {
	t.Helper()
	blockers := mustNotProve(in)
	switch {
	case r.Verdict == Proven && len(blockers) > 0:
		t.Fatalf("Proven although %s\ninput: %+v", strings.Join(blockers, "; "), in)
	case r.Verdict != Proven && len(blockers) == 0:
		t.Fatalf("%s although every fact holds (false alarm)\nviolations: %+v\ninput: %+v", r.Verdict, r.Violations, in)
	}

	// Proven ⇔ no proofID; otherwise 8 hex digits.
	if r.Verdict == Proven {
		if r.ProofID != "" || len(r.Violations) != 0 {
			t.Fatalf("Proven with proofID %q and violations %+v", r.ProofID, r.Violations)
		}
	} else {
		if _, err := hex.DecodeString(r.ProofID); err != nil || len(r.ProofID) != 8 {
			t.Fatalf("%s with proofID %q", r.Verdict, r.ProofID)
		}
		if len(r.Violations) == 0 {
			t.Fatalf("%s without a violation to explain it", r.Verdict)
		}
	}

	// Violated exactly when a clause other than KafkaReachable fails on facts.
	factFails := false
	for _, v := range r.Violations {
		if v.Clause != ClauseKafkaReachable && !missingFact(v.Reason) {
			factFails = true
		}
	}
	if factFails != (r.Verdict == Violated) {
		t.Fatalf("verdict %s, but a violation that fails on facts: %v", r.Verdict, factFails)
	}

	// A missing config is an *Unreadable violation exactly when no failure
	// explains its absence; one that a failure explains is not evaluated.
	fromCursor := in.policy.Cursor != nil && in.policy.Cursor.ResumeFrom == ResumeFromCursor
	if got, want := countViolations(r, ClauseGroupOffsetsRetained, ReasonOffsetsRetentionUnreadable, ""), oracleOffsetsUnreadable(in); got != want && !(fromCursor && got == 0) {
		t.Fatalf("%d OffsetsRetentionUnreadable violations, want %d\nviolations: %+v\ninput: %+v", got, want, r.Violations, in)
	}
	for _, tp := range in.obs.Topics {
		if got, want := countViolations(r, ClauseRetentionCoversWindow, ReasonRetentionUnreadable, tp.Name), oracleRetentionUnreadable(in, tp); got != want {
			t.Fatalf("%s: %d RetentionUnreadable violations, want %d\nviolations: %+v\ninput: %+v", tp.Name, got, want, r.Violations, in)
		}
	}

	// Conditions: one per clause of the policy (CursorInRange only with a
	// cursor), in order; Ready follows the verdict. With resumeFrom Cursor
	// the group's offset clauses do not decide: nothing of theirs is a
	// violation.
	clauses := []string{ClauseKafkaReachable, ClauseRetentionCoversWindow, ClauseGroupOffsetsRetained, ClauseOffsetsInRange, ClauseReady}
	if in.policy.Cursor != nil {
		clauses = slices.Insert(clauses, 4, ClauseCursorInRange)
	}
	if len(r.Conditions) != len(clauses) {
		t.Fatalf("%d conditions, want %v", len(r.Conditions), clauses)
	}
	for i, c := range r.Conditions {
		if c.Type != clauses[i] || c.Reason == "" || c.Message == "" {
			t.Fatalf("condition %d = %+v", i, c)
		}
	}
	if (r.Cursor != nil) != (in.policy.Cursor != nil) {
		t.Fatalf("cursor summary %+v for cursor policy %+v", r.Cursor, in.policy.Cursor)
	}
	for _, v := range r.Violations {
		if fromCursor && (v.Clause == ClauseGroupOffsetsRetained || v.Clause == ClauseOffsetsInRange) {
			t.Fatalf("a violation of %s although the consumer resumes from its cursor: %+v", v.Clause, v)
		}
		if v.Clause != ClauseCursorInRange && v.Cursor != NoOffset {
			t.Fatalf("violation %+v carries a cursor", v)
		}
	}
	readyStatus := map[Verdict]ConditionStatus{Proven: ConditionTrue, Violated: ConditionFalse, Unknown: ConditionUnknown}[r.Verdict]
	if ready := r.Conditions[len(r.Conditions)-1]; ready.Status != readyStatus {
		t.Fatalf("Ready %s with verdict %s", ready.Status, r.Verdict)
	}

	// Violations sorted by clause order, topic, partition, reason.
	if !slices.IsSortedFunc(r.Violations, func(a, b Violation) int {
		if d := slices.Index(ClauseTypes, a.Clause) - slices.Index(ClauseTypes, b.Clause); d != 0 {
			return d
		}
		if a.Topic != b.Topic {
			return strings.Compare(a.Topic, b.Topic)
		}
		if a.Partition != b.Partition {
			return int(a.Partition) - int(b.Partition)
		}
		return strings.Compare(a.Reason, b.Reason)
	}) {
		t.Fatalf("violations not sorted: %+v", r.Violations)
	}

	// Partitions sorted; summary, expired records, replay and ahead add up.
	var sum, replay, ahead int64
	var s PartitionSummary
	for i, p := range r.Partitions {
		if i > 0 {
			q := r.Partitions[i-1]
			if q.Topic > p.Topic || (q.Topic == p.Topic && q.Partition >= p.Partition) {
				t.Fatalf("partitions not sorted at %d: %+v", i, r.Partitions)
			}
		}
		if sum > math.MaxInt64-p.ExpiredRecords {
			sum = math.MaxInt64
		} else {
			sum += p.ExpiredRecords
		}
		if p.ExpiredRecords < 0 || p.Lag < 0 {
			t.Fatalf("negative count in %+v", p)
		}
		switch {
		case p.ExpiredRecords == 0:
		case p.Reason == ReasonCommittedOffsetExpired && p.ExpiredRecords == p.LogStart-p.Committed:
		case p.Reason == ReasonCursorExpired && p.ExpiredRecords == p.LogStart-p.Cursor:
		case p.Reason == ReasonShareRecordsExpired && p.ExpiredRecords > 0 && p.ExpiredRecords <= p.LogStart-p.Committed:
		default:
			t.Fatalf("expiredRecords %d is neither logStart - committed nor logStart - cursor for reason %s in %+v", p.ExpiredRecords, p.Reason, p)
		}
		if (p.AheadRecords > 0 && p.AheadRecords != p.Committed-p.Cursor) || (p.ReplayRecords > 0 && p.ReplayRecords != p.Cursor-p.Committed) ||
			p.AheadRecords < 0 || p.ReplayRecords < 0 || (p.AheadRecords > 0 && p.ReplayRecords > 0) {
			t.Fatalf("ahead %d / replay %d do not compare committed and cursor in %+v", p.AheadRecords, p.ReplayRecords, p)
		}
		if in.policy.Cursor == nil && (p.Cursor != NoOffset || p.AheadRecords != 0 || p.ReplayRecords != 0) {
			t.Fatalf("cursor facts without a cursor policy: %+v", p)
		}
		if r.Cursor != nil {
			replay = addSaturating(replay, p.ReplayRecords)
			ahead = addSaturating(ahead, p.AheadRecords)
		}
		switch p.Reason {
		case ReasonCommittedOffsetExpired, ReasonShareRecordsExpired, ReasonCursorExpired:
			s.Expired++
		case ReasonNoCommittedOffset, ReasonNoShareStartOffset, ReasonNoCursor:
			s.Missing++
		case ReasonCommittedOffsetBeyondLogEnd, ReasonCursorBeyondLogEnd:
			s.BeyondEnd++
		case "":
			s.InRange++
		}
		if (p.Reason == "") != (p.Verdict == Proven) {
			t.Fatalf("partition verdict %s with reason %q", p.Verdict, p.Reason)
		}
		if (p.HasHeadroom || p.HasTombstoneHeadroom) && p.Verdict != Proven {
			t.Fatalf("headroom on a partition that is not in range: %+v", p)
		}
	}
	s.Total = len(r.Partitions)
	if s != r.Summary {
		t.Fatalf("summary %+v, partitions add up to %+v", r.Summary, s)
	}
	if sum != r.ExpiredRecords {
		t.Fatalf("expiredRecords %d, partitions add up to %d", r.ExpiredRecords, sum)
	}
	if r.Cursor != nil && (r.Cursor.ReplayRecords != replay || r.Cursor.AheadRecords != ahead) {
		t.Fatalf("cursor summary %+v, partitions add up to replay %d, ahead %d", r.Cursor, replay, ahead)
	}

	// RecoveryHeadroom is the smallest partition headroom, record or
	// tombstone.
	has, least := false, time.Duration(0)
	for _, p := range r.Partitions {
		if p.HasHeadroom && (!has || p.Headroom < least) {
			has, least = true, p.Headroom
		}
		if p.HasTombstoneHeadroom && (!has || p.TombstoneHeadroom < least) {
			has, least = true, p.TombstoneHeadroom
		}
	}
	if has != r.HasRecoveryHeadroom || least != r.RecoveryHeadroom {
		t.Fatalf("recoveryHeadroom %v (%v), smallest partition headroom %v (%v)", r.RecoveryHeadroom, r.HasRecoveryHeadroom, least, has)
	}
	for _, w := range r.Warnings {
		switch {
		case w.Message == "":
			t.Fatalf("warning %+v", w)
		case ConfigWarning(w.Type):
		case w.Type == WarningGroupOffsets:
			if !fromCursor {
				t.Fatalf("warning %+v without resumeFrom Cursor", w)
			}
		case w.Type == WarningGroupOffsetsExpireIn && fromCursor:
			t.Fatalf("warning %+v though the group's offsets do not decide", w)
		case w.Type != WarningRecoveryHeadroom && w.Type != WarningGroupOffsetsExpireIn:
			t.Fatalf("warning %+v", w)
		case w.Duration >= in.policy.RecoveryWindow:
			t.Fatalf("warning %+v though it covers the window", w)
		}
	}
	if r.HasGroupOffsetsExpireIn != r.OffsetExpiry.HasSoonest ||
		(r.HasGroupOffsetsExpireIn && r.GroupOffsetsExpireIn != r.OffsetExpiry.Soonest.Sub(in.now)) {
		t.Fatalf("groupOffsetsExpireIn %v (%v) disagrees with the soonest expiry %+v", r.GroupOffsetsExpireIn, r.HasGroupOffsetsExpireIn, r.OffsetExpiry)
	}
	if r.OffsetExpiry.Clock == ExpiryClockGroupEmpty && r.HasGroupOffsetsExpireIn && in.obs.Group.State != GroupStateEmpty {
		t.Fatalf("a GroupEmpty clock running for a group in state %q", in.obs.Group.State)
	}
}

// mustNotProve is the oracle: every reason, read directly from the input,
// why the proof must not be Proven. It is written apart from the
// implementation, from the rules in ARCHITECTURE.md.
func mustNotProve(in fuzzCase) []string {
	var why []string
	o, p := in.obs, in.policy
	if len(o.Failures) > 0 {
		why = append(why, "a request failed")
	}
	if len(o.Topics) == 0 && len(p.Topics) == 0 {
		why = append(why, "there is nothing to prove")
	}
	for _, name := range p.Topics {
		if !slices.ContainsFunc(o.Topics, func(t TopicObservation) bool { return t.Name == name }) {
			why = append(why, "policy topic "+name+" was not observed")
		}
	}
	// With resumeFrom Cursor the group's offsets do not decide.
	fromCursor := p.Cursor != nil && p.Cursor.ResumeFrom == ResumeFromCursor
	minutes, ok := oracleInt(o.OffsetsRetentionMinutes)
	retentionCovers := false
	share := o.Group.Protocol == ProtocolShare
	switch {
	case fromCursor:
	case share:
		// A share group's progress (SPSO) has no offset expiry clock.
	case !ok || minutes < 1:
		why = append(why, "offsets.retention.minutes unreadable")
	case minutes < int64(p.RecoveryWindow/time.Minute) ||
		(minutes == int64(p.RecoveryWindow/time.Minute) && p.RecoveryWindow%time.Minute != 0):
		why = append(why, "offsets.retention.minutes shorter than the window")
	default:
		retentionCovers = true
	}
	if retentionCovers {
		why = append(why, oraclePerCommit(in, minutes)...)
		why = append(why, oracleExplicitAndEmpty(in, minutes)...)
	}
	why = append(why, oracleHeadroom(in)...)
	why = append(why, oracleTombstones(in)...)
	cursors, readable := oracleCursorRows(in)
	if p.Cursor != nil && !readable {
		why = append(why, "the business cursor is unreadable or breaks the column contract")
	}
	for _, t := range o.Topics {
		deletes, compacts, ok := oracleTopicCleanup(t)
		if !ok {
			why = append(why, t.Name+": cleanup.policy unreadable")
		}
		if ok && !deletes && !compacts && !p.AllowInfiniteRetention {
			why = append(why, t.Name+": empty cleanup.policy keeps records forever, not allowed")
		}
		if ok && compacts {
			ms, ok := oracleInt(t.DeleteRetentionMs)
			windowMs := p.RecoveryWindow.Milliseconds()
			switch {
			case !ok || ms < 0:
				why = append(why, t.Name+": delete.retention.ms unreadable")
			case ms < windowMs || (ms == windowMs && p.RecoveryWindow%time.Millisecond != 0):
				why = append(why, t.Name+": tombstones kept shorter than the window")
			}
		}
		if ok && deletes {
			ms, ok := oracleInt(t.RetentionMs)
			windowMs := p.RecoveryWindow.Milliseconds()
			switch {
			case !ok:
				why = append(why, t.Name+": retention.ms unreadable")
			case ms < 0 && !p.AllowInfiniteRetention:
				why = append(why, t.Name+": infinite retention not allowed")
			case ms >= 0 && (ms < windowMs || (ms == windowMs && p.RecoveryWindow%time.Millisecond != 0)):
				why = append(why, t.Name+": retention.ms shorter than the window")
			}
			bytes, ok := oracleInt(t.RetentionBytes)
			switch {
			case !ok:
				why = append(why, t.Name+": retention.bytes unreadable")
			case bytes >= 0 && !p.AllowSizeBoundedRetention:
				why = append(why, t.Name+": size-bounded retention")
			}
		}
		if len(t.Partitions) == 0 {
			why = append(why, t.Name+": no partitions")
		}
		for _, pt := range t.Partitions {
			name := t.Name + "[" + strconv.Itoa(int(pt.Partition)) + "]"
			if p.Cursor != nil && readable && pt.LogStart >= 0 && pt.LogEnd >= pt.LogStart {
				cur, has := cursors[name]
				switch {
				case !has && (pt.LogStart > 0 || (compacts && pt.LogEnd > 0)):
					why = append(why, name+": no cursor row while the log does not start empty at 0")
				case !has:
				case cur < pt.LogStart:
					why = append(why, name+": cursor < logStart")
				case cur > pt.LogEnd:
					why = append(why, name+": cursor > logEnd")
				case !fromCursor && pt.Committed >= 0 && pt.Committed > cur:
					why = append(why, name+": the group's offset is ahead of the cursor")
				}
			}
			switch {
			case pt.LogStart < 0 || pt.LogEnd < pt.LogStart:
				why = append(why, name+": not a log")
			case fromCursor:
			case o.Group.Protocol != ProtocolShare && pt.Committed >= 0 && pt.Committed >= pt.LogStart && pt.Committed <= pt.LogEnd &&
				pt.CommitTopicID != "" && t.TopicID != "" && !strings.EqualFold(pt.CommitTopicID, t.TopicID):
				why = append(why, name+": committed for another topic ID (a deleted topic)")
			case pt.Committed == -1 && pt.LogStart > 0:
				why = append(why, name+": missing offset with log start > 0")
			case pt.Committed == -1 && compacts && pt.LogEnd > 0:
				why = append(why, name+": missing offset on a non-empty compacting topic")
			case pt.Committed < -1:
				why = append(why, name+": committed offset below -1")
			case o.Group.Protocol == ProtocolShare && pt.Committed >= 0 && pt.Committed < pt.LogStart:
				// A share group's SPSO below log start: proven only when
				// nothing is unacknowledged.
				if !pt.ShareLagKnown || pt.ShareLag != 0 {
					why = append(why, name+": share-partition start offset < logStart with records unacknowledged")
				}
			case pt.Committed >= 0 && pt.Committed < pt.LogStart:
				why = append(why, name+": committed < logStart")
			case pt.Committed > pt.LogEnd:
				why = append(why, name+": committed > logEnd")
			}
		}
	}
	return why
}

// oracleCursorRows reads the cursor rows by the column contract
// (ARCHITECTURE.md, "Business cursors"): keyed "topic[partition]"; false
// when the cursor was not read, or a row has no topic while the proof
// covers several topics, names a topic or partition the proof does not
// observe, has a negative offset, or repeats a partition.
func oracleCursorRows(in fuzzCase) (map[string]int64, bool) {
	c := in.obs.Cursor
	if !c.Read || c.Problem != "" {
		return nil, false
	}
	covered := map[string]bool{}
	for _, t := range in.policy.Topics {
		covered[t] = true
	}
	observed := map[string]bool{}
	for _, t := range in.obs.Topics {
		covered[t.Name] = true
		for _, p := range t.Partitions {
			observed[t.Name+"["+strconv.Itoa(int(p.Partition))+"]"] = true
		}
	}
	only := ""
	if len(covered) == 1 {
		for t := range covered {
			only = t
		}
	}
	out := map[string]int64{}
	for _, row := range c.Rows {
		topic := row.Topic
		if !c.HasTopic {
			if only == "" {
				return nil, false
			}
			topic = only
		}
		if !covered[topic] {
			return nil, false
		}
		if !slices.ContainsFunc(in.obs.Topics, func(t TopicObservation) bool { return t.Name == topic }) {
			continue // the topic was not observed: that alone fails the proof
		}
		name := topic + "[" + strconv.FormatInt(row.Partition, 10) + "]"
		if _, dup := out[name]; dup || !observed[name] || row.NextOffset < 0 {
			return nil, false
		}
		out[name] = row.NextOffset
	}
	return out, true
}

func oracleInt(v ConfigValue) (int64, bool) {
	if !v.Present || v.Null {
		return 0, false
	}
	n, err := strconv.ParseInt(strings.TrimSpace(v.Value), 10, 64)
	return n, err == nil
}

// oracleTopicCleanup is cleanup.policy as the proof must read it: an
// empty policy on a tiered topic (remote.storage.enable true) deletes by
// retention.ms in the remote log; remote.storage.enable absent is a broker
// without tiered storage, anything but true/false unreadable then.
func oracleTopicCleanup(t TopicObservation) (deletes, compacts, ok bool) {
	deletes, compacts, ok = oracleCleanup(t.CleanupPolicy)
	if !ok || deletes || compacts {
		return deletes, compacts, ok
	}
	v := t.RemoteStorageEnable
	switch {
	case !v.Present:
		return false, false, true
	case v.Null:
		return false, false, false
	}
	switch strings.ToLower(strings.TrimSpace(v.Value)) {
	case "true":
		return true, false, true
	case "false":
		return false, false, true
	}
	return false, false, false
}

// oracleHeadroom: the record at each in-range committed offset (at the
// business cursor with resumeFrom Cursor) must outlive now + window on a
// topic that deletes by time after a finite retention.ms that itself covers
// the window; a caught-up partition has all of retention.ms.
func oracleHeadroom(in fuzzCase) []string {
	var why []string
	fromCursor := in.policy.Cursor != nil && in.policy.Cursor.ResumeFrom == ResumeFromCursor
	cursors, readable := oracleCursorRows(in)
	for _, t := range in.obs.Topics {
		deletes, _, ok := oracleTopicCleanup(t)
		ms, msOK := oracleInt(t.RetentionMs)
		if !ok || !deletes || !msOK || ms < 0 {
			continue
		}
		retention := time.Duration(math.MaxInt64)
		if ms < math.MaxInt64/int64(time.Millisecond) {
			retention = time.Duration(ms) * time.Millisecond
		}
		if retention < in.policy.RecoveryWindow {
			continue // RetentionShorterThanWindow says it
		}
		for _, pt := range t.Partitions {
			position, ts := pt.Committed, pt.CommittedTimestamp
			if fromCursor {
				cur, has := cursors[t.Name+"["+strconv.Itoa(int(pt.Partition))+"]"]
				if !readable || !has {
					continue
				}
				position, ts = cur, pt.CursorTimestamp
			}
			if pt.LogStart < 0 || pt.LogEnd < pt.LogStart || position < pt.LogStart || position >= pt.LogEnd || ts.IsZero() {
				continue
			}
			if ts.Add(retention).Sub(in.now) < in.policy.RecoveryWindow {
				why = append(why, t.Name+"["+strconv.Itoa(int(pt.Partition))+"]: the record at the committed offset expires before the window ends")
			}
		}
	}
	return why
}

// oracleTombstones: on a compacting topic whose delete.retention.ms covers
// the window, a lagging position (committed offset, or cursor with
// resumeFrom Cursor) whose record is stamped T: a tombstone after it was
// written no earlier than T less how far ahead the producer may stamp
// (oracleCommitBound's rule), and the cleaner may drop it
// delete.retention.ms after that. Before now + window, the group may miss
// it. A stamp that bounds nothing (unknown, or CreateTime unbounded ahead)
// leaves them unbounded: they may go any moment (TombstonesUnread; once
// skipped, which left such a partition Proven).
func oracleTombstones(in fuzzCase) []string {
	var why []string
	fromCursor := in.policy.Cursor != nil && in.policy.Cursor.ResumeFrom == ResumeFromCursor
	cursors, readable := oracleCursorRows(in)
	for _, t := range in.obs.Topics {
		_, compacts, ok := oracleTopicCleanup(t)
		ms, msOK := oracleInt(t.DeleteRetentionMs)
		if !ok || !compacts || !msOK || ms < 0 {
			continue
		}
		keep := time.Duration(math.MaxInt64)
		if ms < math.MaxInt64/int64(time.Millisecond) {
			keep = time.Duration(ms) * time.Millisecond
		}
		if keep < in.policy.RecoveryWindow {
			continue // TombstoneRetentionShorterThanWindow says it
		}
		for _, pt := range t.Partitions {
			position, ts := pt.Committed, pt.CommittedTimestamp
			if fromCursor {
				cur, has := cursors[t.Name+"["+strconv.Itoa(int(pt.Partition))+"]"]
				if !readable || !has {
					continue
				}
				position, ts = cur, pt.CursorTimestamp
			}
			if pt.LogStart < 0 || pt.LogEnd < pt.LogStart || position < pt.LogStart || position >= pt.LogEnd {
				continue
			}
			// The written-no-earlier-than bound, by the commit-dating rule.
			bound := oracleCommitBound(t, PartitionObservation{PrecedingTimestamp: ts})
			if bound.IsZero() {
				// Neither dated nor read (the fuzzed observations carry no
				// scan): a tombstone may go any moment.
				why = append(why, t.Name+"["+strconv.Itoa(int(pt.Partition))+"]: the tombstones the group has not read are not bounded")
				continue
			}
			if bound.Add(keep).Sub(in.now) < in.policy.RecoveryWindow {
				why = append(why, t.Name+"["+strconv.Itoa(int(pt.Partition))+"]: a tombstone the group has not read may be dropped before the window ends")
			}
		}
	}
	return why
}

// oracleExplicitAndEmpty: an offset with an explicit expiry (OffsetCommit
// v2–v4) expires then, whatever the group; an Empty classic group with a
// protocol type and committed offsets loses them offsets.retention.minutes
// after EmptySince, which may be any moment when EmptySince is unknown.
func oracleExplicitAndEmpty(in fuzzCase, minutes int64) []string {
	var why []string
	deadline := in.now.Add(in.policy.RecoveryWindow)
	committed := false
	for _, t := range in.obs.Topics {
		for _, pt := range t.Partitions {
			if pt.Committed < 0 {
				continue
			}
			committed = true
			if !pt.ExpireAt.IsZero() && pt.ExpireAt.Before(deadline) {
				why = append(why, t.Name+"["+strconv.Itoa(int(pt.Partition))+"]: explicit expiry before the window ends")
			}
		}
	}
	g := in.obs.Group
	retention := time.Duration(math.MaxInt64)
	if minutes < math.MaxInt64/int64(time.Minute) {
		retention = time.Duration(minutes) * time.Minute
	}
	if committed && g.Protocol == ProtocolClassic && g.ProtocolType != "" && g.State == GroupStateEmpty {
		switch {
		case g.EmptySince.IsZero():
			// Empty since a time nobody saw: the offsets may expire any
			// moment (the broker-in-the-loop oracle's false Proven).
			why = append(why, "the Empty group's offsets may expire any moment: since when it is Empty is unknown")
		case g.EmptySince.Add(retention).Before(deadline):
			why = append(why, "the Empty group's offsets expire before the window ends")
		}
	}
	return why
}

func oracleCleanup(v ConfigValue) (deletes, compacts, ok bool) {
	if !v.Present || v.Null {
		return false, false, false
	}
	if strings.TrimSpace(v.Value) == "" {
		return false, false, true // neither: records kept forever
	}
	items := strings.Split(v.Value, ",")
	for _, it := range items {
		switch strings.ToLower(strings.TrimSpace(it)) {
		case "delete":
			deletes = true
		case "compact":
			compacts = true
		default:
			return false, false, false
		}
	}
	return deletes, compacts, true
}

// oraclePerCommit: offsets that expire per commit (ARCHITECTURE.md, "The
// proof"; Kafka's offsetExpirationCondition) must be dated, and their last
// commit plus offsets.retention.minutes must reach now + window.
func oraclePerCommit(in fuzzCase, minutes int64) []string {
	o, p := in.obs, in.policy
	g := o.Group
	perCommit := func(string) bool { return false }
	switch {
	case g.Protocol == ProtocolConsumer || g.Protocol == ProtocolStreams:
		perCommit = func(string) bool { return true }
	case g.Protocol == ProtocolClassic && g.ProtocolType == "":
		perCommit = func(string) bool { return true }
	case g.Protocol == ProtocolClassic && g.ProtocolType == "consumer" && g.MigrationPossible:
		// KIP-848 migration keeps commit times: dated like a consumer group.
		perCommit = func(string) bool { return true }
	case g.Protocol == ProtocolClassic && g.State == GroupStateStable && g.ProtocolType == "consumer" && g.SubscriptionKnown:
		perCommit = func(topic string) bool { return !slices.Contains(g.Subscribed, topic) }
	case g.Protocol == ProtocolClassic, g.Protocol == ProtocolShare:
	default:
		for _, t := range o.Topics {
			for _, pt := range t.Partitions {
				if pt.Committed >= 0 {
					return []string{"group kind unknown though it has committed offsets"}
				}
			}
		}
		return nil
	}
	retention := time.Duration(math.MaxInt64)
	if minutes < math.MaxInt64/int64(time.Minute) {
		retention = time.Duration(minutes) * time.Minute
	}
	var why []string
	for _, t := range o.Topics {
		if !perCommit(t.Name) {
			continue
		}
		for _, pt := range t.Partitions {
			if pt.Committed < 0 {
				continue
			}
			if !pt.ExpireAt.IsZero() {
				continue // an explicit expiry replaces the clock (oracleExplicitAndEmpty)
			}
			at := pt.LastCommit
			if at.IsZero() {
				at = oracleCommitBound(t, pt)
				// A transaction marker: stamped by the leader, before
				// any position past it is committed.
				if pt.PrecedingMarkerTimestamp.After(at) {
					at = pt.PrecedingMarkerTimestamp
				}
				// A change seen after t0: a transactional commit carries
				// its sending time, up to transaction.max.timeout.ms plus
				// the abort check before it showed; nothing bounds it with
				// two-phase commit on.
				if hidden, ok := oracleTxnHidden(o.Transactions); ok && !pt.CommittedAfter.IsZero() && pt.CommittedAfter.Add(-hidden).After(at) {
					at = pt.CommittedAfter.Add(-hidden)
				}
			}
			name := t.Name + "[" + strconv.Itoa(int(pt.Partition)) + "]"
			switch {
			case at.IsZero():
				why = append(why, name+": commit time unknown")
			case at.Add(retention).Before(in.now.Add(p.RecoveryWindow)):
				why = append(why, name+": offset expires per commit before the window ends")
			}
		}
	}
	return why
}

// oracleTxnHidden: how long a transactional commit may stay hidden after
// the time it carries (Kafka's defaults for keys a broker did not report);
// false when unbounded or unreadable.
func oracleTxnHidden(t TransactionConfig) (time.Duration, bool) {
	if v := t.TwoPhaseCommitEnable; v.Present && (v.Null || strings.ToLower(strings.TrimSpace(v.Value)) != "false") {
		return 0, false
	}
	total := time.Duration(0)
	for _, c := range []struct {
		v   ConfigValue
		def int64
	}{{t.MaxTimeoutMs, 900000}, {t.AbortCheckIntervalMs, 10000}} {
		ms := c.def
		if c.v.Present {
			n, ok := oracleInt(c.v)
			if !ok || n < 0 {
				return 0, false
			}
			ms = n
		}
		total += time.Duration(ms) * time.Millisecond
	}
	return total, true
}

// oracleCommitBound: the record before the committed offset bounds its
// commit from below, less message.timestamp.after.max.ms with CreateTime
// (the producer's clock may be that far ahead); nothing when that bound is
// absent, unreadable or Long.MAX.
func oracleCommitBound(t TopicObservation, pt PartitionObservation) time.Time {
	if pt.PrecedingTimestamp.IsZero() {
		return time.Time{}
	}
	if v := t.TimestampType; v.Present && !v.Null && strings.EqualFold(strings.TrimSpace(v.Value), "LogAppendTime") {
		return pt.PrecedingTimestamp
	}
	v := t.TimestampAfterMaxMs
	if !v.Present {
		v = t.TimestampDifferenceMaxMs
	}
	if !v.Present {
		return pt.PrecedingTimestamp.Add(-time.Hour) // no Kafka broker: taken at 4.x's default
	}
	ms, ok := oracleInt(v)
	if !ok || ms < 0 || ms == math.MaxInt64 {
		return time.Time{}
	}
	skew := time.Duration(math.MaxInt64)
	if ms < math.MaxInt64/int64(time.Millisecond) {
		skew = time.Duration(ms) * time.Millisecond
	}
	return pt.PrecedingTimestamp.Add(-skew)
}

func countViolations(r Result, clause, reason, topic string) int {
	n := 0
	for _, v := range r.Violations {
		if v.Clause == clause && v.Reason == reason && v.Topic == topic {
			n++
		}
	}
	return n
}

// The oracle's reading of which failure explains a missing config
// (ARCHITECTURE.md, "The proof"): a cluster-wide failure (no topic, and an
// API that is not about one topic or group, nor only about configs)
// explains every one; a config request about a topic explains that topic's;
// a config request about no topic (the brokers) explains
// offsets.retention.minutes.
var (
	// The API names the observer reports (proof.API*), written out again.
	oracleConfigAPIs = []string{"describeconfigs"}
	oracleScopedAPIs = []string{"describegroups", "consumergroupdescribe", "offsetfetch", "listoffsets", "fetch", "sharegroupdescribe", "describesharegroupoffsets"}
)

func oracleClusterWide(f Failure) bool {
	api := strings.ToLower(f.API)
	return f.Topic == "" && !slices.Contains(oracleConfigAPIs, api) && !slices.Contains(oracleScopedAPIs, api)
}

func oracleExplained(in fuzzCase, v ConfigValue, topic string) bool {
	if v.Present {
		return false // the broker answered: a null or malformed value is its answer
	}
	for _, f := range in.obs.Failures {
		if oracleClusterWide(f) || (f.Topic == topic && slices.Contains(oracleConfigAPIs, strings.ToLower(f.API))) {
			return true
		}
	}
	return false
}

func oracleOffsetsUnreadable(in fuzzCase) int {
	if in.obs.Group.Protocol == ProtocolShare {
		return 0 // a share group's progress does not expire: the setting is not read
	}
	v := in.obs.OffsetsRetentionMinutes
	if n, ok := oracleInt(v); ok && n >= 1 || oracleExplained(in, v, "") {
		return 0
	}
	return 1
}

func oracleRetentionUnreadable(in fuzzCase, t TopicObservation) int {
	deletes, compacts, ok := oracleTopicCleanup(t)
	if !ok {
		if oracleExplained(in, t.CleanupPolicy, t.Name) {
			return 0
		}
		return 1
	}
	n := 0
	if compacts {
		if ms, ok := oracleInt(t.DeleteRetentionMs); ok && ms < 0 {
			n++ // a negative value is unreadable whatever explains absences
		} else if !ok && !oracleExplained(in, t.DeleteRetentionMs, t.Name) {
			n++
		}
	}
	if !deletes {
		return n
	}
	for _, v := range []ConfigValue{t.RetentionMs, t.RetentionBytes} {
		if _, ok := oracleInt(v); !ok && !oracleExplained(in, v, t.Name) {
			n++
		}
	}
	return n
}
