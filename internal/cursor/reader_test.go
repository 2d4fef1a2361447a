package cursor

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"

	"github.com/retentionguard/retention-guard/internal/cursor/cursortest"
)

// servers are a real PostgreSQL and a real MariaDB (Debian's packages),
// started once for the package on loopback.
var servers = map[string]*cursortest.Server{}

func TestMain(m *testing.M) { os.Exit(run(m)) }

func run(m *testing.M) int {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for _, d := range []string{DriverPostgres, DriverMySQL} {
		s, err := cursortest.Start(ctx, d)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		defer s.Stop()
		servers[d] = s
	}
	return m.Run()
}

const group = "ledger-settle-consumer"

// eachDriver runs f against both databases.
func eachDriver(t *testing.T, f func(t *testing.T, s *cursortest.Server)) {
	for _, d := range []string{DriverPostgres, DriverMySQL} {
		t.Run(d, func(t *testing.T) { f(t, servers[d]) })
	}
}

// seedTable creates seed 003's table (under a name of its own per test)
// holding the group's cursor on partitions 0..n-1 (last offset 100+p),
// and another group's rows.
func seedTable(t *testing.T, s *cursortest.Server, name string, n int) {
	t.Helper()
	ctx := context.Background()
	if err := s.CursorTable(ctx, name); err != nil {
		t.Fatal(err)
	}
	for p := range n {
		if err := s.WriteCursor(ctx, name, group, int32(p), int64(100+p)); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.WriteCursor(ctx, name, "another-group", 0, 7); err != nil {
		t.Fatal(err)
	}
}

func source(s *cursortest.Server, query string) Source {
	return Source{Driver: s.Driver, DSN: s.AdminDSN(), Query: query, Origin: "Secret settle-db key dsn"}
}

// assertNoSecret fails when text holds the connection string or a
// password.
func assertNoSecret(t *testing.T, text string, secrets ...string) {
	t.Helper()
	for _, s := range append(secrets, cursortest.Password) {
		if s != "" && strings.Contains(text, s) {
			t.Errorf("a secret (%q) appears in %q", s, text)
		}
	}
}

// Seed 003's table through the default query: one row per partition,
// next_offset = last_offset + 1, updated_at read, no topic column, the
// other group's rows left out.
func TestReadDefaultQuery(t *testing.T) {
	eachDriver(t, func(t *testing.T, s *cursortest.Server) {
		seedTable(t, s, "consumer_cursor", 3)
		r := NewReader()
		defer r.Close()
		obs := r.Read(context.Background(), source(s, ""), group)
		if !obs.Read || obs.Problem != "" || obs.HasTopic {
			t.Fatalf("observation %+v", obs)
		}
		if len(obs.Rows) != 3 {
			t.Fatalf("rows %+v, want 3", obs.Rows)
		}
		seen := map[int64]int64{}
		for _, row := range obs.Rows {
			seen[row.Partition] = row.NextOffset
			if row.UpdatedAt.IsZero() || row.UpdatedAt.After(time.Now().Add(time.Hour)) {
				t.Errorf("updated_at %v", row.UpdatedAt)
			}
		}
		for p := int64(0); p < 3; p++ {
			if seen[p] != 101+p {
				t.Errorf("partition %d: next offset %d, want last_offset + 1 = %d", p, seen[p], 101+p)
			}
		}
		if r.Pools() != 1 {
			t.Errorf("%d pools after one read", r.Pools())
		}
	})
}

// A query with a topic column, ending in a semicolon or a comment.
func TestReadTopicColumn(t *testing.T) {
	eachDriver(t, func(t *testing.T, s *cursortest.Server) {
		seedTable(t, s, "cursor_topics", 2)
		q := "SELECT 'settle-task' AS topic, partition_id AS " + cursortest.Quote(s.Driver, "partition") +
			", last_offset + 1 AS next_offset FROM cursor_topics WHERE group_id = " + s.Param()
		r := NewReader()
		defer r.Close()
		for _, end := range []string{";", " -- one row per partition"} {
			obs := r.Read(context.Background(), source(s, q+end), group)
			if !obs.Read || !obs.HasTopic || len(obs.Rows) != 2 || obs.Rows[0].Topic != "settle-task" {
				t.Fatalf("query ending %q: observation %+v", end, obs)
			}
		}
	})
}

// Every bad input is a Problem saying which, never rows, and never the
// connection string or a password.
func TestReadBadInput(t *testing.T) {
	eachDriver(t, func(t *testing.T, s *cursortest.Server) {
		ctx := context.Background()
		seedTable(t, s, "bad_input", 3)
		part := cursortest.Quote(s.Driver, "partition")
		param := s.Param()
		must(t, s.Exec(ctx, "DROP TABLE IF EXISTS odd_cursor",
			"CREATE TABLE odd_cursor (group_id VARCHAR(128), partition_id INT, last_offset BIGINT, label VARCHAR(20), frac DECIMAL(10,2), updated_at TIMESTAMP NULL)",
			"INSERT INTO odd_cursor VALUES ('"+group+"', 0, NULL, 'x', 1.50, NULL)"))
		unreachable := fmt.Sprintf("127.0.0.1:%d", closedPort(t))
		wrongPassword := s.DSN(cursortest.User, "Wr0ng-pa55word")
		var unreachableDSN string
		if s.Driver == DriverPostgres {
			unreachableDSN = "postgres://guard:" + cursortest.Password + "@" + unreachable + "/settlement?sslmode=disable"
		} else {
			unreachableDSN = "guard:" + cursortest.Password + "@tcp(" + unreachable + ")/settlement"
		}
		sleep := "SELECT partition_id AS " + part + ", last_offset + 1 AS next_offset FROM bad_input, (SELECT pg_sleep(3)) AS z WHERE group_id = $1"
		if s.Driver == DriverMySQL {
			sleep = "SELECT partition_id AS " + part + ", last_offset + 1 AS next_offset FROM bad_input WHERE group_id = ? AND SLEEP(3) = 0"
		}
		cases := []struct {
			name  string
			dsn   string
			query string
			want  string
		}{
			{"unreachable database", unreachableDSN, "", "cannot connect to " + s.Driver + " guard@" + unreachable + "/settlement"},
			{"wrong password", wrongPassword, "", "authentication failed at " + s.Driver + " guard@" + s.Addr() + "/settlement"},
			{"a connection string that does not parse", "://garbage:" + cursortest.Password + "@@@", "", "does not parse as"},
			{"query error: no such table", "", "SELECT partition_id AS " + part + ", last_offset + 1 AS next_offset FROM no_such_table WHERE group_id = " + param, "the cursor query failed"},
			{"not a SELECT", "", "DELETE FROM bad_input WHERE group_id = " + param, "the cursor query failed"},
			{"no parameter", "", "SELECT partition_id AS " + part + ", last_offset + 1 AS next_offset FROM bad_input", "one parameter"},
			{"last_offset for next_offset", "", "SELECT partition_id AS " + part + ", last_offset FROM bad_input WHERE group_id = " + param, `"last_offset", which is not in the column contract`},
			{"missing column next_offset", "", "SELECT partition_id AS " + part + " FROM bad_input WHERE group_id = " + param, "the query returns no column next_offset"},
			{"missing column partition", "", "SELECT last_offset + 1 AS next_offset FROM bad_input WHERE group_id = " + param, "the query returns no column partition"},
			{"a column outside the contract", "", "SELECT partition_id AS " + part + ", last_offset + 1 AS next_offset, last_watermark_ts FROM bad_input WHERE group_id = " + param, `"last_watermark_ts", which is not in the column contract`},
			{"mistyped column next_offset", "", "SELECT partition_id AS " + part + ", label AS next_offset FROM odd_cursor WHERE group_id = " + param, "column next_offset is"},
			{"mistyped column updated_at", "", "SELECT partition_id AS " + part + ", partition_id AS next_offset, label AS updated_at FROM odd_cursor WHERE group_id = " + param, "column updated_at is"},
			{"a fraction", "", "SELECT partition_id AS " + part + ", frac AS next_offset FROM odd_cursor WHERE group_id = " + param, `column next_offset is "1.50" in row 1 (partition 0): not an integer`},
			{"NULL next_offset", "", "SELECT partition_id AS " + part + ", last_offset AS next_offset FROM odd_cursor WHERE group_id = " + param, "column next_offset is NULL in row 1 (partition 0)"},
			{"NULL updated_at", "", "SELECT partition_id AS " + part + ", partition_id AS next_offset, updated_at FROM odd_cursor WHERE group_id = " + param, "column updated_at is NULL in row 1 (partition 0)"},
			{"too many rows", "", "SELECT partition_id AS " + part + ", last_offset + 1 AS next_offset FROM bad_input WHERE group_id = " + param, "more than 2 rows (the row limit"},
			{"statement timeout", "", sleep, "ran longer than the statement timeout 1s"},
		}
		if s.Driver == DriverPostgres {
			must(t, s.Exec(ctx, "DROP SEQUENCE IF EXISTS cursor_side_effect", "CREATE SEQUENCE cursor_side_effect"))
			cases = append(cases, struct{ name, dsn, query, want string }{"a write in a read-only transaction", "",
				"SELECT partition_id AS partition, nextval('cursor_side_effect') AS next_offset FROM bad_input WHERE group_id = $1",
				"read-only transaction"})
		}
		var logs bytes.Buffer
		var logMu sync.Mutex
		log := funcr.New(func(prefix, args string) {
			logMu.Lock()
			logs.WriteString(prefix + args + "\n")
			logMu.Unlock()
		}, funcr.Options{Verbosity: 2})
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				r := NewReader(WithStatementTimeout(time.Second), WithConnectTimeout(2*time.Second), WithRowLimit(2), WithLogger(log))
				defer r.Close()
				src := source(s, c.query)
				if c.dsn != "" {
					src.DSN = c.dsn
				}
				obs := r.Read(ctx, src, group)
				if obs.Read || len(obs.Rows) != 0 {
					t.Fatalf("read %+v, want a problem", obs)
				}
				if !strings.Contains(obs.Problem, c.want) {
					t.Errorf("problem %q\nwant it to contain %q", obs.Problem, c.want)
				}
				assertNoSecret(t, obs.Problem, src.DSN, "Wr0ng-pa55word")
				t.Logf("%s: %s", c.name, obs.Problem)
			})
		}
		logMu.Lock()
		assertNoSecret(t, logs.String(), s.AdminDSN(), wrongPassword, unreachableDSN, "Wr0ng-pa55word")
		logMu.Unlock()
		// The read-only transaction wrote nothing.
		r := NewReader()
		defer r.Close()
		if obs := r.Read(ctx, source(s, "SELECT partition_id AS "+part+", last_offset + 1 AS next_offset FROM bad_input WHERE group_id = "+param), group); len(obs.Rows) != 3 {
			t.Errorf("after the bad queries the table holds %+v, want its 3 rows", obs)
		}
	})
}

