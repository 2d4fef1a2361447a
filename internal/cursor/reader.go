package cursor

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/retentionguard/retention-guard/internal/proof"
)

// Defaults of a Reader.
const (
	DefaultStatementTimeout = 5 * time.Second
	DefaultConnectTimeout   = 5 * time.Second
	// DefaultRowLimit bounds the rows one read returns: one per partition
	// of the policy's topics, so far more than any consumer group needs.
	DefaultRowLimit    = 10000
	DefaultIdleTimeout = 10 * time.Minute
	// maxConnsPerPool bounds the connections a pool opens: reads are one
	// per policy per interval.
	maxConnsPerPool = 2
)

// Option configures a Reader.
type Option func(*options)

type options struct {
	statementTimeout time.Duration
	connectTimeout   time.Duration
	rowLimit         int
	idleTimeout      time.Duration
	logger           logr.Logger
	now              func() time.Time
}

// WithStatementTimeout bounds the query on the server (statement_timeout,
// max_statement_time or max_execution_time) and the read as a whole
// (with the connect timeout).
func WithStatementTimeout(d time.Duration) Option {
	return func(o *options) {
		if d > 0 {
			o.statementTimeout = d
		}
	}
}

// WithConnectTimeout bounds connecting (and authenticating) to the server.
func WithConnectTimeout(d time.Duration) Option {
	return func(o *options) {
		if d > 0 {
			o.connectTimeout = d
		}
	}
}

// WithRowLimit sets how many rows a read accepts; more is a problem.
func WithRowLimit(n int) Option {
	return func(o *options) {
		if n > 0 {
			o.rowLimit = n
		}
	}
}

// WithIdleTimeout closes a pool no read used for d (and its connections
// idle that long). Default 10 minutes.
func WithIdleTimeout(d time.Duration) Option {
	return func(o *options) {
		if d > 0 {
			o.idleTimeout = d
		}
	}
}

// WithLogger logs pools opened and closed at V(1). Nothing logged holds a
// connection string or password.
func WithLogger(l logr.Logger) Option { return func(o *options) { o.logger = l } }

// Reader reads business cursors. It pools connections per connection
// string and is safe for concurrent use. Call Close when done.
type Reader struct {
	opts options

	mu     sync.Mutex
	pools  map[string]*pool
	closed bool
	stop   chan struct{}
	reaper sync.WaitGroup
}

type pool struct {
	db       *sql.DB
	desc     string // Source.String(): no secrets
	refs     int
	lastUsed time.Time
	retired  bool
	// flavor is the statement timeout syntax a MySQL-protocol server took
	// (mariadb or mysql), learnt on the first read.
	flavor string
}

// NewReader returns a Reader.
func NewReader(opts ...Option) *Reader {
	r := &Reader{
		opts: options{
			statementTimeout: DefaultStatementTimeout,
			connectTimeout:   DefaultConnectTimeout,
			rowLimit:         DefaultRowLimit,
			idleTimeout:      DefaultIdleTimeout,
			logger:           logr.Discard(),
			now:              time.Now,
		},
		pools: make(map[string]*pool),
		stop:  make(chan struct{}),
	}
	for _, o := range opts {
		o(&r.opts)
	}
	r.reaper.Add(1)
	go r.reapIdle()
	return r
}

// Close closes every pool; a read still running finishes first. Reads
// after Close report a problem.
func (r *Reader) Close() {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return
	}
	r.closed = true
	close(r.stop)
	var closeNow []*pool
	for k, p := range r.pools {
		delete(r.pools, k)
		if p.retired = true; p.refs == 0 {
			closeNow = append(closeNow, p)
		}
	}
	r.mu.Unlock()
	r.reaper.Wait()
	for _, p := range closeNow {
		_ = p.db.Close()
	}
}

// Pools is how many connection pools are open (tests, metrics).
func (r *Reader) Pools() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.pools)
}

func (r *Reader) reapIdle() {
	defer r.reaper.Done()
	t := time.NewTicker(max(r.opts.idleTimeout/4, 10*time.Millisecond))
	defer t.Stop()
	for {
		select {
		case <-r.stop:
			return
		case <-t.C:
		}
		r.mu.Lock()
		now := r.opts.now()
		var closeNow []*pool
		for k, p := range r.pools {
			if p.refs == 0 && now.Sub(p.lastUsed) >= r.opts.idleTimeout {
				delete(r.pools, k)
				p.retired = true
				closeNow = append(closeNow, p)
			}
		}
		r.mu.Unlock()
		for _, p := range closeNow {
			r.opts.logger.V(1).Info("closing idle cursor database pool", "database", p.desc)
			_ = p.db.Close()
		}
	}
}

func (r *Reader) acquire(s Source, e *endpoint) (*pool, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return nil, errors.New("the cursor reader is closed")
	}
	key := s.poolKey()
	if p := r.pools[key]; p != nil {
		p.refs++
		return p, nil
	}
	var db *sql.DB
	switch {
	case e.pg != nil:
		cfg := e.pg.Copy()
		cfg.ConnectTimeout = r.opts.connectTimeout
		db = stdlib.OpenDB(*cfg)
	case e.my != nil:
		cfg := e.my.Clone()
		cfg.ParseTime = true // updated_at as time.Time
		cfg.Timeout = r.opts.connectTimeout
		cfg.ReadTimeout = r.opts.statementTimeout + r.opts.connectTimeout
		cfg.WriteTimeout = r.opts.connectTimeout
		if cfg.Params == nil {
			cfg.Params = map[string]string{}
		}
		c, err := mysql.NewConnector(cfg)
		if err != nil {
			return nil, errBadDSN(s)
		}
		db = sql.OpenDB(c)
	default:
		return nil, errBadDSN(s)
	}
	db.SetMaxOpenConns(maxConnsPerPool)
	db.SetMaxIdleConns(1)
	db.SetConnMaxIdleTime(r.opts.idleTimeout)
	db.SetConnMaxLifetime(30 * time.Minute)
	p := &pool{db: db, desc: e.describe(s.Driver), refs: 1}
	r.pools[key] = p
	r.opts.logger.V(1).Info("opened cursor database pool", "database", p.desc)
	return p, nil
}

