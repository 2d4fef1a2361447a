package product

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/retentionguard/retention-guard/internal/kafka/apachekafka"
)

// `scan` on the newest line judges every group on the broker, without any
// policy: the batch consumer that committed at the end of its run (a
// classic group, Empty: seed 003 between runs), seed 000's fan-out
// consumer whose committed offset retention passed (DeleteRecords moves
// the log start as retention does: Violated, 45 records), and Flink jobs
// (simple groups) that committed just now inside large batches (Proven).
// scan reads __consumer_offsets by default (issue 32), as the manager
// does: the batch group's Empty time is exact, and it is Proven. Told not
// to, one scan cannot know since when it is Empty, so its offsets may
// expire any moment: Unknown, EmptyGroupOffsetsMayExpireBeforeWindow,
// never Proven; the Flink jobs' commits are then dated by the record
// before them, read from batches the broker sends only when asked first.
// Exit 1: a group is Violated. On both lines as deployed (issue 32): on
// 3.x without the read, no record dates the Flink jobs' commits either
// (message.timestamp.after.max.ms is unbounded there).
func TestScanJudgesEveryGroupOnTheBroker(t *testing.T) {
	eachLine(t, scanEveryGroup, apachekafka.AsDeployed())
}

func scanEveryGroup(t *testing.T, b *apachekafka.Broker) {
	b.CreateTopic(t, "settle-task", 2, nil)
	b.CreateTopic(t, "outbox", 1, nil)
	b.CreateTopic(t, "clicks", 3, nil)
	var recs []*kgo.Record
	recs = append(recs, records("settle-task", 0, 20)...)
	recs = append(recs, records("settle-task", 1, 20)...)
	recs = append(recs, records("outbox", 0, 100)...)
	for p := range int32(3) {
		recs = append(recs, records("clicks", p, 1400)...)
	}
	produceBatched(t, b, recs...)
	b.CommitAsMember(t, "settle-batch", "settle-task", map[int32]int64{0: 20, 1: 20})
	b.CommitAsMember(t, "fanout", "outbox", map[int32]int64{0: 30})
	b.DeleteRecords(t, "outbox", 0, 75)
	b.CommitOffsets(t, "flink-sessions", "clicks", map[int32]int64{0: 41, 1: 41, 2: 41})
	b.CommitOffsets(t, "flink-totals", "clicks", map[int32]int64{0: 1400, 1: 1400, 2: 1400})

	type want struct {
		verdict, protocolType, reason string
		expired                       int64
		commitTimes                   string
	}
	for _, c := range []struct {
		name  string
		flags []string
		want  map[string]want
	}{
		{
			name: "by default",
			want: map[string]want{
				"settle-batch":   {"Proven", "consumer", "", 0, "exact"},
				"fanout":         {"Violated", "consumer", "CommittedOffsetExpired", 45, "exact"},
				"flink-sessions": {"Proven", "", "", 0, "exact"},
				"flink-totals":   {"Proven", "", "", 0, "exact"},
			},
		},
		{
			name:  "without __consumer_offsets",
			flags: []string{"--read-offsets-topic=false"},
			want: map[string]want{
				"settle-batch":   {"Unknown", "consumer", "EmptyGroupOffsetsMayExpireBeforeWindow", 0, "bounded"},
				"fanout":         {"Violated", "consumer", "CommittedOffsetExpired", 45, "bounded"},
				"flink-sessions": {"Proven", "", "", 0, "bounded"},
				"flink-totals":   {"Proven", "", "", 0, "bounded"},
			},
		},
	} {
		if c.flags != nil && !b.Dist.AtLeast(4, 0) {
			c.want["flink-sessions"] = want{"Unknown", "", "OffsetsMayExpireBeforeWindow", 0, "bounded"}
			c.want["flink-totals"] = want{"Unknown", "", "OffsetsMayExpireBeforeWindow", 0, "bounded"}
		}
		t.Run(c.name, func(t *testing.T) {
			code, stdout, stderr := run(append([]string{"scan", "--bootstrap-server", b.Addrs()[0], "--recovery-window", "72h", "--output", "json"},
				c.flags...)...)
			var res struct {
				Groups []struct {
					Group          string   `json:"group"`
					State          string   `json:"state"`
					Protocol       string   `json:"protocol"`
					ProtocolType   string   `json:"protocolType"`
					Topics         []string `json:"topics"`
					Verdict        string   `json:"verdict"`
					Reasons        []string `json:"reasons"`
					ExpiredRecords int64    `json:"expiredRecords"`
					CommitTimes    string   `json:"commitTimes"`
				} `json:"groups"`
				Failures []string `json:"failures"`
			}
			if err := json.Unmarshal([]byte(stdout), &res); err != nil {
				t.Fatalf("scan printed no JSON (%v), exit %d:\n%s\nstderr: %s", err, code, stdout, stderr)
			}
			t.Logf("scan exit %d:\n%s", code, stdout)
			if code != 1 || len(res.Failures) > 0 {
				t.Errorf("exit %d, failures %q; want 1 (a group is Violated), none", code, res.Failures)
			}
			seen := 0
			for _, g := range res.Groups {
				w, ok := c.want[g.Group]
				if !ok {
					continue
				}
				seen++
				if g.Verdict != w.verdict || g.ProtocolType != w.protocolType || g.ExpiredRecords != w.expired ||
					(w.reason != "" && !slices.Contains(g.Reasons, w.reason)) || g.CommitTimes != w.commitTimes {
					t.Errorf("%s: %s (protocol type %q, reasons %v, expired %d, times %s), want %s (%q, %s, %d, %s)",
						g.Group, g.Verdict, g.ProtocolType, g.Reasons, g.ExpiredRecords, g.CommitTimes,
						w.verdict, w.protocolType, w.reason, w.expired, w.commitTimes)
				}
			}
			if seen != len(c.want) {
				t.Errorf("scan judged %d of the %d groups", seen, len(c.want))
			}
		})
	}
}