// Pools: one per connection string (a new Secret version with a new
// string gets its own), closed once unused for the idle timeout.
func TestPoolsPerConnectionStringClosedWhenIdle(t *testing.T) {
	eachDriver(t, func(t *testing.T, s *cursortest.Server) {
		seedTable(t, s, "consumer_cursor", 1)
		r := NewReader(WithIdleTimeout(200 * time.Millisecond))
		defer r.Close()
		ctx := context.Background()
		for range 3 {
			if obs := r.Read(ctx, source(s, ""), group); !obs.Read {
				t.Fatal(obs.Problem)
			}
		}
		if r.Pools() != 1 {
			t.Fatalf("%d pools for one connection string", r.Pools())
		}
		rotated := source(s, "")
		rotated.DSN = s.DSN(cursortest.User, cursortest.Password) + map[string]string{DriverPostgres: "&application_name=rotated", DriverMySQL: "?timeout=3s"}[s.Driver]
		if obs := r.Read(ctx, rotated, group); !obs.Read {
			t.Fatal(obs.Problem)
		}
		if r.Pools() != 2 {
			t.Fatalf("%d pools for two connection strings", r.Pools())
		}
		deadline := time.Now().Add(30 * time.Second)
		for r.Pools() > 0 {
			if time.Now().After(deadline) {
				t.Fatalf("%d pools still open long after the idle timeout", r.Pools())
			}
			time.Sleep(50 * time.Millisecond)
		}
	})
}

