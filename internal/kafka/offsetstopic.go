package kafka

import (
	"encoding/hex"
	"time"

	"github.com/retentionguard/retention-guard/internal/proof"
)

// Exact commit times, from __consumer_offsets (Target.ReadOffsetsTopic; the
// policy's spec.kafka.readOffsetsTopic and check's --read-offsets-topic are
// on by default).
//
// The group coordinator writes every offset commit to the compacted topic
// __consumer_offsets as a record keyed by (group, topic, partition) whose
// value carries commitTimestamp — the time offsets.retention.minutes is
// counted from for offsets that expire per commit — and every classic
// group's metadata with currentStateTimestamp — when an Empty group became
// Empty (Kafka's GroupCoordinatorRecordHelpers; OffsetCommitValue v0–v4,
// GroupMetadataValue v2+). Reading it is what Burrow does; it needs Read on
// the topic, which some platforms do not grant: then the proof falls back
// to bounds and says why (proof.OffsetsTopicRead.Reason).
//
// A group's records live in one partition, Utils.abs(groupId.hashCode()) %
// partitions (Kafka's GroupCoordinatorService.partitionFor). The observer
// reads the partitions of the groups that ask, from the log start, and then
// only what was appended since, pass after pass: per cluster it keeps the
// next offset to read and, for the groups asked, the latest commit record
// per partition and the latest group metadata. It reads read_committed
// (transactional commits count once committed), so it can read no further
// than the partition's last stable offset: an open transaction there
// (TxnOffsetCommit of an exactly-once producer) holds back every later
// commit of every group of the partition. A time is exact only when the
// reader reached the high watermark. A pass that does not (an open
// transaction, a deadline, a batch it cannot decode) reports no exact
// times (the proof bounds them instead) and goes on from there next time.
// A group asked for the first time rewinds its partition to the log start.
//
// What was read is shared by every pass on the cluster (a live check at a
// start runs beside the periodic pass; connections differing only in
// credentials share it): a result holds copies made under the cluster's
// lock, never the maps a later pass writes.
//
// Three files, one job each: offsetslog.go is the log state (records
// folded into per-group state, no I/O), offsetsfetch.go the fetcher (the
// requests, one reader per cluster at a time), and this file what an
// observation takes from it.

const offsetsTopicName = "__consumer_offsets"

// offsetsTopicResult is what one pass learned from __consumer_offsets.
type offsetsTopicResult struct {
	problem offsetsTopicProblem // why exact times are missing; zero when read
	// per group: commit records and metadata, only when caught up; copies
	groups map[string]groupRecords
	// coordinatorAhead: how far ahead of the observer's clock the newest
	// record read was stamped (zero when not ahead).
	coordinatorAhead time.Duration
}

// exactTimes sets, in an observation of a group, the exact times read from
// __consumer_offsets: each partition's last commit when the record holds
// the committed offset the observation read (a commit that landed between
// the two reads leaves it bounded), and an Empty classic group's Empty
// time. A record of the group the reader could not decode sets no time
// and is the observation's problem: an older record of the same key would
// date a newer commit wrongly.
func (r *offsetsTopicResult) exactTimes(obs *proof.Observation) {
	g := obs.Group.ID
	rec := r.groups[g]
	if rec.undecodable != "" {
		obs.OffsetsTopic.Reason, obs.OffsetsTopic.Problem = proof.OffsetsTopicUndecodable, rec.undecodable
		return
	}
	for i := range obs.Topics {
		t := &obs.Topics[i]
		for j := range t.Partitions {
			po := &t.Partitions[j]
			c, ok := rec.commits[topicPartition{Topic: t.Name, Partition: po.Partition}]
			if ok && po.Committed < 0 && c.offset >= 0 {
				// OffsetFetch answered none, the log still holds a commit
				// (expiry and deletion write tombstones): the proof must
				// not take the group for a fresh one, nor its offsets for
				// gone.
				po.LoggedOffset, po.LoggedOffsetKnown = c.offset, true
				continue
			}
			if !ok || c.offset != po.Committed || po.Committed < 0 {
				continue
			}
			// An explicit expiry (OffsetCommit v2–v4 retention_time)
			// replaces the group's clock: the proof reads it as such.
			po.LastCommit, po.ExpireAt = c.committedAt(), c.expiresAt()
			if c.topicID != ([16]byte{}) {
				po.CommitTopicID = hex.EncodeToString(c.topicID[:])
			}
		}
	}
	m := rec.meta
	if rec.hasMeta && obs.Group.Protocol == proof.ProtocolClassic && obs.Group.State == proof.GroupStateEmpty &&
		m.members == 0 && !m.stateTime.IsZero() {
		obs.Group.EmptySince, obs.Group.EmptySinceExact = m.stateTime, true
	}
}
