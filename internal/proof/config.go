package proof

import (
	"math"
	"strings"
	"time"
)

// Config keys, as Kafka names them.
const (
	keyCleanupPolicy           = "cleanup.policy"
	keyRetentionMs             = "retention.ms"
	keyRetentionBytes          = "retention.bytes"
	keyDeleteRetentionMs       = "delete.retention.ms"
	keyTimestampType           = "message.timestamp.type"
	keyTimestampBeforeMaxMs    = "message.timestamp.before.max.ms"
	keyTimestampAfterMaxMs     = "message.timestamp.after.max.ms"
	keyRemoteStorageEnable     = "remote.storage.enable"
	keyOffsetsRetentionMinutes = "offsets.retention.minutes"
)

// retentionConfig is one topic's retention configuration, read once and
// shared by the RetentionCoversWindow clause and the headroom warning.
type retentionConfig struct {
	// cleanupProblem is non-empty when cleanup.policy could not be read;
	// nothing else is known then.
	cleanupProblem string
	deletes        bool // cleanup.policy contains "delete"
	compacts       bool // cleanup.policy contains "compact"
	// keeps: cleanup.policy is empty: neither deletes nor compacts, so
	// records are kept forever (Kafka's LogConfig reads an empty list as
	// neither; Kafka 4.2 documents it as infinite retention, KAFKA-19112).
	keeps bool
	// tiered: remote.storage.enable is true (KIP-405). With an empty
	// cleanup.policy the remote log's expiration still deletes by
	// retention.ms and retention.bytes (RemoteLogManager's expiration
	// task), so such a topic is judged like delete.
	tiered bool

	// deleteRetentionProblem is non-empty when delete.retention.ms of a
	// compacting topic could not be read.
	deleteRetentionProblem string
	deleteRetentionMs      int64

	// msProblem is non-empty when retention.ms could not be read.
	msProblem string
	ms        int64 // negative: infinite (Kafka skips time-based deletion)

	// bytesProblem is non-empty when retention.bytes could not be read.
	bytesProblem string
	bytes        int64 // negative: no size bound
}

// finiteRetention returns retention.ms as a duration when records of this
// topic are deleted by time after a known delay.
func (rc retentionConfig) finiteRetention() (time.Duration, bool) {
	if rc.cleanupProblem != "" || !rc.deletes || rc.msProblem != "" || rc.ms < 0 {
		return 0, false
	}
	return millisToDuration(rc.ms), true
}

func readRetentionConfig(t *TopicObservation) retentionConfig {
	var rc retentionConfig
	rc.deletes, rc.compacts, rc.cleanupProblem = readCleanupPolicy(t.CleanupPolicy)
	if rc.cleanupProblem != "" {
		return rc
	}
	if !rc.deletes && !rc.compacts {
		tiered, problem := readRemoteStorage(t.RemoteStorageEnable)
		if problem != "" {
			rc.cleanupProblem = keyCleanupPolicy + " is empty and " + problem +
				": whether the remote log deletes by retention.ms is unknown"
			return rc
		}
		rc.tiered, rc.deletes = tiered, tiered
	}
	rc.keeps = !rc.deletes && !rc.compacts
	if rc.compacts {
		rc.deleteRetentionMs, rc.deleteRetentionProblem = readInt(keyDeleteRetentionMs, t.DeleteRetentionMs)
	}
	if rc.deletes {
		rc.ms, rc.msProblem = readInt(keyRetentionMs, t.RetentionMs)
		rc.bytes, rc.bytesProblem = readInt(keyRetentionBytes, t.RetentionBytes)
	}
	return rc
}

// readCleanupPolicy reads cleanup.policy, a comma-separated list of
// "delete" and "compact", possibly empty (neither: records are kept
// forever). Anything else is unreadable: the proof does not guess whether
// an unknown policy deletes records.
func readCleanupPolicy(v ConfigValue) (deletes, compacts bool, problem string) {
	if problem := unreadable(keyCleanupPolicy, v); problem != "" {
		return false, false, problem
	}
	if strings.TrimSpace(v.Value) == "" {
		return false, false, ""
	}
	for item := range strings.SplitSeq(v.Value, ",") {
		switch strings.ToLower(strings.TrimSpace(item)) {
		case "delete":
			deletes = true
		case "compact":
			compacts = true
		default:
			return false, false, keyCleanupPolicy + " " + quoteValue(v.Value) + " is not a list of delete and compact"
		}
	}
	return deletes, compacts, ""
}

// readRemoteStorage reads remote.storage.enable. Absent means a broker
// without tiered storage (before 3.6, or kfake): false. Null or anything
// but true/false is unreadable.
func readRemoteStorage(v ConfigValue) (bool, string) {
	if !v.Present {
		return false, ""
	}
	if v.Null {
		return false, keyRemoteStorageEnable + " is null"
	}
	switch strings.ToLower(strings.TrimSpace(v.Value)) {
	case "true":
		return true, ""
	case "false":
		return false, ""
	}
	return false, keyRemoteStorageEnable + " " + quoteValue(v.Value) + " is not true or false"
}

// readInt reads an integer config value (ConfigValue.Int); problem says
// why it could not.
func readInt(key string, v ConfigValue) (n int64, problem string) {
	if problem := unreadable(key, v); problem != "" {
		return 0, problem
	}
	n, ok := v.Int()
	if !ok {
		return 0, key + " " + quoteValue(v.Value) + " is not an integer"
	}
	return n, ""
}

func unreadable(key string, v ConfigValue) string {
	switch {
	case !v.Present:
		return key + " could not be read (not in the broker's answer)"
	case v.Null:
		return key + " is null"
	}
	return ""
}

// readOffsetsRetention reads the broker's offsets.retention.minutes. Kafka
// requires at least 1; a smaller value is not something a broker runs
// with, so it is unreadable rather than guessed at.
func readOffsetsRetention(v ConfigValue) (minutes int64, problem string) {
	minutes, problem = readInt(keyOffsetsRetentionMinutes, v)
	if problem == "" && minutes < 1 {
		return 0, keyOffsetsRetentionMinutes + " " + itoa(minutes) + " is not a valid value (Kafka requires at least 1)"
	}
	return minutes, problem
}

// millisToDuration converts milliseconds to a duration, saturating instead
// of overflowing.
func millisToDuration(ms int64) time.Duration {
	return saturatingMul(ms, int64(time.Millisecond))
}

// minutesToDuration converts minutes to a duration, saturating instead of
// overflowing.
func minutesToDuration(minutes int64) time.Duration {
	return saturatingMul(minutes, int64(time.Minute))
}

func saturatingMul(v, unit int64) time.Duration {
	switch {
	case v > math.MaxInt64/unit:
		return math.MaxInt64
	case v < math.MinInt64/unit:
		return math.MinInt64
	}
	return time.Duration(v * unit)
}
