// Package resolve turns what a policy or a connection declares (an inline
// spec.kafka, a connectionRef to a KafkaConnection or
// ClusterKafkaConnection, a Strimzi listener, spec.cursor) and the Secrets
// they name into what can be dialed: a kafka.Connection and a business
// cursor reader. It checks the allowlists first (a server or database host
// not allowed is never contacted, and no Secret is read for it) and tells
// a problem a person must fix (*SpecProblem) from a transient error.
//
// The reconcilers in controllers use it, and through their live check the
// admission webhook; it never imports controllers.
package resolve

import (
	"context"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	rgv1 "github.com/retentionguard/retention-guard/api/v1alpha1"
	"github.com/retentionguard/retention-guard/internal/cursor"
	"github.com/retentionguard/retention-guard/internal/kafka"
)

// ConnectionResolver turns a policy's spec.kafka into a kafka.Connection:
// the allowlist, then the TLS and SASL Secrets in the policy's namespace.
// The reconciler uses it, and so can the webhook for a live re-check.
//
// Secret contents are never cached by the manager: Secrets are watched as
// metadata only (resourceVersion), and a Secret's data is read from the
// API server when its resourceVersion changes, then kept here for the
// Secrets policies actually reference.
type ConnectionResolver struct {
	// Metadata reads Secret metadata, normally the manager's cached
	// client (backed by a metadata-only informer).
	Metadata client.Reader
	// Secrets reads Secret data, normally the manager's API reader.
	Secrets client.Reader
	// Allowlist restricts the bootstrap servers of inline connections and
	// KafkaConnections (empty: none allowed). A ClusterKafkaConnection is
	// the platform team's own declaration and is not restricted.
	Allowlist BootstrapAllowlist
	// Objects reads connections and namespaces, normally the manager's
	// cached client (Metadata when nil).
	Objects client.Reader
	// ManagerNamespace holds the Secrets of ClusterKafkaConnections, and
	// is the namespace allowedNamespaces.from Same allows.
	ManagerNamespace string
	// Cursors reads business cursors (spec.cursor); CursorHosts restricts
	// the database hosts their connection strings may name (empty: none
	// allowed; NewCursorHostAllowlist).
	Cursors     *cursor.Reader
	CursorHosts BootstrapAllowlist

	mu      sync.Mutex
	cache   map[types.NamespacedName]cachedSecret
	strimzi *strimziReader
}

type cachedSecret struct {
	resourceVersion string
	data            map[string][]byte
}

// Resolved is what a policy's spec resolves to: the connection to dial and
// the business cursor to read.
type Resolved struct {
	Connection kafka.Connection
	// Cursor reads spec.cursor (nil without one). For a problem a person
	// must fix it is a cursor that reports the problem (cursor.Unreadable),
	// so the proof still shows the group's facts.
	Cursor kafka.CursorReader
	// CursorProblem is that problem, or nil: the policy is Stalled while
	// it lasts.
	CursorProblem *SpecProblem
}

// Resolve is the one entry point for a policy: its connection, the one its
// connectionRef names (when the policy's namespace may use it) or the one
// written inline, then its business cursor. A *SpecProblem error is a
// problem with the connection a person must fix (connection missing,
// namespace not allowed, server not allowed, Secret or key missing,
// unusable PEM), and the cursor is not resolved; a problem with the cursor
// is Resolved.CursorProblem instead. Any other error is transient.
func (r *ConnectionResolver) Resolve(ctx context.Context, p *rgv1.ConsumerRetentionPolicy) (Resolved, error) {
	conn, err := r.connection(ctx, p)
	if err != nil {
		return Resolved{}, err
	}
	res := Resolved{Connection: conn}
	if res.Cursor, res.CursorProblem, err = r.policyCursor(ctx, p); err != nil {
		return Resolved{}, err
	}
	return res, nil
}

// connection returns the policy's connection (see Resolve).
func (r *ConnectionResolver) connection(ctx context.Context, p *rgv1.ConsumerRetentionPolicy) (kafka.Connection, error) {
	if ref := p.Spec.Kafka.ConnectionRef; ref != nil {
		return r.resolveRef(ctx, p.Namespace, *ref)
	}
	return resolveConnection(p, r.Allowlist, r.secretsIn(ctx, p.Namespace))
}

func (r *ConnectionResolver) secretsIn(ctx context.Context, namespace string) secretGetter {
	return func(name string) (map[string][]byte, error) {
		return r.secretData(ctx, types.NamespacedName{Namespace: namespace, Name: name})
	}
}

// ObjectReader is the reader of connections and namespaces: Objects, or
// Metadata when Objects is nil.
func (r *ConnectionResolver) ObjectReader() client.Reader {
	if r.Objects != nil {
		return r.Objects
	}
	return r.Metadata
}

func (r *ConnectionResolver) secretData(ctx context.Context, key types.NamespacedName) (map[string][]byte, error) {
	m := &metav1.PartialObjectMetadata{}
	m.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Secret"))
	if err := r.Metadata.Get(ctx, key, m); err != nil {
		if apierrors.IsNotFound(err) {
			r.Forget(key)
			return nil, errSecretNotFound
		}
		return nil, err
	}
	r.mu.Lock()
	c, ok := r.cache[key]
	r.mu.Unlock()
	if ok && c.resourceVersion == m.ResourceVersion {
		return c.data, nil
	}

	s := &corev1.Secret{}
	if err := r.Secrets.Get(ctx, key, s); err != nil {
		if apierrors.IsNotFound(err) {
			r.Forget(key)
			return nil, errSecretNotFound
		}
		return nil, err
	}
	r.mu.Lock()
	if r.cache == nil {
		r.cache = make(map[types.NamespacedName]cachedSecret)
	}
	r.cache[key] = cachedSecret{resourceVersion: s.ResourceVersion, data: s.Data}
	r.mu.Unlock()
	return s.Data, nil
}

// Forget drops a Secret's data (the Secret is gone, or nothing references
// it any more).
func (r *ConnectionResolver) Forget(key types.NamespacedName) {
	r.mu.Lock()
	delete(r.cache, key)
	r.mu.Unlock()
}