// Source describes itself without secrets and names its hosts for the
// manager's allowlist.
func TestSourceHostsAndString(t *testing.T) {
	cases := []struct {
		src   Source
		hosts []string
		str   string
	}{
		{Source{Driver: DriverPostgres, DSN: "postgres://guard:pw-secret@db.settle.svc:6432/settlement"}, []string{"db.settle.svc:6432"}, "postgres guard@db.settle.svc:6432/settlement"},
		{Source{Driver: DriverPostgres, DSN: "host=db-0,db-1 port=5432 user=guard password=pw-secret dbname=settlement"}, []string{"db-0:5432", "db-1:5432"}, "postgres guard@db-0:5432,db-1:5432/settlement"},
		{Source{Driver: DriverMySQL, DSN: "guard:pw-secret@tcp(mariadb.settle.svc:3306)/settlement"}, []string{"mariadb.settle.svc:3306"}, "mysql guard@mariadb.settle.svc:3306/settlement"},
	}
	for _, c := range cases {
		hosts, err := c.src.Hosts()
		if err != nil || strings.Join(hosts, ",") != strings.Join(c.hosts, ",") {
			t.Errorf("%s: hosts %v (%v), want %v", c.str, hosts, err, c.hosts)
		}
		if got := c.src.String(); got != c.str {
			t.Errorf("String() = %q, want %q", got, c.str)
		}
		assertNoSecret(t, c.src.String()+c.src.Key("g"), "pw-secret")
	}
	for _, bad := range []Source{
		{Driver: "oracle", DSN: "x"},
		{Driver: DriverPostgres, DSN: ""},
		{Driver: DriverMySQL, DSN: "guard:pw-secret@tcp(db:3306"},
	} {
		if err := bad.Validate(); err == nil {
			t.Errorf("%+v validated", bad)
		} else {
			assertNoSecret(t, err.Error(), "pw-secret")
		}
	}
}

// Unreadable reports its problem on every read.
func TestUnreadable(t *testing.T) {
	u := Unreadable(`Secret "settle-db" named by spec.cursor.sql.secretRef does not exist`)
	if got := u.ReadCursor(context.Background()); got.Read || got.Problem != string(u) || got.Rows != nil {
		t.Errorf("ReadCursor = %+v", got)
	}
}

func closedPort(t *testing.T) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	return port
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
