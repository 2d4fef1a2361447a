// Package cursor reads a consumer's business cursor — the next offset per
// partition that its own database says it will process, written in the same
// transaction as the effect (seed 003's consumer_cursor table, seed 002's
// inbox) — for the proof's clause CursorInRange. It sits beside
// internal/kafka: it gathers, internal/proof decides.
//
// A read runs the policy's query (or the default, which reads seed 003's
// table) with the group ID as its one parameter, in a read-only
// transaction with a statement timeout, wrapped so that the server returns
// at most the row limit plus one row. The columns must follow the contract
// (ARCHITECTURE.md, "Business cursors"): partition (an integer),
// next_offset (an integer), optionally topic (text) and updated_at (a
// timestamp); anything else, a NULL, a value that is not an integer, too
// many rows, or any failure to connect, authenticate or query is a
// Problem in the observation (CursorUnreadable: Unknown, fail closed),
// saying which. Rows are never guessed at: the proof checks them against
// the topics (duplicates, unknown partitions, negative offsets).
//
// Connections are pooled per connection string (a Secret version), a few
// connections each, and a pool nobody read through for the idle timeout
// is closed. The connection string and its password never appear in an
// observation, an error or a log line: messages are built from the
// server's error codes and the host, and the password and the whole
// connection string are redacted from anything a driver says.
package cursor

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"

	"github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5"
)

// Drivers, as spec.cursor.sql.driver and check --cursor-driver name them.
const (
	DriverPostgres = "postgres"
	DriverMySQL    = "mysql" // MySQL and MariaDB
)

// The default queries read seed 003's table; MySQL and MariaDB need
// partition quoted (a reserved word there).
const (
	DefaultQueryPostgres = "SELECT partition_id AS partition, last_offset + 1 AS next_offset, updated_at FROM consumer_cursor WHERE group_id = $1"
	DefaultQueryMySQL    = "SELECT partition_id AS `partition`, last_offset + 1 AS next_offset, updated_at FROM consumer_cursor WHERE group_id = ?"
)

// DefaultQuery is the query for a driver when the policy gives none.
func DefaultQuery(driver string) string {
	if driver == DriverMySQL {
		return DefaultQueryMySQL
	}
	return DefaultQueryPostgres
}

// Source is where a business cursor is read from.
type Source struct {
	// Driver is DriverPostgres or DriverMySQL.
	Driver string
	// DSN is the connection string: a postgres URL or key=value string,
	// or a go-sql-driver/mysql DSN (user:password@tcp(host:3306)/db). It
	// is a secret.
	DSN string
	// Query is the cursor query; empty: DefaultQuery(Driver).
	Query string
	// Origin says where the DSN comes from, for messages ("Secret
	// settle-db key dsn"); never the DSN itself.
	Origin string
}

// query is the query to run.
func (s Source) query() string {
	if strings.TrimSpace(s.Query) == "" {
		return DefaultQuery(s.Driver)
	}
	return s.Query
}

// endpoint is a parsed connection string: what to connect with, the
// servers for allowlists and messages, and the secret to redact.
type endpoint struct {
	pg       *pgx.ConnConfig
	my       *mysql.Config
	hosts    []string // host:port, or a unix socket path
	user     string
	database string
	password string
}

// errBadDSN is the one answer to a connection string that does not parse:
// the parser's own message may quote the string, so it is never shown.
func errBadDSN(s Source) error {
	what := "a PostgreSQL connection string (postgres://user:password@host:5432/database, or host=... key=value pairs)"
	if s.Driver == DriverMySQL {
		what = "a MySQL/MariaDB DSN (user:password@tcp(host:3306)/database)"
	}
	return fmt.Errorf("the connection string%s does not parse as %s", origin(s), what)
}

func origin(s Source) string {
	if s.Origin == "" {
		return ""
	}
	return " (" + s.Origin + ")"
}

