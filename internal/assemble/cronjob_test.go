package assemble

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"k8s.io/utils/ptr"
)

// statusWarningLength is the bound controllers puts on one status.proof
// warning (maxWarningLength): the CronJob warnings fit it whole.
const statusWarningLength = 256

func TestCronJobWarnings(t *testing.T) {
	const day = 24 * time.Hour
	weekly := CronJob{Name: "settle", Schedule: "0 2 * * 1", Gap: ScheduleGap{Gap: 7 * day}}
	daily := CronJob{Name: "settle", Schedule: "0 2 * * *", Gap: ScheduleGap{Gap: day}}
	monthly := CronJob{Name: "report", Schedule: "0 2 1 * *", TimeZone: "Asia/Shanghai", Gap: ScheduleGap{Gap: 31 * day}}
	cases := []struct {
		name      string
		cjs       []CronJob
		window    time.Duration
		retention *int64
		want      []string
	}{
		{name: "daily within 7d offsets retention and a 72h window", cjs: []CronJob{daily}, window: 72 * time.Hour, retention: ptr.To[int64](10080)},
		{name: "weekly against 7d offsets retention (seed 003)", cjs: []CronJob{weekly}, window: 240 * time.Hour, retention: ptr.To[int64](10080),
			want: []string{`CronJob settle ("0 2 * * 1") runs up to 7d apart, not less than offsets.retention.minutes=10080 (7d): the group's offsets expire between two runs`}},
		{name: "weekly within 30d offsets retention but not a 72h window", cjs: []CronJob{weekly}, window: 72 * time.Hour, retention: ptr.To[int64](43200),
			want: []string{`CronJob settle ("0 2 * * 1") runs up to 7d apart, not less than recoveryWindow 3d: the pause between runs uses up the window`}},
		{name: "monthly in a time zone: both", cjs: []CronJob{monthly}, window: 240 * time.Hour, retention: ptr.To[int64](10080),
			want: []string{
				`CronJob report ("0 2 1 * *" Asia/Shanghai) runs up to 31d apart, not less than offsets.retention.minutes=10080 (7d): the group's offsets expire between two runs`,
				`CronJob report ("0 2 1 * *" Asia/Shanghai) runs up to 31d apart, not less than recoveryWindow 10d: the pause between runs uses up the window`,
			}},
		{name: "offsets retention unknown, gap within the window: nothing", cjs: []CronJob{weekly}, window: 240 * time.Hour},
		{name: "suspended", cjs: []CronJob{{Name: "settle", Schedule: "0 2 * * *", Suspended: true}}, window: 240 * time.Hour, retention: ptr.To[int64](10080),
			want: []string{"CronJob settle is suspended: once its group is empty, its offsets expire after offsets.retention.minutes=10080 (7d); unsuspending later restarts without a position"}},
		{name: "suspended, retention unknown", cjs: []CronJob{{Name: "settle", Suspended: true, Gap: ScheduleGap{Gap: 7 * day}}}, window: 240 * time.Hour,
			want: []string{"CronJob settle is suspended: once its group is empty, its offsets expire after offsets.retention.minutes; unsuspending later restarts without a position"}},
		{name: "unreadable schedule", cjs: []CronJob{{Name: "settle", Schedule: "0 2 30 2 *", Err: errString("the schedule never activates")}}, window: 240 * time.Hour,
			want: []string{`CronJob settle ("0 2 30 2 *"): the schedule cannot be read, so its gaps cannot be foreseen: the schedule never activates`}},
	}
	many := make([]CronJob, 12)
	for i := range many {
		many[i] = CronJob{Name: "run-" + strconv.Itoa(i), Suspended: true}
	}
	manyWant := make([]string, 0, 11)
	for i := range 10 {
		manyWant = append(manyWant, "CronJob run-"+strconv.Itoa(i)+" is suspended: once its group is empty, its offsets expire after "+
			"offsets.retention.minutes=10080 (7d); unsuspending later restarts without a position")
	}
	manyWant = append(manyWant, "and 2 more CronJob warnings (retentionguard_cronjob_schedule_gap_seconds has every selected CronJob)")
	cases = append(cases, struct {
		name      string
		cjs       []CronJob
		window    time.Duration
		retention *int64
		want      []string
	}{name: "at most 10, then a count", cjs: many, window: 240 * time.Hour, retention: ptr.To[int64](10080), want: manyWant})
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, w := range CronJobWarnings(tc.cjs, tc.window, tc.retention) {
				got = append(got, w.Message)
			}
			if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Errorf("warnings:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
			for _, w := range got {
				if len(w) > statusWarningLength {
					t.Errorf("warning of %d bytes, over %d: %s", len(w), statusWarningLength, w)
				}
			}
		})
	}
}

type errString string

func (e errString) Error() string { return string(e) }
