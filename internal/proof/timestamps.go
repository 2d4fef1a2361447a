package proof

import (
	"strconv"
	"time"
)

// recordTimestampWarnings warns, per topic that deletes by time, when it
// lets in records old enough to be deleted sooner than the recovery window
// after they are written. Kafka deletes a segment once its largest record
// timestamp is older than retention.ms (UnifiedLog.
// deleteRetentionMsBreachedSegments); with message.timestamp.type
// CreateTime that timestamp is the producer's, bounded only by
// message.timestamp.before.max.ms (Kafka 3.6+, KIP-937; unbounded by
// default and before 3.6). A record stamped more than retention.ms −
// recoveryWindow in the past — a backfill, a mirror, a replay — can expire
// before a consumer down for the window comes back. Headroom is computed
// from the real timestamps at the committed offsets; this is the advice for
// records not yet written.
func recordTimestampWarnings(f *facts) []Warning {
	var out []Warning
	window := f.policy.RecoveryWindow
	for i := range f.topics {
		t := &f.topics[i]
		retention, finite := t.retention.finiteRetention()
		if t.obs == nil || !finite || retention < window {
			continue
		}
		if t.obs.TimestampType.LogAppendTime() {
			continue
		}
		margin := retention - window
		bound, bounded := timestampBound(t.obs.TimestampBeforeMaxMs)
		if bounded && bound <= margin {
			continue
		}
		w := Warning{Type: WarningRecordTimestamps, Reason: WarningReasonAcceptsAnyAge, Subject: t.name, Span: margin}
		if bounded {
			w.Reason, w.Limit = WarningReasonAcceptsOlderThanWindow, bound
		}
		w.Message = recordTimestampsMessage(&w)
		out = append(out, w)
	}
	return out
}

// recordTimestampsMessage renders a WarningRecordTimestamps.
func recordTimestampsMessage(w *Warning) string {
	accepts := "record timestamps of any age"
	if w.Reason == WarningReasonAcceptsOlderThanWindow {
		accepts = "record timestamps up to " + FormatDuration(w.Limit) + " old"
	}
	return w.Subject + ": " + keyTimestampType + " CreateTime accepts " + accepts + " (" + keyTimestampBeforeMaxMs + "): " +
		"a record stamped more than " + FormatDuration(w.Span) + " (retention.ms − recoveryWindow) before it is written, " +
		"such as a backfill or a mirror, is deleted sooner than recoveryWindow after it is written; set " +
		keyTimestampBeforeMaxMs + " to at most " + strconv.FormatInt(w.Span.Milliseconds(), 10) +
		", or " + keyTimestampType + " LogAppendTime"
}

// timestampBound reads message.timestamp.before.max.ms; absent, null,
// unparsable or Long.MAX mean no bound (Kafka's default).
func timestampBound(v ConfigValue) (time.Duration, bool) {
	d, ok := v.Millis()
	if !ok || v.Unbounded() {
		return 0, false
	}
	return d, true
}
