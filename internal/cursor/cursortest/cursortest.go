// Package cursortest starts real database servers for tests of business
// cursors: PostgreSQL and MariaDB from Debian's packages (installed by
// hack/install-deps.sh), each in its own temporary directory, listening on
// loopback only, run as an unprivileged user when the tests run as root
// (PostgreSQL refuses to run as root; CI runs as root), and stopped and
// removed by Stop. Nothing here is a mock: the reader under test talks to
// the real servers over TCP.
package cursortest

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	_ "github.com/jackc/pgx/v5/stdlib" // database/sql driver "pgx"
)

// Drivers, as spec.cursor.sql.driver names them.
const (
	Postgres = "postgres"
	MySQL    = "mysql"
)

// Admin credentials of the servers the harness starts.
const (
	User     = "guard"
	Password = "s3cret-cursor-pw"
	Database = "settlement"
)

// Server is a running database server.
type Server struct {
	Driver string
	Host   string // 127.0.0.1
	Port   int
	Dir    string

	cmd  *exec.Cmd
	done chan error
	log  string
}

// DSN is a connection string for the given user and password to the test
// database, in the driver's own syntax (a postgres URL, a mysql DSN).
func (s *Server) DSN(user, password string) string {
	switch s.Driver {
	case Postgres:
		u := url.URL{Scheme: "postgres", User: url.UserPassword(user, password),
			Host: net.JoinHostPort(s.Host, strconv.Itoa(s.Port)), Path: "/" + Database, RawQuery: "sslmode=disable"}
		return u.String()
	default:
		cfg := mysql.NewConfig()
		cfg.User, cfg.Passwd, cfg.Net, cfg.Addr, cfg.DBName = user, password, "tcp", net.JoinHostPort(s.Host, strconv.Itoa(s.Port)), Database
		return cfg.FormatDSN()
	}
}

// AdminDSN is the DSN of the harness's own user.
func (s *Server) AdminDSN() string { return s.DSN(User, Password) }

// Addr is host:port.
func (s *Server) Addr() string { return net.JoinHostPort(s.Host, strconv.Itoa(s.Port)) }

// Open opens the test database as the admin user.
func (s *Server) Open() (*sql.DB, error) {
	name := "pgx"
	if s.Driver == MySQL {
		name = "mysql"
	}
	return sql.Open(name, s.AdminDSN())
}

// Exec runs statements as the admin user, in order.
func (s *Server) Exec(ctx context.Context, statements ...string) error {
	db, err := s.Open()
	if err != nil {
		return err
	}
	defer db.Close()
	for _, st := range statements {
		if _, err := db.ExecContext(ctx, st); err != nil {
			return fmt.Errorf("%s: %w", st, err)
		}
	}
	return nil
}

// Param is the driver's placeholder for the one query parameter.
func (s *Server) Param() string {
	if s.Driver == MySQL {
		return "?"
	}
	return "$1"
}

// CursorTable creates seed 003's business cursor table under the given
// name (dropping any table of that name first).
func (s *Server) CursorTable(ctx context.Context, name string) error {
	return s.Exec(ctx, "DROP TABLE IF EXISTS "+name,
		"CREATE TABLE "+name+" (group_id VARCHAR(128), partition_id INT, last_offset BIGINT, last_watermark_ts BIGINT, "+
			"updated_at TIMESTAMP, PRIMARY KEY (group_id, partition_id))")
}

// WriteCursor upserts the business cursor of group on a partition: the
// last offset processed (the next offset is lastOffset + 1).
func (s *Server) WriteCursor(ctx context.Context, table, group string, partition int32, lastOffset int64) error {
	var st string
	if s.Driver == MySQL {
		st = fmt.Sprintf("INSERT INTO %s (group_id, partition_id, last_offset, last_watermark_ts, updated_at) VALUES ('%s', %d, %d, 0, NOW()) "+
			"ON DUPLICATE KEY UPDATE last_offset = VALUES(last_offset), updated_at = VALUES(updated_at)", table, group, partition, lastOffset)
	} else {
		st = fmt.Sprintf("INSERT INTO %s (group_id, partition_id, last_offset, last_watermark_ts, updated_at) VALUES ('%s', %d, %d, 0, NOW()) "+
			"ON CONFLICT (group_id, partition_id) DO UPDATE SET last_offset = EXCLUDED.last_offset, updated_at = EXCLUDED.updated_at",
			table, group, partition, lastOffset)
	}
	return s.Exec(ctx, st)
}

// Start starts a server of the given driver.
func Start(ctx context.Context, driver string) (*Server, error) {
	switch driver {
	case Postgres:
		return StartPostgres(ctx)
	case MySQL:
		return StartMariaDB(ctx)
	}
	return nil, fmt.Errorf("cursortest: unknown driver %q", driver)
}

