package resolve

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"

	rgv1 "github.com/retentionguard/retention-guard/api/v1alpha1"
	"github.com/retentionguard/retention-guard/internal/kafka"
)

// Reasons of spec.kafka.connectionRef.
const (
	// ReasonConnectionNotFound: the ClusterKafkaConnection or
	// KafkaConnection a policy names does not exist (or was deleted: the
	// policy is Unknown, never Proven, until it is back).
	ReasonConnectionNotFound = "ConnectionNotFound"
	// ReasonNamespaceNotAllowed: the ClusterKafkaConnection does not allow
	// the policy's namespace (spec.allowedNamespaces).
	ReasonNamespaceNotAllowed = "NamespaceNotAllowed"
)

// resolveRef resolves a policy's connectionRef from namespace.
func (r *ConnectionResolver) resolveRef(ctx context.Context, namespace string, ref rgv1.ConnectionReference) (kafka.Connection, error) {
	switch ref.Kind {
	case rgv1.KindClusterKafkaConnection:
		ckc := &rgv1.ClusterKafkaConnection{}
		if err := r.ObjectReader().Get(ctx, client.ObjectKey{Name: ref.Name}, ckc); err != nil {
			if apierrors.IsNotFound(err) {
				return kafka.Connection{}, &SpecProblem{Reason: ReasonConnectionNotFound,
					Message: fmt.Sprintf("ClusterKafkaConnection %q named by spec.kafka.connectionRef does not exist (kubectl get ckc)", ref.Name)}
			}
			return kafka.Connection{}, err
		}
		if err := r.namespaceAllowed(ctx, ckc, namespace); err != nil {
			return kafka.Connection{}, err
		}
		conn, _, err := r.ResolveClusterConnection(ctx, ckc)
		return conn, err
	case rgv1.KindKafkaConnection:
		kc := &rgv1.KafkaConnection{}
		if err := r.ObjectReader().Get(ctx, client.ObjectKey{Namespace: namespace, Name: ref.Name}, kc); err != nil {
			if apierrors.IsNotFound(err) {
				return kafka.Connection{}, &SpecProblem{Reason: ReasonConnectionNotFound,
					Message: fmt.Sprintf("KafkaConnection %q named by spec.kafka.connectionRef does not exist in namespace %s", ref.Name, namespace)}
			}
			return kafka.Connection{}, err
		}
		conn, _, err := r.ResolveNamespacedConnection(ctx, kc)
		return conn, err
	}
	return kafka.Connection{}, &SpecProblem{Reason: ReasonInvalidConnection,
		Message: fmt.Sprintf("spec.kafka.connectionRef.kind %q: use ClusterKafkaConnection or KafkaConnection", ref.Kind)}
}

// namespaceAllowed checks a ClusterKafkaConnection's allowedNamespaces
// against the policy's namespace.
func (r *ConnectionResolver) namespaceAllowed(ctx context.Context, ckc *rgv1.ClusterKafkaConnection, namespace string) error {
	an := ckc.Spec.AllowedNamespaces
	switch an.From {
	case rgv1.NamespacesFromAll:
		return nil
	case rgv1.NamespacesFromSelector:
		sel, err := metav1.LabelSelectorAsSelector(an.Selector)
		if err != nil {
			return &SpecProblem{Reason: ReasonNamespaceNotAllowed,
				Message: fmt.Sprintf("ClusterKafkaConnection %q has an invalid allowedNamespaces.selector (%v): no namespace may use it", ckc.Name, err)}
		}
		ns := &metav1.PartialObjectMetadata{}
		ns.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Namespace"))
		if err := r.ObjectReader().Get(ctx, client.ObjectKey{Name: namespace}, ns); err != nil {
			return fmt.Errorf("reading namespace %s: %w", namespace, err)
		}
		if sel.Matches(labels.Set(ns.Labels)) {
			return nil
		}
		return &SpecProblem{Reason: ReasonNamespaceNotAllowed,
			Message: fmt.Sprintf("ClusterKafkaConnection %q allows only namespaces whose labels match %s; namespace %s does not: ask the platform team to label it, or to allow it",
				ckc.Name, sel.String(), namespace)}
	default: // Same, the default
		if r.ManagerNamespace != "" && namespace == r.ManagerNamespace {
			return nil
		}
		return &SpecProblem{Reason: ReasonNamespaceNotAllowed,
			Message: fmt.Sprintf("ClusterKafkaConnection %q allows only policies in the manager's namespace (allowedNamespaces.from: Same), not in %s: ask the platform team to allow it (from: Selector or All)",
				ckc.Name, namespace)}
	}
}

// ResolveClusterConnection builds a ClusterKafkaConnection's connection,
// its Secrets in the manager's namespace, and returns the servers in use.
func (r *ConnectionResolver) ResolveClusterConnection(ctx context.Context, ckc *rgv1.ClusterKafkaConnection) (kafka.Connection, []string, error) {
	src := connectionSource{field: "spec", secretsIn: "the manager's namespace " + r.ManagerNamespace, ambient: true}
	if len(ConnectionSecretRefs(ckc.Spec.TLS, ckc.Spec.SASL)) > 0 && r.ManagerNamespace == "" {
		return kafka.Connection{}, nil, &SpecProblem{Reason: ReasonInvalidConnection,
			Message: "the manager does not know its namespace (--namespace, $POD_NAMESPACE), where a ClusterKafkaConnection's Secrets live"}
	}
	return r.resolveSpec(ctx, &ckc.Spec.KafkaConnectionSpec, src, "", r.secretsIn(ctx, r.ManagerNamespace))
}

// ResolveNamespacedConnection builds a KafkaConnection's connection, its
// Secrets in its own namespace, and returns the servers in use.
func (r *ConnectionResolver) ResolveNamespacedConnection(ctx context.Context, kc *rgv1.KafkaConnection) (kafka.Connection, []string, error) {
	src := connectionSource{field: "spec", secretsIn: "namespace " + kc.Namespace, allow: &r.Allowlist}
	if s := kc.Spec.Strimzi; s != nil && s.KafkaRef.Namespace != "" && s.KafkaRef.Namespace != kc.Namespace {
		return kafka.Connection{}, nil, &SpecProblem{Reason: ReasonInvalidConnection,
			Message: fmt.Sprintf("spec.strimzi.kafkaRef.namespace %s: a KafkaConnection may only read a Kafka resource of its own namespace (%s); a ClusterKafkaConnection may read any",
				s.KafkaRef.Namespace, kc.Namespace)}
	}
	return r.resolveSpec(ctx, &kc.Spec, src, kc.Namespace, r.secretsIn(ctx, kc.Namespace))
}

func (r *ConnectionResolver) resolveSpec(ctx context.Context, spec *rgv1.KafkaConnectionSpec, src connectionSource, namespace string, get secretGetter) (kafka.Connection, []string, error) {
	src.servers, src.tls, src.sasl = spec.BootstrapServers, spec.TLS, spec.SASL
	if spec.Strimzi != nil {
		l, err := r.strimziReader().listener(ctx, spec.Strimzi, namespace)
		if err != nil {
			return kafka.Connection{}, nil, err
		}
		src.servers, src.strimziCA = l.servers, l.ca
	}
	conn, err := buildConnection(src, get)
	return conn, src.servers, err
}

func (r *ConnectionResolver) strimziReader() *strimziReader {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.strimzi == nil {
		r.strimzi = &strimziReader{reader: r.Secrets, now: time.Now}
	}
	return r.strimzi
}
