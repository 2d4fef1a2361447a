package webhook

import (
	"slices"
	"strings"

	rgv1 "github.com/retentionguard/retention-guard/api/v1alpha1"
	"github.com/retentionguard/retention-guard/internal/proof"
)

// problem is the kind of problem a reason says, in the order a denial
// lists them: data already lost first, then what keeps the proof from
// being made (reachability, access), then configuration (retention,
// offsets retention), then the rest.
type problem int

const (
	problemLoss problem = iota
	problemAccess
	problemConfig
	problemOther
)

// remedy is one way out; a denial says the ways out of the reasons it
// lists, in this order.
type remedy int

const (
	// remedyNone: the reason has no way out of its own; something keeps the
	// proof from being made (see blocked in wayOut).
	remedyNone remedy = iota
	remedyCursorGone
	remedyCursorBeyond
	remedyShareGone
	// remedyResetOffsets becomes remedyResetToCursor when the policy has a
	// business cursor: it says where to resume.
	remedyResetOffsets
	remedyResetToCursor
	remedyRecreatedTopic
	remedyDivergedLog
	remedyRetention
	remedyTombstones
	remedyCommits
	remedyExplicitExpiry
	remedyHeadroom
	remedyTombstoneHeadroom
	remedyEmptyGroup
	remedyEmptyGroupUndated
	// remedyEpochDiverged: a commit with its leader epoch past a diverged
	// log (a risk): the consumer rewinds by itself; the next commit, or a
	// reset to where the log diverged, ends the warning.
	remedyEpochDiverged
	// remedyUnreadPartition: a partition without a commit that a reset to
	// latest would skip (a partition added while the group was down).
	remedyUnreadPartition
)

// advice is what a reason means for the person rolling out.
type advice struct {
	problem problem
	remedy  remedy
	// violatedOnly: the remedy applies only to a Violated proof (a
	// retention setting that is shown to fail); an Unknown proof never
	// gets retention advice.
	violatedOnly bool
	// check names what to check when the reason is a fact that could not
	// be read.
	check string
}

const (
	checkNetwork = "the bootstrap servers and network"
	checkACLs    = "the ACLs (Describe, DescribeConfigs)"
)

