package cursor

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"

	"github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/retentionguard/retention-guard/internal/proof"
)

// Server error codes the messages name.
const (
	pgInvalidPassword     = "28P01"
	pgInvalidAuthSpec     = "28000"
	pgInvalidCatalog      = "3D000"
	pgQueryCanceled       = "57014"
	myAccessDenied        = 1045
	myDBAccessDenied      = 1044
	myUnknownDatabase     = 1049
	mariaStatementTimeout = 1969
	myExecutionTimeout    = 3024
)

// connectError describes a failure to connect, authenticate or begin the
// read-only transaction at where (a description without secrets).
func connectError(ctx context.Context, where string, o options, err error) error {
	var pg *pgconn.PgError
	var my *mysql.MySQLError
	switch {
	case errors.As(err, &pg) && pg.Code == pgInvalidPassword:
		return fmt.Errorf("authentication failed at %s (%s): check the user and password of the connection string", where, pg.Code)
	case errors.As(err, &pg) && pg.Code == pgInvalidAuthSpec:
		return fmt.Errorf("the server at %s refused the connection (%s: %s): check pg_hba.conf and the user", where, pg.Code, pg.Message)
	case errors.As(err, &pg) && pg.Code == pgInvalidCatalog:
		return fmt.Errorf("the database of %s does not exist (%s)", where, pg.Code)
	case errors.As(err, &my) && my.Number == myAccessDenied:
		return fmt.Errorf("authentication failed at %s (error %d: access denied): check the user and password of the connection string", where, my.Number)
	case errors.As(err, &my) && (my.Number == myUnknownDatabase || my.Number == myDBAccessDenied):
		return fmt.Errorf("cannot use the database of %s (error %d: %s)", where, my.Number, my.Message)
	case ctx.Err() != nil || isTimeout(err):
		return fmt.Errorf("cannot connect to %s within %s: the server did not answer", where, proof.FormatDuration(o.connectTimeout+o.statementTimeout))
	}
	var op *net.OpError
	if errors.As(err, &op) {
		return fmt.Errorf("cannot connect to %s: %v", where, op)
	}
	return fmt.Errorf("cannot connect to %s: %v", where, err)
}

// queryError describes a failure of the query (or of setting its timeout).
func queryError(ctx context.Context, where string, o options, what string, err error) error {
	var pg *pgconn.PgError
	var my *mysql.MySQLError
	timeout := fmt.Errorf("the cursor query ran longer than the statement timeout %s at %s", proof.FormatDuration(o.statementTimeout), where)
	switch {
	case errors.As(err, &pg) && pg.Code == pgQueryCanceled:
		return timeout
	case errors.As(err, &pg):
		return fmt.Errorf("%s at %s: %s (SQLSTATE %s)%s", what, where, pg.Message, pg.Code, paramHint(pg.Message))
	case errors.As(err, &my) && (my.Number == mariaStatementTimeout || my.Number == myExecutionTimeout):
		return timeout
	case errors.As(err, &my):
		return fmt.Errorf("%s at %s: %s (error %d)%s", what, where, my.Message, my.Number, paramHint(my.Message))
	case ctx.Err() != nil || isTimeout(err):
		return timeout
	}
	return fmt.Errorf("%s at %s: %v%s", what, where, err, paramHint(err.Error()))
}

// paramHint explains the one-parameter rule when a driver complains about
// arguments or placeholders.
func paramHint(msg string) string {
	m := strings.ToLower(msg)
	if strings.Contains(m, "argument") || strings.Contains(m, "parameter") || strings.Contains(m, "placeholder") {
		return ": the query takes the group ID as its one parameter ($1 for postgres, ? for mysql)"
	}
	return ""
}

func isTimeout(err error) bool {
	if errors.Is(err, context.DeadlineExceeded) {
		return true
	}
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}
