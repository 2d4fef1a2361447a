package kafka

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/retentionguard/retention-guard/internal/proof"
)

// Kafka API names as they appear in Failure.API (the proof's contract).
const (
	apiMetadata              = proof.APIMetadata
	apiDescribeConfigs       = proof.APIDescribeConfigs
	apiListOffsets           = proof.APIListOffsets
	apiOffsetFetch           = proof.APIOffsetFetch
	apiDescribeGroups        = proof.APIDescribeGroups
	apiConsumerGroupDescribe = proof.APIConsumerGroupDescribe
	apiStreamsGroupDescribe  = proof.APIStreamsGroupDescribe
	apiShareGroupDescribe    = proof.APIShareGroupDescribe
	apiDescribeShareOffsets  = proof.APIDescribeShareGroupOffsets
	apiFetch                 = proof.APIFetch
)

// reasonForError maps an error from a request (transport, TLS, SASL, or a
// Kafka error code) to one of the KafkaReachable reasons.
func reasonForError(err error) string {
	var ce *credentialError
	if errors.As(err, &ce) {
		return proof.ReasonAuthenticationFailed
	}
	var ke *kerr.Error
	if errors.As(err, &ke) {
		switch ke {
		case kerr.SaslAuthenticationFailed, kerr.UnsupportedSaslMechanism, kerr.IllegalSaslState:
			return proof.ReasonAuthenticationFailed
		case kerr.TopicAuthorizationFailed, kerr.GroupAuthorizationFailed,
			kerr.ClusterAuthorizationFailed, kerr.TransactionalIDAuthorizationFailed,
			kerr.DelegationTokenAuthorizationFailed:
			return proof.ReasonAuthorizationFailed
		case kerr.UnknownTopicOrPartition, kerr.UnknownTopicID:
			return proof.ReasonTopicNotFound
		}
	}
	return proof.ReasonBrokerUnreachable
}

// asKerr finds the Kafka error code in err.
func asKerr(err error) (*kerr.Error, bool) {
	var ke *kerr.Error
	ok := errors.As(err, &ke)
	return ke, ok
}

// reasonForConfigError maps a Connection that cannot be used (bad PEM,
// unknown SASL mechanism, closed observer) to a reason.
func reasonForConfigError(conn Connection, err error) string {
	if conn.SASL != nil {
		if _, merr := conn.SASL.mechanism(); merr != nil {
			return proof.ReasonAuthenticationFailed
		}
	}
	return proof.ReasonBrokerUnreachable
}

// isAuthorization reports whether err is an ACL denial.
func isAuthorization(err error) bool {
	return reasonForError(err) == proof.ReasonAuthorizationFailed
}

// describeError turns err into a short, credential-free explanation.
// Callers still pass the result through Connection.redact.
func describeError(err error) string {
	var (
		ke *kerr.Error
		ce *credentialError
	)
	switch {
	case err == nil:
		return ""
	case errors.As(err, &ce):
		return ce.Error()
	case errors.Is(err, context.DeadlineExceeded):
		return "no answer before the deadline (context deadline exceeded)"
	case errors.Is(err, context.Canceled):
		return "the observation was canceled"
	case errors.Is(err, kgo.ErrClientClosed):
		return "the observer's client was closed"
	case errors.As(err, &ke):
		// Brokers may add detail after the code (SASL errors do); keep
		// the code name and description, which carry no secrets.
		return fmt.Sprintf("Kafka answered %s: %s", ke.Message, ke.Description)
	}
	if msg, ok := tlsProblem(err); ok {
		return "TLS handshake failed: " + msg
	}
	var opErr *net.OpError
	if errors.As(err, &opErr) && opErr.Op == "dial" {
		return "cannot connect: " + err.Error()
	}
	return err.Error()
}