// StartPostgres initialises a PostgreSQL cluster in a temporary directory
// and starts it on a free loopback port, with password (SCRAM)
// authentication for User and the database Database.
func StartPostgres(ctx context.Context) (_ *Server, err error) {
	bin, err := postgresBin()
	if err != nil {
		return nil, err
	}
	s, cred, err := newServer(Postgres, "retention-guard-postgres-")
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			s.Stop()
		}
	}()
	data := filepath.Join(s.Dir, "data")
	pwfile := filepath.Join(s.Dir, "pw")
	if err := writeOwned(pwfile, Password+"\n", cred); err != nil {
		return nil, err
	}
	if out, err := command(ctx, cred, filepath.Join(bin, "initdb"), "-D", data, "-U", User, "--pwfile", pwfile,
		"--auth=scram-sha-256", "-E", "UTF8", "--locale=C", "--no-sync").CombinedOutput(); err != nil {
		return nil, fmt.Errorf("cursortest: initdb: %v\n%s", err, out)
	}
	s.cmd = command(context.Background(), cred, filepath.Join(bin, "postgres"), "-D", data, "-p", strconv.Itoa(s.Port),
		"-k", s.Dir, "-c", "listen_addresses="+s.Host, "-c", "fsync=off", "-c", "synchronous_commit=off",
		"-c", "full_page_writes=off", "-c", "max_connections=100", "-c", "shared_buffers=32MB")
	if err := s.start(); err != nil {
		return nil, err
	}
	if err := s.waitReady(ctx, func() error {
		u := url.URL{Scheme: "postgres", User: url.UserPassword(User, Password), Host: s.Addr(), Path: "/postgres", RawQuery: "sslmode=disable"}
		db, err := sql.Open("pgx", u.String())
		if err != nil {
			return err
		}
		defer db.Close()
		if err := db.PingContext(ctx); err != nil {
			return err
		}
		_, err = db.ExecContext(ctx, "CREATE DATABASE "+Database)
		return err
	}); err != nil {
		return nil, err
	}
	return s, nil
}

// StartMariaDB installs a MariaDB data directory in a temporary directory
// and starts it on a free loopback port, with User (password Password) and
// the database Database.
func StartMariaDB(ctx context.Context) (_ *Server, err error) {
	server, install := "/usr/sbin/mariadbd", "/usr/bin/mariadb-install-db"
	for _, b := range []string{server, install} {
		if _, err := os.Stat(b); err != nil {
			return nil, fmt.Errorf("cursortest: %s not found: install Debian's mariadb-server (make deps)", b)
		}
	}
	s, cred, err := newServer(MySQL, "retention-guard-mariadb-")
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			s.Stop()
		}
	}()
	data := filepath.Join(s.Dir, "data")
	if out, err := command(ctx, cred, install, "--no-defaults", "--datadir="+data, "--auth-root-authentication-method=normal",
		"--skip-test-db", "--skip-name-resolve").CombinedOutput(); err != nil {
		return nil, fmt.Errorf("cursortest: mariadb-install-db: %v\n%s", err, out)
	}
	socket := filepath.Join(s.Dir, "mysqld.sock")
	s.cmd = command(context.Background(), cred, server, "--no-defaults", "--datadir="+data, "--socket="+socket,
		"--port="+strconv.Itoa(s.Port), "--bind-address="+s.Host, "--pid-file="+filepath.Join(s.Dir, "mysqld.pid"),
		"--skip-name-resolve", "--innodb-buffer-pool-size=16M", "--innodb-log-file-size=8M", "--skip-log-bin",
		"--innodb-flush-log-at-trx-commit=0", "--max-connections=100", "--log-error="+s.log)
	if err := s.start(); err != nil {
		return nil, err
	}
	if err := s.waitReady(ctx, func() error {
		cfg := mysql.NewConfig()
		cfg.User, cfg.Net, cfg.Addr = "root", "unix", socket
		c, err := mysql.NewConnector(cfg)
		if err != nil {
			return err
		}
		db := sql.OpenDB(c)
		defer db.Close()
		for _, st := range []string{
			"CREATE DATABASE IF NOT EXISTS " + Database,
			"CREATE USER IF NOT EXISTS '" + User + "'@'127.0.0.1' IDENTIFIED BY '" + Password + "'",
			"GRANT ALL ON *.* TO '" + User + "'@'127.0.0.1' WITH GRANT OPTION",
		} {
			if _, err := db.ExecContext(ctx, st); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		return nil, err
	}
	return s, nil
}

// Stop stops the server (SIGTERM, then SIGKILL after 20s) and removes its
// directory.
func (s *Server) Stop() {
	if s == nil {
		return
	}
	if s.cmd != nil && s.cmd.Process != nil && s.done != nil {
		_ = s.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-s.done:
		case <-time.After(20 * time.Second):
			_ = s.cmd.Process.Kill()
			<-s.done
		}
	}
	_ = os.RemoveAll(s.Dir)
}

