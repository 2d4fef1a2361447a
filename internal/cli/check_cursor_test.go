package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/retentionguard/retention-guard/internal/cursor/cursortest"
	"github.com/retentionguard/retention-guard/internal/kafka/kafkatest"
)

// A real PostgreSQL and a real MariaDB, started once for the package.
var databases = map[string]*cursortest.Server{}

func TestMain(m *testing.M) { os.Exit(runMain(m)) }

func runMain(m *testing.M) int {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for _, d := range []string{cursortest.Postgres, cursortest.MySQL} {
		s, err := cursortest.Start(ctx, d)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		defer s.Stop()
		databases[d] = s
	}
	return m.Run()
}

// cursorResult is what the tests read of check's JSON about the cursor.
type cursorResult struct {
	checkResult
	Cursor *struct {
		ResumeFrom    string `json:"resumeFrom"`
		ReplayRecords int64  `json:"replayRecords"`
		AheadRecords  int64  `json:"aheadRecords"`
	} `json:"cursor"`
	CursorPartitions []struct {
		Partition     int32 `json:"partition"`
		Cursor        int64 `json:"cursor"`
		Committed     int64 `json:"committed"`
		ReplayRecords int64 `json:"replayRecords"`
		AheadRecords  int64 `json:"aheadRecords"`
	} `json:"partitions"`
}