// tlsProblem recognizes certificate and handshake errors.
func tlsProblem(err error) (string, bool) {
	var (
		unknownCA  x509.UnknownAuthorityError
		hostname   x509.HostnameError
		invalid    x509.CertificateInvalidError
		verify     *tls.CertificateVerificationError
		recordHdr  tls.RecordHeaderError
		alertError tls.AlertError
	)
	switch {
	case errors.As(err, &unknownCA):
		return "the broker's certificate is signed by an authority the CA does not trust", true
	case errors.As(err, &hostname):
		return "the broker's certificate does not name the host dialed: " + hostname.Error(), true
	case errors.As(err, &invalid):
		return "the broker's certificate is invalid: " + invalid.Error(), true
	case errors.As(err, &verify):
		return "the broker's certificate failed verification: " + verify.Err.Error(), true
	case errors.As(err, &recordHdr):
		return "the broker did not answer with TLS (is the listener plaintext?)", true
	case errors.As(err, &alertError):
		return "the broker refused the handshake: " + alertError.Error(), true
	}
	if s := err.Error(); strings.Contains(s, "tls:") {
		return s, true
	}
	return "", false
}

// failure is a proof.Failure plus the group it concerns, so one pass over
// many targets hands each target only what is its business.
type failure struct {
	proof.Failure
	group     string // "" when not group-specific
	global    bool   // concerns every target (connection, brokers)
	discovery bool   // concerns only the discovery of groups
}

func (f failure) appliesTo(t Target, topics map[string]bool) bool {
	switch {
	case f.discovery:
		return false
	case f.global:
		return true
	case f.group != "" && f.group != t.Group:
		return false
	case f.Topic != "":
		return topics[f.Topic]
	default:
		return f.group == t.Group
	}
}

// requestCoordinated sends a request served by group coordinators
// (OffsetFetch, DescribeGroups, ConsumerGroupDescribe, StreamsGroupDescribe)
// through the client's sharder, and sends each shard that could not reach
// a broker once more. The client finds a group's coordinator by asking any
// broker, without retrying: with one broker down — a rolling restart — a
// lookup that picked it fails the group's shard although its coordinator is
// up. Asked again, the lookup likely goes elsewhere; a shard whose
// coordinator is the down broker keeps failing, as it should.
func (p *pass) requestCoordinated(ctx context.Context, req kmsg.Request) []kgo.ResponseShard {
	shards := p.cl.RequestSharded(ctx, req)
	// Any broker is picked at random: as many tries as there are brokers
	// (at most 5) make a lookup that keeps picking the down one unlikely.
	for try := 1; try < min(len(p.brokers), 5); try++ {
		var retry []kmsg.Request
		out := shards[:0]
		for _, sh := range shards {
			if sh.Err != nil && unreachable(sh.Err) {
				retry = append(retry, sh.Req)
				continue
			}
			out = append(out, sh)
		}
		if len(retry) == 0 || ctx.Err() != nil {
			break
		}
		for _, r := range retry {
			out = append(out, p.cl.RequestSharded(ctx, r)...)
		}
		shards = out
	}
	return shards
}

// foldCoordinated sends req by requestCoordinated and hands each answer to
// fold; a shard that failed fails each group it asked (groups) by failed.
func foldCoordinated[Req kmsg.Request, Resp kmsg.Response](ctx context.Context, p *pass, req Req,
	groups func(Req) []string, failed func(group string, err error), fold func(Resp)) {
	for _, shard := range p.requestCoordinated(ctx, req) {
		if shard.Err != nil {
			for _, g := range groups(shard.Req.(Req)) {
				failed(g, shard.Err)
			}
			continue
		}
		fold(shard.Resp.(Resp))
	}
}

// groupIDs names the groups of a request.
func groupIDs[G any](groups []G, id func(G) string) []string {
	out := make([]string, 0, len(groups))
	for _, g := range groups {
		out = append(out, id(g))
	}
	return out
}

// unreachable reports whether err is a broker that could not be reached:
// not a Kafka error code, nor the pass's own deadline.
func unreachable(err error) bool {
	if err == nil || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return false
	}
	_, isKafka := asKerr(err)
	return !isKafka
}