// adviceFor is the table from reason to advice. A reason not in it is a
// problem of the rest, and its way out is to fix what keeps the proof from
// being made.
var adviceFor = map[string]advice{
	// Data already lost or not located.
	proof.ReasonCursorExpired:                 {problem: problemLoss, remedy: remedyCursorGone},
	proof.ReasonNoCursor:                      {problem: problemLoss, remedy: remedyCursorGone},
	proof.ReasonCursorBeyondLogEnd:            {problem: problemLoss, remedy: remedyCursorBeyond},
	proof.ReasonGroupAheadOfCursor:            {problem: problemLoss, remedy: remedyResetToCursor},
	proof.ReasonCommittedOffsetExpired:        {problem: problemLoss, remedy: remedyResetOffsets},
	proof.ReasonNoCommittedOffset:             {problem: problemLoss, remedy: remedyResetOffsets},
	proof.ReasonCommittedOffsetBeyondLogEnd:   {problem: problemLoss, remedy: remedyResetOffsets},
	proof.ReasonCommittedOffsetOfDeletedTopic: {problem: problemLoss, remedy: remedyRecreatedTopic},
	proof.ReasonShareRecordsExpired:           {problem: problemLoss, remedy: remedyShareGone},
	proof.ReasonCommittedOffsetDiverged:       {problem: problemLoss, remedy: remedyDivergedLog},
	// Unknown: where the group resumes on a log that diverged.
	proof.ReasonCommittedLeaderEpochUnknown:  {problem: problemOther, remedy: remedyDivergedLog},
	proof.ReasonCommittedOffsetOnDivergedLog: {problem: problemOther, remedy: remedyDivergedLog},
	proof.ReasonNoShareStartOffset:           {problem: problemLoss, remedy: remedyShareGone},
	// Skipped when the consumers start: the rollout is the loss.
	proof.ReasonResetToLatestSkipsRecords: {problem: problemLoss, remedy: remedyUnreadPartition},

	// What keeps the proof from being made.
	proof.ReasonBrokerUnreachable:         {problem: problemAccess, check: checkNetwork},
	proof.ReasonBootstrapServerNotAllowed: {problem: problemAccess, check: checkNetwork},
	proof.ReasonAuthenticationFailed:      {problem: problemAccess, check: "the credentials"},
	proof.ReasonAuthorizationFailed:       {problem: problemAccess, check: checkACLs},
	proof.ReasonTopicNotFound:             {problem: problemAccess, check: "spec.topics"},
	proof.ReasonCursorUnreadable:          {problem: problemAccess, check: "the cursor database, its Secret and query (spec.cursor)"},
	proof.ReasonGroupTypeUnknown:          {problem: problemAccess},
	// A lagging record not dated: Read on the topic dates it.
	proof.ReasonRecordTimestampUnread: {problem: problemAccess, check: "the ACLs (Read on the topic dates the record at the committed offset)"},
	// Tombstones neither read nor dated: Read on the topic reads them, a
	// bounded message.timestamp.after.max.ms dates them.
	proof.ReasonTombstonesUnread: {problem: problemAccess,
		check: "the ACLs (Read on the topic) and the topic's message.timestamp.after.max.ms (bounded, it dates the tombstones)"},
	ReasonProofMissing:    {problem: problemAccess},
	ReasonProofStale:      {problem: problemAccess},
	ReasonLiveCheckFailed: {problem: problemAccess},

	// Configuration.
	proof.ReasonRetentionShorterThanWindow:          {problem: problemConfig, remedy: remedyRetention, violatedOnly: true},
	proof.ReasonInfiniteRetentionNotAllowed:         {problem: problemConfig, remedy: remedyRetention, violatedOnly: true},
	proof.ReasonSizeBoundedRetention:                {problem: problemConfig, remedy: remedyRetention, violatedOnly: true},
	proof.ReasonOffsetsRetentionShorterThanWindow:   {problem: problemConfig, remedy: remedyRetention, violatedOnly: true},
	proof.ReasonTombstoneRetentionShorterThanWindow: {problem: problemConfig, remedy: remedyTombstones, violatedOnly: true},
	proof.ReasonRetentionUnreadable:                 {problem: problemConfig, check: checkACLs},
	proof.ReasonOffsetsRetentionUnreadable:          {problem: problemConfig, check: checkACLs},
	proof.ReasonOffsetsExpireBeforeWindow:           {problem: problemConfig, remedy: remedyCommits},
	proof.ReasonOffsetsMayExpireBeforeWindow:        {problem: problemConfig, remedy: remedyCommits},
	proof.ReasonExplicitOffsetExpiryBeforeWindow:    {problem: problemConfig, remedy: remedyExplicitExpiry},
	// Unknown: which reset the consumers use is not known.
	proof.ReasonOffsetResetMaySkipRecords: {problem: problemConfig, remedy: remedyUnreadPartition},

	// Risks: nothing lost yet (listed after the rest).
	proof.ReasonRecoveryHeadroomShorterThanWindow:   {problem: problemOther, remedy: remedyHeadroom},
	proof.ReasonTombstoneHeadroomShorterThanWindow:  {problem: problemOther, remedy: remedyTombstoneHeadroom},
	proof.ReasonEmptyGroupOffsetsExpireBeforeWindow: {problem: problemOther, remedy: remedyEmptyGroup},
	// Unknown: since when the group is Empty is not known well enough.
	proof.ReasonEmptyGroupOffsetsMayExpireBeforeWindow: {problem: problemOther, remedy: remedyEmptyGroupUndated},
	// The consumer rewinds to where the log diverged and re-reads.
	proof.ReasonCommittedEpochDiverged: {problem: problemOther, remedy: remedyEpochDiverged},
}

// findingRank orders findings by what matters to the person rolling out
// (problem).
func findingRank(reason string) int {
	if a, ok := adviceFor[reason]; ok {
		return int(a.problem)
	}
	return int(problemOther)
}

