package controllers

import (
	"context"
	"fmt"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	rgv1 "github.com/retentionguard/retention-guard/api/v1alpha1"
	"github.com/retentionguard/retention-guard/internal/resolve"
)

// Field indexes on the manager's cache, so a watch event finds what it
// concerns without listing everything.
const (
	// secretRefIndex indexes policies by the Secrets they reference in
	// their own namespace: the inline connection's, and the cursor's (a
	// policy naming a connection keeps its cursor Secret all the same).
	secretRefIndex = ".spec.kafka.secretRefs"
	// connectionRefIndex indexes policies by the connection they name
	// (connectionKey).
	connectionRefIndex = ".spec.kafka.connectionRef"
	// connectionSecretIndex indexes ClusterKafkaConnections and
	// KafkaConnections by the Secrets they reference.
	connectionSecretIndex = ".spec.secretRefs"
	// clusterIDIndex indexes policies by the Kafka cluster ID of their
	// last proof (status.proof.clusterID): a connection's discovery counts
	// a group as guarded by any policy on the same cluster, however the
	// policy names it (bootstrap servers, another connection).
	clusterIDIndex = ".status.proof.clusterID"
)

// connectionKey identifies a connection in connectionRefIndex:
// "ClusterKafkaConnection/<name>" or "KafkaConnection/<namespace>/<name>".
func connectionKey(kind, namespace, name string) string {
	if kind == rgv1.KindClusterKafkaConnection {
		return kind + "/" + name
	}
	return kind + "/" + namespace + "/" + name
}

// policyConnectionKey is the key of the connection a policy names, or "".
func policyConnectionKey(p *rgv1.ConsumerRetentionPolicy) string {
	ref := p.Spec.Kafka.ConnectionRef
	if ref == nil {
		return ""
	}
	return connectionKey(ref.Kind, p.Namespace, ref.Name)
}

// setupIndexes registers every index. The policy reconciler calls it; the
// connection reconcilers need it on the same manager.
func setupIndexes(ctx context.Context, mgr ctrl.Manager) error {
	idx := mgr.GetFieldIndexer()
	if err := idx.IndexField(ctx, &rgv1.ConsumerRetentionPolicy{}, secretRefIndex, func(o client.Object) []string {
		p, ok := o.(*rgv1.ConsumerRetentionPolicy)
		switch {
		case !ok:
			return nil
		case p.Spec.Kafka.ConnectionRef == nil:
			return resolve.SecretRefs(p)
		case p.Spec.Cursor != nil && p.Spec.Cursor.SQL.SecretRef.Name != "":
			// The connection's Secrets are the connection's: indexed by
			// connectionSecretIndex.
			return []string{p.Spec.Cursor.SQL.SecretRef.Name}
		}
		return nil
	}); err != nil {
		return fmt.Errorf("indexing policies by Secret: %w", err)
	}
	if err := idx.IndexField(ctx, &rgv1.ConsumerRetentionPolicy{}, connectionRefIndex, func(o client.Object) []string {
		if p, ok := o.(*rgv1.ConsumerRetentionPolicy); ok {
			if k := policyConnectionKey(p); k != "" {
				return []string{k}
			}
		}
		return nil
	}); err != nil {
		return fmt.Errorf("indexing policies by connection: %w", err)
	}
	if err := idx.IndexField(ctx, &rgv1.ConsumerRetentionPolicy{}, clusterIDIndex, func(o client.Object) []string {
		if p, ok := o.(*rgv1.ConsumerRetentionPolicy); ok && p.Status.Proof != nil && p.Status.Proof.ClusterID != "" {
			return []string{p.Status.Proof.ClusterID}
		}
		return nil
	}); err != nil {
		return fmt.Errorf("indexing policies by cluster ID: %w", err)
	}
	if err := idx.IndexField(ctx, &rgv1.ClusterKafkaConnection{}, connectionSecretIndex, func(o client.Object) []string {
		if c, ok := o.(*rgv1.ClusterKafkaConnection); ok {
			return resolve.ConnectionSecretRefs(c.Spec.TLS, c.Spec.SASL)
		}
		return nil
	}); err != nil {
		return fmt.Errorf("indexing ClusterKafkaConnections by Secret: %w", err)
	}
	if err := idx.IndexField(ctx, &rgv1.KafkaConnection{}, connectionSecretIndex, func(o client.Object) []string {
		if c, ok := o.(*rgv1.KafkaConnection); ok {
			return resolve.ConnectionSecretRefs(c.Spec.TLS, c.Spec.SASL)
		}
		return nil
	}); err != nil {
		return fmt.Errorf("indexing KafkaConnections by Secret: %w", err)
	}
	return nil
}