// parse parses the connection string. Its errors never hold it.
func (s Source) parse() (*endpoint, error) {
	switch s.Driver {
	case DriverPostgres:
		cfg, err := pgx.ParseConfig(s.DSN)
		if err != nil || strings.TrimSpace(s.DSN) == "" {
			return nil, errBadDSN(s)
		}
		e := &endpoint{pg: cfg, user: cfg.User, database: cfg.Database, password: cfg.Password}
		e.hosts = append(e.hosts, pgHost(cfg.Host, cfg.Port))
		for _, fb := range cfg.Fallbacks {
			if h := pgHost(fb.Host, fb.Port); !slices.Contains(e.hosts, h) {
				e.hosts = append(e.hosts, h)
			}
		}
		return e, nil
	case DriverMySQL:
		cfg, err := mysql.ParseDSN(s.DSN)
		if err != nil || strings.TrimSpace(s.DSN) == "" {
			return nil, errBadDSN(s)
		}
		// cfg.Addr is host:port for tcp, the socket path for unix.
		return &endpoint{my: cfg, user: cfg.User, database: cfg.DBName, password: cfg.Passwd, hosts: []string{cfg.Addr}}, nil
	}
	return nil, fmt.Errorf("unknown cursor driver %q: use %s or %s", s.Driver, DriverPostgres, DriverMySQL)
}

func pgHost(host string, port uint16) string {
	if strings.HasPrefix(host, "/") {
		return host // a unix socket directory
	}
	return net.JoinHostPort(host, strconv.Itoa(int(port)))
}

// Validate reports a source that can never be read (an unknown driver, a
// connection string that does not parse, an empty query) without
// connecting. Its errors never hold the connection string.
func (s Source) Validate() error {
	if _, err := s.parse(); err != nil {
		return err
	}
	if strings.TrimSpace(s.query()) == "" {
		return errors.New("the cursor query is empty")
	}
	return nil
}

// Hosts are the database servers the connection string names, as
// host:port (or a unix socket path), for an allowlist.
func (s Source) Hosts() ([]string, error) {
	e, err := s.parse()
	if err != nil {
		return nil, err
	}
	return e.hosts, nil
}

// String describes the source without secrets: "postgres
// guard@127.0.0.1:5432/settlement".
func (s Source) String() string {
	e, err := s.parse()
	if err != nil {
		return s.Driver + " (unparsable connection string" + origin(s) + ")"
	}
	return e.describe(s.Driver)
}

func (e *endpoint) describe(driver string) string {
	who := ""
	if e.user != "" {
		who = e.user + "@"
	}
	return driver + " " + who + strings.Join(e.hosts, ",") + "/" + e.database
}

// keySecret keys the HMAC that identifies a connection string in pool
// keys: random per process, so keys cannot be reversed by guessing.
var keySecret = func() []byte {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		panic(fmt.Sprintf("cursor: reading random key secret: %v", err))
	}
	return b
}()

// poolKey identifies the pool of a connection string: the driver and an
// HMAC of the string (a new Secret version with another string gets
// another pool; the old one closes when idle).
func (s Source) poolKey() string {
	h := hmac.New(sha256.New, keySecret)
	h.Write([]byte(s.Driver))
	h.Write([]byte{0})
	h.Write([]byte(s.DSN))
	return s.Driver + "#" + hex.EncodeToString(h.Sum(nil))
}

// Key identifies what a read of group from s returns: the pool, the query
// and the group, without secrets.
func (s Source) Key(group string) string {
	h := sha256.Sum256([]byte(s.query() + "\x00" + group))
	return s.poolKey() + "#" + hex.EncodeToString(h[:8])
}

// redact removes the connection string and its password from text a
// driver or a server produced. Passwords shorter than three characters are
// left alone: they would cut ordinary words apart.
func redact(s Source, e *endpoint, text string) string {
	if s.DSN != "" {
		text = strings.ReplaceAll(text, s.DSN, "[connection string redacted]")
	}
	if e != nil && len(e.password) >= 3 {
		text = strings.ReplaceAll(text, e.password, "[redacted]")
	}
	return text
}