// way is what the texts of the ways out need to know.
type way struct {
	p        *rgv1.ConsumerRetentionPolicy
	window   string // the recovery window, as people write it
	server   string // the first bootstrap server, or the connection
	topics   string // " --topic t" flags: the failing topics, else the policy's
	describe string // "kubectl describe crp NAME -n NAMESPACE"
}

// wayText is a remedy's way out: full, as lines (prose and commands), and
// in words, as one clause of a sentence.
type wayText struct {
	full  func(w *way) []line
	words func(w *way) string
}

var wayTexts = map[remedy]wayText{
	remedyCursorGone: {
		full: func(*way) []line {
			return proseLines("Way out: reconcile the records the business cursor never reached from their source (the topic no longer has them), " +
				"move the cursor past them, then retry.")
		},
		words: func(*way) string { return "reconcile from their source the records the cursor never reached" },
	},
	remedyCursorBeyond: {
		full: func(*way) []line {
			return proseLines("Way out: reconcile the business cursor with the topic (it was truncated or recreated), then retry.")
		},
		words: func(*way) string { return "reconcile the cursor with the topic" },
	},
	remedyShareGone: {
		full: func(*way) []line {
			return proseLines("Way out: reconcile from their source the records the share group may never have acknowledged " +
				"(the topic no longer has them), then retry.")
		},
		words: func(*way) string { return "reconcile from their source the records the share group never acknowledged" },
	},
	remedyResetOffsets: {
		full: func(w *way) []line {
			return []line{proseLine("Way out: replay or reset the group's offsets, then retry, e.g."),
				commandLine("kafka-consumer-groups --bootstrap-server " + w.server + " --group " + w.p.Spec.GroupID + w.topics + " --reset-offsets --to-earliest --execute")}
		},
		words: func(*way) string {
			return "replay or reset the group's offsets (kafka-consumer-groups --reset-offsets)"
		},
	},
	remedyResetToCursor: {
		// With a business cursor, earliest is the silent replay seed 003
		// warns about: the cursor says where to resume.
		full: func(*way) []line {
			return proseLines("Way out: resume from the business cursor, not from where the group's offsets are: reset the group's offsets " +
				"to the cursor (kafka-consumer-groups --reset-offsets --to-offset), or set spec.cursor.resumeFrom Cursor if the consumer seeks to it on start; then retry.")
		},
		words: func(*way) string {
			return "reset the group's offsets to the business cursor (or resume from it: spec.cursor.resumeFrom Cursor)"
		},
	},
	remedyRecreatedTopic: {
		full: func(*way) []line {
			return proseLines("Way out: the topic was recreated: reset the group's offsets on it to where the business really is " +
				"(kafka-consumer-groups --reset-offsets --to-offset), then retry.")
		},
		words: func(*way) string {
			return "reset the group's offsets on the recreated topic to where the business really is"
		},
	},
	// A new commit is the way out: a reset commits without a leader
	// epoch (nothing left to validate), and the manager forgets a
	// divergence once the offset changes.
	remedyDivergedLog: {
		full: func(*way) []line {
			return proseLines("Way out: the partition's log diverged below the group's position (truncated, then grown back): " +
				"decide whether to re-read from where it diverged (the offset named above) or accept the loss, then reset the group's offsets " +
				"on it (kafka-consumer-groups --reset-offsets --to-offset), then retry.")
		},
		words: func(*way) string {
			return "reset the group's offsets on the diverged partition to where the log diverged, or past it to accept the loss"
		},
	},
	remedyRetention: {
		full: func(w *way) []line {
			return proseLines("Way out: make retention.ms and offsets.retention.minutes cover recoveryWindow " + w.window + " (or shorten it), then retry.")
		},
		words: func(w *way) string {
			return "make retention.ms and offsets.retention.minutes cover recoveryWindow " + w.window
		},
	},
	remedyTombstones: {
		full: func(w *way) []line {
			return proseLines("Way out: raise delete.retention.ms of the compacted topic to recoveryWindow " + w.window + " or more, then retry.")
		},
		words: func(w *way) string { return "raise delete.retention.ms to " + w.window },
	},
	remedyCommits: {
		// Only ways that change the next proof: a commit of the same
		// offset is dated only where __consumer_offsets is read, a newer
		// offset by the manager that saw the old one.
		full: func(w *way) []line {
			if w.exactTimesRead() {
				return proseLines("Way out: commit the group's offsets again as they are (the guard reads the new commit's time " +
					"from __consumer_offsets) or raise offsets.retention.minutes, then retry.")
			}
			full, _ := w.exactTimesWay()
			return proseLines("Way out: " + orWays(full, "let the consumer commit newer offsets while the manager "+
				"watches (it dates a change it saw)") + ", then retry.")
		},
		words: func(w *way) string {
			if w.exactTimesRead() {
				return "commit the group's offsets again or raise offsets.retention.minutes"
			}
			_, words := w.exactTimesWay()
			return orWays(words, "let the consumer commit newer offsets")
		},
	},
	remedyExplicitExpiry: {
		full: func(*way) []line {
			return proseLines("Way out: commit the group's offsets again without a retention time (a client on OffsetCommit v5 or later), then retry.")
		},
		words: func(*way) string {
			return "commit the group's offsets again without a retention time (OffsetCommit v5 or later)"
		},
	},
	remedyHeadroom: {
		full: func(*way) []line {
			return proseLines("Way out: let the group catch up before retention reaches its position, or raise retention.ms, then retry.")
		},
		words: func(*way) string { return "let the group catch up or raise retention.ms" },
	},
	// The consumer reading past the tombstones ends the risk; a higher
	// delete.retention.ms protects only the tombstones the cleaner has not
	// yet cleaned (the first cleaning stamps the horizon on the batch,
	// Kafka's MemoryRecords.filterTo).
	remedyTombstoneHeadroom: {
		full: func(*way) []line {
			return proseLines("Way out: let the group catch up past the tombstones it has not read, or raise delete.retention.ms " +
				"(only tombstones the log cleaner has not yet seen are kept longer), then retry.")
		},
		words: func(*way) string { return "let the group catch up past its tombstones or raise delete.retention.ms" },
	},
	remedyEmptyGroup: {
		full: func(*way) []line {
			return proseLines("Way out: start the consumer (a member stops the clock on the group's offsets) or raise offsets.retention.minutes, then retry.")
		},
		words: func(*way) string { return "start the consumer or raise offsets.retention.minutes" },
	},
	// Either way changes the next proof: a commit on the partition (or a
	// share group's start offset), or evidence that the consumers start at
	// the log start (share.auto.offset.reset=earliest, read from the
	// group's config; auto.offset.reset=none under spec.consumer, which
	// throws there instead of skipping).
	remedyUnreadPartition: {
		full: func(w *way) []line {
			return proseLines("Way out: commit an offset for each partition without one before the consumers start " +
				"(kafka-consumer-groups --group " + w.p.Spec.GroupID + " --topic TOPIC:PARTITION --reset-offsets --to-earliest --execute; " +
				"kafka-share-groups for a share group), or show they start at the log start: " +
				"share.auto.offset.reset=earliest for a share group, spec.consumer (none) for a consumer group; then retry.")
		},
		words: func(*way) string {
			return "commit an offset for each partition without one (--reset-offsets --to-earliest) or show the consumers start at the log start"
		},
	},
	// Either way changes the next proof: a commit carrying the epoch of
	// the records the consumer read after it rewound ends at or past its
	// offset, and a reset commits a new offset without an epoch (the
	// manager forgets what it saw under the old one).
	remedyEpochDiverged: {
		full: func(*way) []line {
			return proseLines("Way out: none needed for the rollout: the partition's log diverged below the group's position (truncated, then grown back), " +
				"and the consumer validates the committed leader epoch on restart and rewinds to where it diverged (the offset named above), " +
				"re-reading what the log holds there now. Decide whether what the group did with the records gone from the log must be undone; " +
				"the group's next commit ends the warning, or reset its offsets on the partition to that offset (kafka-consumer-groups --reset-offsets --to-offset).")
		},
		words: func(*way) string {
			return "none where the commit carries its leader epoch: the consumer rewinds to where the log diverged " +
				"(the group's next commit, or a reset to that offset, ends the warning)"
		},
	},
	remedyEmptyGroupUndated: {
		full: func(w *way) []line {
			full, _ := w.exactTimesWay()
			return proseLines("Way out: " + orWays("start the consumer (a member stops the clock on the group's offsets)", full) +
				", then retry.")
		},
		words: func(w *way) string {
			_, words := w.exactTimesWay()
			return orWays("start the consumer", words)
		},
	},
}

