package resolve

import (
	"context"
	"errors"
	"fmt"
	"strings"

	rgv1 "github.com/retentionguard/retention-guard/api/v1alpha1"
	"github.com/retentionguard/retention-guard/internal/cursor"
	"github.com/retentionguard/retention-guard/internal/kafka"
)

// ReasonDatabaseHostNotAllowed: the connection string of spec.cursor names
// a database host the manager does not allow (--allowed-cursor-hosts). No
// connection is opened; the policy is Stalled and its cursor unreadable.
const ReasonDatabaseHostNotAllowed = "DatabaseHostNotAllowed"

// resolveCursor builds the business cursor reader of a policy: the Secret
// key holding the connection string, the connection string parsed, its
// hosts checked against the allowlist (a host not allowed is never
// contacted). A *SpecProblem is what a person must fix; the caller then
// observes Kafka all the same, with a cursor that reports the problem
// (cursor.Unreadable), so the proof still shows the group's facts. Any
// other error is transient (reading the Secret failed).
func resolveCursor(p *rgv1.ConsumerRetentionPolicy, reader *cursor.Reader, allow BootstrapAllowlist, get secretGetter) (kafka.CursorReader, error) {
	spec := p.Spec.Cursor
	if spec == nil {
		return nil, nil
	}
	ref := spec.SQL.SecretRef
	data, err := readSecret(get, ref.Name, "spec.cursor.sql.secretRef", "the policy's namespace")
	if err != nil {
		return nil, err
	}
	dsn := strings.TrimSpace(string(data[ref.Key]))
	if dsn == "" {
		return nil, missingKey(ref.Name, ref.Key, "spec.cursor.sql.secretRef.key names the connection string of the cursor database")
	}
	src := cursor.Source{
		Driver: string(spec.SQL.Driver),
		DSN:    dsn,
		Query:  spec.SQL.Query,
		Origin: fmt.Sprintf("Secret %q key %q", ref.Name, ref.Key),
	}
	hosts, err := src.Hosts()
	if err != nil {
		// Source errors describe the problem, never the string.
		return nil, &SpecProblem{Reason: ReasonInvalidConnection, Message: err.Error()}
	}
	var denied []string
	for _, h := range hosts {
		if !allow.Allows(h) {
			denied = append(denied, h)
		}
	}
	if len(denied) > 0 {
		return nil, &SpecProblem{
			Reason:  ReasonDatabaseHostNotAllowed,
			Message: allow.notAllowed("the cursor database host", denied),
		}
	}
	if reader == nil {
		return nil, errors.New("the manager has no cursor reader")
	}
	return cursor.Query{Reader: reader, Source: src, Group: p.Spec.GroupID}, nil
}

// policyCursor resolves the policy's cursor: the reader, or, for a
// problem a person must fix, a cursor that reports it, with the problem
// (the policy is Stalled while it lasts). An error is transient.
func (r *ConnectionResolver) policyCursor(ctx context.Context, p *rgv1.ConsumerRetentionPolicy) (kafka.CursorReader, *SpecProblem, error) {
	cr, err := resolveCursor(p, r.Cursors, r.CursorHosts, r.secretsIn(ctx, p.Namespace))
	var problem *SpecProblem
	switch {
	case errors.As(err, &problem):
		return cursor.Unreadable(problem.Message), problem, nil
	case err != nil:
		return nil, nil, err
	}
	return cr, nil, nil
}