// Tail is the end of the server's log, for a failing test.
func (s *Server) Tail() string {
	b, _ := os.ReadFile(s.log)
	if len(b) > 4000 {
		b = b[len(b)-4000:]
	}
	return string(b)
}

func newServer(driver, prefix string) (*Server, *syscall.Credential, error) {
	dir, err := os.MkdirTemp("", prefix)
	if err != nil {
		return nil, nil, err
	}
	s := &Server{Driver: driver, Host: "127.0.0.1", Dir: dir, log: filepath.Join(dir, "server.log")}
	if s.Port, err = freePort(); err != nil {
		_ = os.RemoveAll(dir)
		return nil, nil, err
	}
	cred, err := unprivileged()
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, nil, err
	}
	if cred != nil {
		if err := os.Chown(dir, int(cred.Uid), int(cred.Gid)); err != nil {
			_ = os.RemoveAll(dir)
			return nil, nil, err
		}
	}
	return s, cred, nil
}

// unprivileged is the credential servers run with: nobody when the tests
// run as root (database servers refuse root), else none (the current user).
func unprivileged() (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	u, err := user.Lookup("nobody")
	if err != nil {
		return nil, fmt.Errorf("cursortest: running as root, and no user nobody to run the database as: %w", err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
}

func command(ctx context.Context, cred *syscall.Credential, name string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred, Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cmd.Dir = os.TempDir()
	// No HOME or locale surprises from the caller's environment.
	cmd.Env = []string{"PATH=/usr/sbin:/usr/bin:/sbin:/bin", "LANG=C", "LC_ALL=C", "HOME=" + os.TempDir()}
	return cmd
}

func writeOwned(path, content string, cred *syscall.Credential) error {
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		return err
	}
	if cred != nil {
		return os.Chown(path, int(cred.Uid), int(cred.Gid))
	}
	return nil
}

func (s *Server) start() error {
	f, err := os.OpenFile(s.log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o666)
	if err != nil {
		return err
	}
	defer f.Close()
	if s.cmd.SysProcAttr.Credential != nil {
		_ = os.Chown(s.log, int(s.cmd.SysProcAttr.Credential.Uid), int(s.cmd.SysProcAttr.Credential.Gid))
	}
	s.cmd.Stdout, s.cmd.Stderr = f, f
	if err := s.cmd.Start(); err != nil {
		return fmt.Errorf("cursortest: starting %s: %w", s.cmd.Path, err)
	}
	s.done = make(chan error, 1)
	go func() { s.done <- s.cmd.Wait() }()
	return nil
}

// waitReady retries ready until it succeeds, the server exits, or 60s pass.
func (s *Server) waitReady(ctx context.Context, ready func() error) error {
	deadline := time.Now().Add(60 * time.Second)
	var last error
	for {
		select {
		case err := <-s.done:
			s.done <- err
			return fmt.Errorf("cursortest: %s exited (%v); log:\n%s", s.Driver, err, s.Tail())
		default:
		}
		if last = ready(); last == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("cursortest: %s not ready after 60s: %v; log:\n%s", s.Driver, last, s.Tail())
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// postgresBin finds Debian's PostgreSQL server binaries, the newest
// version under /usr/lib/postgresql (not whatever "postgres" is first on
// PATH).
func postgresBin() (string, error) {
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(dirs, func(i, j int) bool {
		vi, _ := strconv.Atoi(filepath.Base(filepath.Dir(dirs[i])))
		vj, _ := strconv.Atoi(filepath.Base(filepath.Dir(dirs[j])))
		return vi > vj
	})
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, "initdb")); err == nil {
			return d, nil
		}
	}
	return "", errors.New("cursortest: no PostgreSQL server under /usr/lib/postgresql/*/bin: install Debian's postgresql (make deps)")
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// Quote quotes an identifier for the driver ("partition" is a reserved
// word in MySQL and MariaDB).
func Quote(driver, ident string) string {
	if driver == MySQL {
		return "`" + strings.ReplaceAll(ident, "`", "``") + "`"
	}
	return `"` + strings.ReplaceAll(ident, `"`, `""`) + `"`
}

// Lazy is a server a test binary starts on first use and its TestMain
// stops: packages where only some tests need a database pay for it only
// when those run.
type Lazy struct {
	driver string
	once   sync.Once
	srv    *Server
	err    error
}

// LazyPostgres is a PostgreSQL started by the first Get.
func LazyPostgres() *Lazy { return &Lazy{driver: Postgres} }

// Get starts the server the first time (within a minute), or fails the
// test with why it could not.
func (l *Lazy) Get(t testing.TB) *Server {
	t.Helper()
	l.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		l.srv, l.err = Start(ctx, l.driver)
	})
	if l.err != nil {
		t.Fatal(l.err)
	}
	return l.srv
}

// Stop stops the server if Get started it.
func (l *Lazy) Stop() { l.srv.Stop() }