// offsetsTopicRead is what the policy's status says of its read of
// __consumer_offsets: asked unless spec.kafka.readOffsetsTopic is false,
// and the reason of its offsetsTopic warning when the read failed.
func (w *way) offsetsTopicRead() proof.OffsetsTopicRead {
	r := proof.OffsetsTopicRead{Requested: w.p.Spec.Kafka.ReadsOffsetsTopic()}
	if ps := w.p.Status.Proof; ps != nil {
		for _, f := range ps.WarningFacts {
			if f.Type == proof.WarningOffsetsTopic {
				r.Reason = f.Reason
				break
			}
		}
	}
	return r
}

// exactTimesRead reports whether the policy's proof read exact commit and
// Empty times.
func (w *way) exactTimesRead() bool { return w.offsetsTopicRead().ExactTimesRead() }

// exactTimesWay is the proof's way to exact times (proof.ExactTimesWay),
// in full and in words.
func (w *way) exactTimesWay() (full, words string) { return proof.ExactTimesWay(w.offsetsTopicRead()) }

// orWays joins the ways that are not empty with ", or ".
func orWays(ways ...string) string {
	var out []string
	for _, w := range ways {
		if w != "" {
			out = append(out, w)
		}
	}
	return strings.Join(out, ", or ")
}

// wayOut says how to make the proof hold again, chosen by the reasons the
// proof actually lists (adviceFor): offsets to reset for lost data,
// retention to raise for a retention setting that fails, the connection,
// credentials or ACLs for a fact that could not be read. A proof that is
// only Unknown never gets the retention advice. compact says every way out
// in one sentence of words; withCheck adds the `retention-guard check`
// command that proves it again.
func wayOut(r *policyResult, withCheck, compact bool) []line {
	c := chooseRemedies(r)
	w := newWay(r.Policy, c.topics)
	var out []line
	if compact {
		out = c.inWords(w)
	} else {
		out = c.inFull(w)
		if withCheck && r.kafkaFailing() {
			out = append(out, checkHint(w)...)
		}
	}
	if fix := consumerFix(r); fix != "" {
		out = append(out, proseLine(fix))
	}
	return out
}