func (r *Reader) release(p *pool) {
	r.mu.Lock()
	p.refs--
	p.lastUsed = r.opts.now()
	closeNow := p.retired && p.refs == 0
	r.mu.Unlock()
	if closeNow {
		_ = p.db.Close()
	}
}

// Read reads the business cursor of group from s. It never returns an
// error: whatever went wrong is the observation's Problem, which never
// holds the connection string or its password.
func (r *Reader) Read(ctx context.Context, s Source, group string) proof.CursorObservation {
	e, err := s.parse()
	if err != nil {
		return proof.CursorObservation{Problem: err.Error()}
	}
	obs, err := r.read(ctx, s, e, group)
	if err != nil {
		return proof.CursorObservation{Problem: redact(s, e, err.Error())}
	}
	return obs
}

func (r *Reader) read(ctx context.Context, s Source, e *endpoint, group string) (proof.CursorObservation, error) {
	p, err := r.acquire(s, e)
	if err != nil {
		return proof.CursorObservation{}, err
	}
	defer r.release(p)

	ctx, cancel := context.WithTimeout(ctx, r.opts.connectTimeout+r.opts.statementTimeout)
	defer cancel()
	where := e.describe(s.Driver)

	tx, err := p.db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return proof.CursorObservation{}, connectError(ctx, where, r.opts, err)
	}
	defer func() { _ = tx.Rollback() }()
	if err := r.setStatementTimeout(ctx, tx, s.Driver, p); err != nil {
		return proof.CursorObservation{}, queryError(ctx, where, r.opts, "setting the statement timeout", err)
	}
	rows, err := tx.QueryContext(ctx, limited(s.query(), r.opts.rowLimit), group)
	if err != nil {
		return proof.CursorObservation{}, queryError(ctx, where, r.opts, "the cursor query failed", err)
	}
	defer rows.Close()
	obs, err := scanRows(rows, r.opts.rowLimit)
	var ce contractError
	switch {
	case errors.As(err, &ce):
		return proof.CursorObservation{}, err
	case err != nil:
		return proof.CursorObservation{}, queryError(ctx, where, r.opts, "reading the cursor rows", err)
	}
	return obs, nil
}

// limited wraps the query so the server returns at most limit+1 rows (one
// more tells "too many"). The newlines keep a trailing comment in the
// query from swallowing the closing parenthesis; a trailing semicolon is
// dropped. Wrapped, the query must be a SELECT: anything else fails to
// parse (and the transaction is read-only besides).
func limited(query string, limit int) string {
	q := strings.TrimRight(strings.TrimSpace(query), "; \t\r\n")
	return "SELECT * FROM (\n" + q + "\n) AS cursor_rows LIMIT " + strconv.Itoa(limit+1)
}

// setStatementTimeout bounds the query on the server, inside the
// transaction: PostgreSQL's statement_timeout (SET LOCAL: this transaction
// only); MariaDB's max_statement_time (seconds), else MySQL's
// max_execution_time (milliseconds, SELECTs).
func (r *Reader) setStatementTimeout(ctx context.Context, tx *sql.Tx, driver string, p *pool) error {
	ms := r.opts.statementTimeout.Milliseconds()
	if driver == DriverPostgres {
		_, err := tx.ExecContext(ctx, "SET LOCAL statement_timeout = "+strconv.FormatInt(ms, 10))
		return err
	}
	mariadb := "SET SESSION max_statement_time = " + strconv.FormatFloat(float64(ms)/1000, 'f', 3, 64)
	mysqlTimeout := "SET SESSION max_execution_time = " + strconv.FormatInt(ms, 10)
	r.mu.Lock()
	flavor := p.flavor
	r.mu.Unlock()
	switch flavor {
	case "mariadb":
		_, err := tx.ExecContext(ctx, mariadb)
		return err
	case "mysql":
		_, err := tx.ExecContext(ctx, mysqlTimeout)
		return err
	}
	if _, err := tx.ExecContext(ctx, mariadb); err == nil {
		flavor = "mariadb"
	} else if _, err2 := tx.ExecContext(ctx, mysqlTimeout); err2 == nil {
		flavor = "mysql"
	} else {
		return fmt.Errorf("%w (and %v)", err, err2)
	}
	r.mu.Lock()
	p.flavor = flavor
	r.mu.Unlock()
	return nil
}

// Query is one policy's cursor: a Reader, a Source and the group. It is
// what the Kafka observer reads between the committed offsets and the log
// end (kafka.CursorReader).
type Query struct {
	Reader *Reader
	Source Source
	Group  string
}

// Key identifies the read without secrets.
func (q Query) Key() string { return q.Source.Key(q.Group) }

// ReadCursor reads the cursor.
func (q Query) ReadCursor(ctx context.Context) proof.CursorObservation {
	return q.Reader.Read(ctx, q.Source, q.Group)
}

// Unreadable is a cursor that cannot be read at all (a Secret that does
// not exist, a host the manager does not allow): every read reports the
// problem.
type Unreadable string

// Key identifies the problem.
func (u Unreadable) Key() string { return "unreadable#" + string(u) }

// ReadCursor reports the problem.
func (u Unreadable) ReadCursor(context.Context) proof.CursorObservation {
	return proof.CursorObservation{Problem: string(u)}
}
