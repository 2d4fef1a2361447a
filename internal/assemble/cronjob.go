package assemble

import (
	"strconv"
	"time"

	"github.com/retentionguard/retention-guard/internal/proof"
)

// A CronJob's schedule is evidence (issue #8, seed 003): a batch consumer
// is down between two runs by design, so the longest gap between its
// scheduled runs is downtime the team has planned. When that gap reaches
// the brokers' offsets.retention.minutes, the group's committed offsets
// expire between two runs — the daily settlement consumer of seed 003 lost
// 4,654,259 tasks exactly so. The manager measures the gaps
// (internal/gather: longestScheduleGap); CronJobWarnings judges them.

// ScheduleGap is the longest gap between consecutive scheduled runs.
type ScheduleGap struct {
	// Gap is the longest time between two consecutive run starts, with
	// startingDeadlineSeconds added (a run may start that much after its
	// scheduled time, so two runs can start up to Gap apart).
	Gap time.Duration
	// After is the scheduled run that starts the longest gap (zero for
	// an @every schedule, whose gaps are all equal).
	After time.Time
}

// CronJob is what the proof needs of one CronJob a policy selects: its
// schedule and, unless suspended or unreadable, the longest gap between its
// runs.
type CronJob struct {
	Name     string
	Schedule string
	// TimeZone is spec.timeZone, empty when unset.
	TimeZone  string
	Suspended bool
	// Gap is set when Err is nil.
	Gap ScheduleGap
	// Err says why the schedule cannot be read.
	Err error
}

// describe is `settle ("0 2 * * 1", Asia/Shanghai)`.
func (c CronJob) describe() string {
	s := c.Name + " (" + strconv.Quote(c.Schedule)
	if c.TimeZone != "" {
		s += " " + c.TimeZone
	}
	return s + ")"
}

// CronJobWarnings are the status.proof warnings a policy's CronJobs earn.
// Warnings only: a schedule alone never refuses a rollout (the run that
// would lose data is refused by the proof when it comes).
//
//   - the longest gap between runs reaches the brokers'
//     offsets.retention.minutes (offsetsRetentionMinutes; nil: unknown):
//     the group's offsets expire between two runs (seed 003). Reaching it
//     is enough: the margin left is only the run's own duration, and any
//     late start spends it;
//   - the longest gap reaches recoveryWindow: the planned pause between
//     runs alone uses up the downtime the policy promises to survive, so
//     one failed run breaks the promise;
//   - a suspended CronJob runs nothing: once its group is empty, its
//     offsets expire after offsets.retention.minutes, and unsuspending
//     later restarts without a position;
//   - a schedule that cannot be read cannot be foreseen.
//
// At most maxCronJobWarnings are listed, then one line counts the rest (the
// metric retentionguard_cronjob_schedule_gap_seconds has every CronJob).
func CronJobWarnings(cjs []CronJob, recoveryWindow time.Duration, offsetsRetentionMinutes *int64) []proof.Warning {
	var retention time.Duration
	if offsetsRetentionMinutes != nil && *offsetsRetentionMinutes > 0 {
		retention = time.Duration(*offsetsRetentionMinutes) * time.Minute
	}
	var out []proof.Warning
	add := func(reason, subject string, span, limit time.Duration, detail string) {
		w := proof.Warning{Type: proof.WarningCronJobSchedule, Reason: reason, Subject: subject, Span: span, Limit: limit, Detail: detail}
		w.Message = cronJobMessage(w, offsetsRetentionMinutes)
		out = append(out, w)
	}
	for _, c := range cjs {
		switch {
		case c.Suspended:
			add(proof.WarningReasonSuspended, c.Name, 0, retention, "")
		case c.Err != nil:
			add(proof.WarningReasonScheduleUnreadable, c.describe(), 0, 0, c.Err.Error())
		default:
			if retention > 0 && c.Gap.Gap >= retention {
				add(proof.WarningReasonGapReachesOffsetsRetention, c.describe(), c.Gap.Gap, retention, "")
			}
			if recoveryWindow > 0 && c.Gap.Gap >= recoveryWindow {
				add(proof.WarningReasonGapReachesRecoveryWindow, c.describe(), c.Gap.Gap, recoveryWindow, "")
			}
		}
	}
	if len(out) > maxCronJobWarnings {
		more := len(out) - maxCronJobWarnings
		out = out[:maxCronJobWarnings]
		add(proof.WarningReasonMoreWarnings, strconv.Itoa(more), 0, 0, "")
	}
	return out
}

// cronJobMessage renders a CronJob warning; offsetsRetentionMinutes is
// the setting as read (nil: unknown), named as the brokers spell it.
func cronJobMessage(w proof.Warning, offsetsRetentionMinutes *int64) string {
	retentionPhrase := "offsets.retention.minutes"
	if offsetsRetentionMinutes != nil && *offsetsRetentionMinutes > 0 {
		retentionPhrase = "offsets.retention.minutes=" + strconv.FormatInt(*offsetsRetentionMinutes, 10) +
			" (" + proof.FormatDays(time.Duration(*offsetsRetentionMinutes)*time.Minute) + ")"
	}
	switch w.Reason {
	case proof.WarningReasonSuspended:
		return "CronJob " + w.Subject + " is suspended: once its group is empty, its offsets expire after " +
			retentionPhrase + "; unsuspending later restarts without a position"
	case proof.WarningReasonScheduleUnreadable:
		return "CronJob " + w.Subject + ": the schedule cannot be read, so its gaps cannot be foreseen: " + w.Detail
	case proof.WarningReasonGapReachesOffsetsRetention:
		return "CronJob " + w.Subject + " runs up to " + proof.FormatDays(w.Span) + " apart, not less than " + retentionPhrase +
			": the group's offsets expire between two runs"
	case proof.WarningReasonGapReachesRecoveryWindow:
		return "CronJob " + w.Subject + " runs up to " + proof.FormatDays(w.Span) + " apart, not less than recoveryWindow " +
			proof.FormatDays(w.Limit) + ": the pause between runs uses up the window"
	}
	return "and " + w.Subject + " more CronJob warnings (retentionguard_cronjob_schedule_gap_seconds has every selected CronJob)"
}

// maxCronJobWarnings bounds the CronJob warnings in status.proof.warnings.
const maxCronJobWarnings = 10