// remedies are the ways out of a policy's Kafka findings.
type remedies struct {
	remedies []remedy // in order
	access   []string // what to check, for the reasons listed
	topics   []string // failing topics, for the reset command
	// blocked: something keeps the proof from being made (it is not
	// Violated on the facts listed: Unknown, or a reason without a way
	// out).
	blocked bool
}

func chooseRemedies(r *policyResult) remedies {
	var c remedies
	other := false
	for _, f := range r.Kafka {
		a, ok := adviceFor[f.Reason]
		if !ok {
			other = true
			continue
		}
		if a.check != "" && !slices.Contains(c.access, a.check) {
			c.access = append(c.access, a.check)
		}
		rm := a.remedy
		switch {
		case rm == remedyNone:
			if a.check == "" {
				other = true
			}
			continue
		case a.violatedOnly && r.Verdict != rgv1.VerdictViolated:
			continue
		case rm == remedyResetOffsets:
			if f.Topic != "" && !slices.Contains(c.topics, f.Topic) && len(c.topics) < 3 {
				c.topics = append(c.topics, f.Topic)
			}
			if r.Policy.Spec.Cursor != nil {
				rm = remedyResetToCursor
			}
		}
		if !slices.Contains(c.remedies, rm) {
			c.remedies = append(c.remedies, rm)
		}
	}
	slices.Sort(c.remedies)
	c.blocked = r.kafkaFailing() && (len(c.access) > 0 || other || len(c.remedies) == 0)
	return c
}