// cursorCheck runs check --output json with the cursor flags.
func cursorCheck(t *testing.T, db *cursortest.Server, dsn string, args ...string) (int, cursorResult, string, string) {
	t.Helper()
	file := filepath.Join(t.TempDir(), "dsn")
	if err := os.WriteFile(file, []byte(dsn+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := run(t, append([]string{"check", "--output", "json", "--cursor-driver", db.Driver, "--cursor-dsn-file", file}, args...)...)
	var res cursorResult
	if err := json.Unmarshal([]byte(stdout), &res); err != nil {
		t.Fatalf("output is not JSON (%v):\n%s\nstderr: %s", err, stdout, stderr)
	}
	return code, res, stdout, stderr
}

// seed003Topic is settle-task after the 8-day outage: 2 partitions of 600
// records, log start 150, and a group whose offsets expired (none left).
func seed003Topic(t *testing.T) *kafkatest.Cluster {
	c := kafkatest.NewCluster(t)
	c.CreateTopic(t, "settle-task", 2, map[string]string{"retention.ms": fmt.Sprint((30 * 24 * time.Hour).Milliseconds())})
	for p := range int32(2) {
		c.ProduceTo(t, "settle-task", p, 600)
		c.DeleteRecords(t, "settle-task", p, 150)
	}
	return c
}

func cursorTable(t *testing.T, db *cursortest.Server, table, group string, next map[int32]int64) {
	t.Helper()
	ctx := context.Background()
	if err := db.CursorTable(ctx, table); err != nil {
		t.Fatal(err)
	}
	for p, n := range next {
		if err := db.WriteCursor(ctx, table, group, p, n-1); err != nil {
			t.Fatal(err)
		}
	}
}

// Seed 003 to its end with check, on a real PostgreSQL and a real
// MariaDB: the group's offsets expired; the business cursor inside the log
// proves a restart from it (exit 0); a cursor below the log start is
// CursorExpired with the exact count (exit 1); an auto-committing group
// ahead of its cursor is GroupAheadOfCursor with the count (exit 1); a
// replay is reported, not refused (exit 0).
func TestCheckBusinessCursor(t *testing.T) {
	for _, driver := range []string{cursortest.Postgres, cursortest.MySQL} {
		t.Run(driver, func(t *testing.T) {
			db := databases[driver]
			c := seed003Topic(t)
			base := []string{"--bootstrap-server", c.Addrs[0], "--topic", "settle-task", "--recovery-window", "240h"}

			cursorTable(t, db, "consumer_cursor", "ledger-settle-consumer", map[int32]int64{0: 200, 1: 600})
			code, res, _, stderr := cursorCheck(t, db, db.AdminDSN(), append(base, "--group", "ledger-settle-consumer", "--resume-from", "cursor")...)
			if code != ExitProven || res.Verdict != "Proven" {
				t.Fatalf("resume from an in-range cursor: exit %d verdict %s reasons %v\n%s", code, res.Verdict, reasons(res.checkResult), stderr)
			}
			if res.Cursor == nil || res.Cursor.ResumeFrom != "Cursor" || res.Cursor.ReplayRecords != 0 || res.Cursor.AheadRecords != 0 {
				t.Errorf("cursor %+v", res.Cursor)
			}
			for _, p := range res.CursorPartitions {
				if want := map[int32]int64{0: 200, 1: 600}[p.Partition]; p.Cursor != want || p.Committed != -1 {
					t.Errorf("partition %d: cursor %d committed %d, want cursor %d and no committed offset (-1)", p.Partition, p.Cursor, p.Committed, want)
				}
			}

			cursorTable(t, db, "consumer_cursor", "ledger-settle-consumer", map[int32]int64{0: 200, 1: 140})
			code, res, _, _ = cursorCheck(t, db, db.AdminDSN(), append(base, "--group", "ledger-settle-consumer", "--resume-from", "cursor")...)
			if code != ExitViolated || !hasReason(res.checkResult, "CursorExpired") || res.ExpiredRecords != 10 {
				t.Fatalf("cursor below log start: exit %d reasons %v expired %d, want 1 CursorExpired 10", code, reasons(res.checkResult), res.ExpiredRecords)
			}

			// The auto-committing twin: its group committed 250 on
			// partition 1, the business processed up to 159.
			c.CommitAsMember(t, "settle-auto", "settle-task", map[int32]int64{0: 600, 1: 250})
			cursorTable(t, db, "consumer_cursor", "settle-auto", map[int32]int64{0: 600, 1: 160})
			code, res, _, _ = cursorCheck(t, db, db.AdminDSN(), append(base, "--group", "settle-auto")...)
			if code != ExitViolated || !hasReason(res.checkResult, "GroupAheadOfCursor") || res.Cursor == nil || res.Cursor.AheadRecords != 90 {
				t.Fatalf("group ahead of its cursor: exit %d reasons %v cursor %+v, want 1 GroupAheadOfCursor, 90 ahead", code, reasons(res.checkResult), res.Cursor)
			}

			// Seed 002: the group is 30 records behind the cursor (the
			// inbox committed, the offset commit did not): a replay. (A
			// 72h window: the brokers keep the group's offsets 7 days.)
			base = replace(base, "240h", "72h")
			c.RunConsumer(t, "reporting", "settle-task", map[int32]int64{0: 570, 1: 600})
			cursorTable(t, db, "consumer_cursor", "reporting", map[int32]int64{0: 600, 1: 600})
			code, res, _, _ = cursorCheck(t, db, db.AdminDSN(), append(base, "--group", "reporting")...)
			if code != ExitProven || res.Cursor == nil || res.Cursor.ReplayRecords != 30 || res.Cursor.ResumeFrom != "GroupOffsets" {
				t.Fatalf("replay: exit %d reasons %v cursor %+v, want 0 with 30 records to replay", code, reasons(res.checkResult), res.Cursor)
			}

			// The table shows cursor, committed and the gap.
			file := filepath.Join(t.TempDir(), "dsn")
			if err := os.WriteFile(file, []byte(db.AdminDSN()), 0o600); err != nil {
				t.Fatal(err)
			}
			_, table, _ := run(t, append([]string{"check", "--group", "reporting", "--cursor-driver", driver, "--cursor-dsn-file", file}, base...)...)
			for _, want := range []string{"CURSOR", "COMMITTED", "GAP", "replay 30", "business cursor: 2 rows read from " + driver} {
				if !strings.Contains(table, want) {
					t.Errorf("table lacks %q:\n%s", want, table)
				}
			}
		})
	}
}

// Every bad input is Unknown (exit 2), CursorUnreadable, with a message
// naming the problem, and no secret anywhere in the output.
func TestCheckBusinessCursorBadInput(t *testing.T) {
	for _, driver := range []string{cursortest.Postgres, cursortest.MySQL} {
		t.Run(driver, func(t *testing.T) {
			db := databases[driver]
			c := seed003Topic(t)
			ctx := context.Background()
			cursorTable(t, db, "consumer_cursor", "settle", map[int32]int64{0: 200, 1: 600})
			part, param := cursortest.Quote(driver, "partition"), db.Param()
			if err := db.Exec(ctx, "DROP TABLE IF EXISTS odd_rows",
				"CREATE TABLE odd_rows (p INT, n BIGINT)",
				"INSERT INTO odd_rows VALUES (0, 200), (0, 201), (7, 300), (1, -5), (1, NULL)"); err != nil {
				t.Fatal(err)
			}
			base := []string{"--bootstrap-server", c.Addrs[0], "--topic", "settle-task", "--recovery-window", "240h", "--group", "settle", "--resume-from", "cursor"}
			rows := func(where string) string {
				return "SELECT p AS " + part + ", n AS next_offset FROM odd_rows WHERE " + where + " AND 'settle' = " + param
			}
			cases := []struct {
				name, dsn, query, want string
			}{
				{"wrong password", db.DSN(cursortest.User, "Wr0ng-pa55"), "", "authentication failed"},
				{"query error", "", "SELECT partition_id AS " + part + ", last_offset + 1 AS next_offset FROM missing_table WHERE group_id = " + param, "the cursor query failed"},
				{"NULL", "", rows("n IS NULL"), "column next_offset is NULL"},
				{"duplicate partitions", "", rows("p = 0"), "several rows name settle-task[0]"},
				{"a partition the topic does not have", "", rows("p = 7"), "settle-task[7], which the topic does not have (2 partitions, 0-1)"},
				{"a negative offset", "", rows("n < 0"), "has next_offset -5"},
			}
			for _, tc := range cases {
				t.Run(tc.name, func(t *testing.T) {
					dsn := db.AdminDSN()
					if tc.dsn != "" {
						dsn = tc.dsn
					}
					args := base
					if tc.query != "" {
						args = append(args, "--cursor-query", tc.query)
					}
					code, res, stdout, stderr := cursorCheck(t, db, dsn, args...)
					if code != ExitUnknown || res.Verdict != "Unknown" || !hasReason(res.checkResult, "CursorUnreadable") {
						t.Fatalf("exit %d verdict %s reasons %v, want 2 Unknown CursorUnreadable", code, res.Verdict, reasons(res.checkResult))
					}
					if !strings.Contains(stdout, tc.want) {
						t.Errorf("output does not say %q:\n%s", tc.want, stdout)
					}
					for _, secret := range []string{cursortest.Password, "Wr0ng-pa55", dsn} {
						if strings.Contains(stdout+stderr, secret) {
							t.Errorf("a secret (%q) appears in the output", secret)
						}
					}
				})
			}
		})
	}
}
