package controllers

import (
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	rgv1 "github.com/retentionguard/retention-guard/api/v1alpha1"
)

// The manager's informer cache holds only what decisions read: in a large
// cluster the objects it watches but does not own (every CronJob, every
// Secret's metadata) outweigh the policies many times over. Measured in
// docs/benchmarks.md (make bench-scale): a CronJob with a production pod
// template is ~16 KB in the cache with its managedFields, ~0.3 KB reduced
// to what the reconciler reads; a Secret's metadata ~1.2 KB (3 KB and more
// for a Secret applied with kubectl, whose last-applied-configuration
// annotation repeats its data), ~0.2 KB reduced.
//
// Nothing else may read these kinds from the manager's cache expecting
// whole objects: Secret data is read from the API server
// (ConnectionResolver), and the webhook reads workloads from the
// admission request.

// CacheByObject returns the cache settings of the kinds the reconciler
// watches, for ctrl.Options.Cache.ByObject. Namespaces follow
// Cache.DefaultNamespaces (--watch-namespaces). A shard's selector
// (--watch-label-selector on a manager without the webhook; nil: every
// object) limits the policies and both kinds of connection to the shard's.
func CacheByObject(shardSelector labels.Selector) map[client.Object]cache.ByObject {
	return map[client.Object]cache.ByObject{
		&rgv1.ConsumerRetentionPolicy{}: {Transform: stripPolicy, Label: shardSelector},
		&rgv1.KafkaConnection{}:         {Label: shardSelector},
		&rgv1.ClusterKafkaConnection{}:  {Label: shardSelector},
		&batchv1.CronJob{}:              {Transform: reduceCronJob},
		// Keyed by GVK: this is the metadata-only informer WatchesMetadata
		// starts (a PartialObjectMetadata of v1 Secret).
		&corev1.Secret{}: {Transform: reduceSecretMetadata},
	}
}

var (
	_ toolscache.TransformFunc = stripPolicy
	_ toolscache.TransformFunc = reduceCronJob
	_ toolscache.TransformFunc = reduceSecretMetadata
)

// stripPolicy drops a policy's managedFields and its kubectl
// last-applied-configuration annotation (a copy of the spec): neither the
// reconciler nor the webhook reads them, and status patches are merge
// patches computed from the cached object, which never carry metadata.
func stripPolicy(in any) (any, error) {
	if p, ok := in.(*rgv1.ConsumerRetentionPolicy); ok {
		p.ManagedFields = nil
		delete(p.Annotations, corev1.LastAppliedConfigAnnotation)
	}
	return in, nil
}

// reduceCronJob keeps what the reconciler and the live check read of a
// CronJob: its identity, generation (the watch's predicate), schedule,
// time zone, suspension, starting deadline and the pod labels of its job
// template (policiesForCronJob, internal/gather's selectedCronJobs).
func reduceCronJob(in any) (any, error) {
	cj, ok := in.(*batchv1.CronJob)
	if !ok {
		return in, nil
	}
	out := &batchv1.CronJob{
		TypeMeta: cj.TypeMeta,
		ObjectMeta: metav1.ObjectMeta{
			Name: cj.Name, Namespace: cj.Namespace, UID: cj.UID, ResourceVersion: cj.ResourceVersion,
			Generation: cj.Generation, DeletionTimestamp: cj.DeletionTimestamp,
		},
		Spec: batchv1.CronJobSpec{
			Schedule:                cj.Spec.Schedule,
			TimeZone:                cj.Spec.TimeZone,
			Suspend:                 cj.Spec.Suspend,
			StartingDeadlineSeconds: cj.Spec.StartingDeadlineSeconds,
		},
	}
	out.Spec.JobTemplate.Spec.Template.Labels = cj.Spec.JobTemplate.Spec.Template.Labels
	return out, nil
}

// reduceSecretMetadata keeps a Secret's identity and resourceVersion: the
// reconciler maps a Secret to the policies naming it by namespace and
// name, and the ConnectionResolver re-reads a Secret's data when its
// resourceVersion moves.
func reduceSecretMetadata(in any) (any, error) {
	m, ok := in.(*metav1.PartialObjectMetadata)
	if !ok {
		return in, nil
	}
	return &metav1.PartialObjectMetadata{
		TypeMeta: m.TypeMeta,
		ObjectMeta: metav1.ObjectMeta{
			Name: m.Name, Namespace: m.Namespace, UID: m.UID, ResourceVersion: m.ResourceVersion,
			DeletionTimestamp: m.DeletionTimestamp,
		},
	}, nil
}