// newWay is what the texts of the ways out of p need; topics are the
// failing topics (none: the policy's first three).
func newWay(p *rgv1.ConsumerRetentionPolicy, topics []string) *way {
	w := &way{p: p, window: proof.FormatDurationShort(p.Spec.RecoveryWindow.Duration), describe: "kubectl describe crp " + p.Name + " -n " + p.Namespace}
	if len(topics) == 0 {
		topics = p.Spec.Topics[:min(len(p.Spec.Topics), 3)]
	}
	for _, t := range topics {
		w.topics += " --topic " + t
	}
	switch ref := p.Spec.Kafka.ConnectionRef; {
	case len(p.Spec.Kafka.BootstrapServers) > 0:
		w.server = p.Spec.Kafka.BootstrapServers[0]
	case ref != nil:
		// The servers are the connection's (status.bootstrapServers).
		w.server = "<" + ref.Kind + "/" + ref.Name + ">"
	}
	return w
}

// inWords is every way out in one sentence.
func (c *remedies) inWords(w *way) []line {
	var ways []string
	for _, rm := range c.remedies {
		ways = append(ways, wayTexts[rm].words(w))
	}
	switch {
	case c.blocked && len(c.access) > 0:
		ways = append(ways, "check "+strings.Join(c.access, ", "))
	case c.blocked:
		ways = append(ways, "fix what keeps the proof from being made ("+w.describe+")")
	}
	if len(ways) == 0 {
		return nil
	}
	return proseLines("Way out: " + strings.Join(ways, "; ") + ", then retry.")
}

// inFull is each way out in full, with its commands.
func (c *remedies) inFull(w *way) []line {
	var out []line
	for _, rm := range c.remedies {
		out = append(out, wayTexts[rm].full(w)...)
	}
	switch {
	case c.blocked && len(c.access) > 0:
		out = append(out, proseLine("Way out: check "+strings.Join(c.access, ", ")+", then retry; details: "+w.describe))
	case c.blocked:
		out = append(out, proseLine("Way out: fix what keeps the proof from being made ("+w.describe+"), then retry."))
	}
	return out
}

// checkHint is the `retention-guard check` command that proves the policy
// again.
func checkHint(w *way) []line {
	p := w.p
	cursorFlags := ""
	if c := p.Spec.Cursor; c != nil {
		cursorFlags = " --cursor-driver " + string(c.SQL.Driver) + " --cursor-dsn-file DSN_FILE"
		if c.ResumeFrom == rgv1.ResumeFromCursor {
			cursorFlags += " --resume-from cursor"
		}
	}
	return []line{proseLine("Prove it now (exit 0 when it holds):"),
		commandLine("retention-guard check --bootstrap-server " + w.server + " --group " + p.Spec.GroupID +
			w.topics + " --recovery-window " + w.window + cursorFlags)}
}

// consumerFix is the way out of a failing consumer clause, "" when it
// does not fail.
func consumerFix(r *policyResult) string {
	if len(r.Consumer) == 0 {
		return ""
	}
	c := r.Policy.Spec.Consumer
	settings := false
	for _, f := range r.Consumer {
		if f.Reason != ReasonOffsetResetNotProvable {
			settings = true
		}
	}
	if !settings {
		return "Fix: a Streams group's resets are in its topology: remove spec.consumer from the policy; consumer settings cannot be overridden."
	}
	fix := "Fix: set " + c.OffsetResetEnv + "=none (error for librdkafka)"
	if c.AutoCommitEnv != "" {
		fix += " and " + c.AutoCommitEnv + "=false"
	}
	return fix + " in the pod template; consumer settings cannot be overridden."
}
