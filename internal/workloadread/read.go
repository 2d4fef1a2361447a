// Package workloadread reads from the Kubernetes API what the matcher of
// internal/workloads needs: pods, the ReplicaSets and Jobs between pods
// and their workloads, the workloads, KEDA's ScaledObjects and ScaledJobs,
// and the ConfigMaps their pods read.
// It is the I/O half of the mapping; `retention-guard scan` and the
// manager's connection reconciler both use it, always uncached (an
// informer on every Pod or ReplicaSet of a cluster costs memory in
// proportion to the cluster; these reads run once per scan or discovery
// pass), every list in pages. Secrets are never read, nor are KEDA's
// TriggerAuthentications.
package workloadread

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/retentionguard/retention-guard/internal/workloads"
)

// Reader reads workloads through an uncached client.Reader.
type Reader struct {
	Reader client.Reader
	// Namespaces bounds the reads; empty: every namespace.
	Namespaces []string
	// ScalersTTL is how long DeclaredConsumers reuses one listing of
	// KEDA's ScaledObjects and ScaledJobs. The manager's policy
	// reconciler checks every policy's consumers at each recheck and the
	// listing is cluster-wide: shared, it costs two lists a TTL whatever
	// the number of policies (20,000 policies each listing every 10
	// minutes would be 67 requests a second). Zero lists every time
	// (scan, one call). A ScaledObject changed meanwhile is seen at most
	// this much later.
	ScalersTTL time.Duration

	mu           sync.Mutex
	scalersAt    time.Time
	scalersCache workloads.Snapshot
}

// allScalers lists KEDA's objects with a Kafka trigger or not, reusing a
// listing younger than ScalersTTL.
func (r *Reader) allScalers(ctx context.Context) (workloads.Snapshot, error) {
	if r.ScalersTTL > 0 {
		r.mu.Lock()
		defer r.mu.Unlock()
		if !r.scalersAt.IsZero() && time.Since(r.scalersAt) < r.ScalersTTL {
			return r.scalersCache, nil
		}
	}
	var all workloads.Snapshot
	for _, ns := range r.namespaces() {
		if err := r.scalers(ctx, ns, &all); err != nil {
			return workloads.Snapshot{}, err
		}
	}
	if r.ScalersTTL > 0 {
		r.scalersCache, r.scalersAt = all, time.Now()
	}
	return all, nil
}

func (r *Reader) namespaces() []string {
	if len(r.Namespaces) == 0 {
		return []string{""}
	}
	return r.Namespaces
}

// MaxHostLookups bounds PodsAt's lookups by IP.
const MaxHostLookups = 200

// PodsAt adds the pods at hosts (one List per address and namespace, field
// selector status.podIP=IP; at most MaxHostLookups addresses) and the
// ReplicaSets and Jobs that own them (Get).
func (r *Reader) PodsAt(ctx context.Context, hosts []netip.Addr, snap *workloads.Snapshot) error {
	hosts = slices.Clone(hosts)
	slices.SortFunc(hosts, func(a, b netip.Addr) int { return a.Compare(b) })
	hosts = slices.Compact(hosts)
	if len(hosts) > MaxHostLookups {
		hosts = hosts[:MaxHostLookups]
	}
	seen := map[workloads.Ref]bool{}
	for _, ip := range hosts {
		for _, ns := range r.namespaces() {
			var pods corev1.PodList
			if err := r.Reader.List(ctx, &pods, client.InNamespace(ns),
				client.MatchingFieldsSelector{Selector: fields.OneTermEqualSelector("status.podIP", ip.String())}); err != nil {
				return fmt.Errorf("listing the pods at %s: %w", ip, err)
			}
			for i := range pods.Items {
				p := workloads.FromPod(&pods.Items[i])
				snap.Pods = append(snap.Pods, p)
				if err := r.owner(ctx, p, seen, snap); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// AllPods adds every pod that is not finished (a finished pod's IP may be
// another's by now), every ReplicaSet and every Job.
func (r *Reader) AllPods(ctx context.Context, snap *workloads.Snapshot) error {
	for _, ns := range r.namespaces() {
		notFinished := client.MatchingFieldsSelector{Selector: fields.AndSelectors(
			fields.OneTermNotEqualSelector("status.phase", string(corev1.PodSucceeded)),
			fields.OneTermNotEqualSelector("status.phase", string(corev1.PodFailed)))}
		if err := listPages(ctx, r.Reader, ns, &corev1.PodList{}, func(l *corev1.PodList) {
			for i := range l.Items {
				snap.Pods = append(snap.Pods, workloads.FromPod(&l.Items[i]))
			}
		}, notFinished); err != nil {
			return failed("pods", ns, err)
		}
		if err := listPages(ctx, r.Reader, ns, &appsv1.ReplicaSetList{}, func(l *appsv1.ReplicaSetList) {
			for i := range l.Items {
				snap.Owned = append(snap.Owned, workloads.FromReplicaSet(&l.Items[i]))
			}
		}); err != nil {
			return failed("replicasets", ns, err)
		}
		if err := listPages(ctx, r.Reader, ns, &batchv1.JobList{}, func(l *batchv1.JobList) {
			for i := range l.Items {
				w := workloads.FromJob(&l.Items[i])
				snap.Workloads = append(snap.Workloads, w)
				snap.Owned = append(snap.Owned, workloads.Owned{Ref: w.Ref, Owner: w.Owner})
			}
		}); err != nil {
			return failed("jobs", ns, err)
		}
	}
	return nil
}

// Workloads adds every Deployment, StatefulSet, CronJob, Argo Rollout and
// KEDA ScaledObject and ScaledJob (where their CRDs are installed and may
// be read), then the ConfigMaps the snapshot's workloads read (Get, each
// once).
func (r *Reader) Workloads(ctx context.Context, snap *workloads.Snapshot) error {
	for _, ns := range r.namespaces() {
		deployments := map[string]*appsv1.Deployment{}
		if err := listPages(ctx, r.Reader, ns, &appsv1.DeploymentList{}, func(l *appsv1.DeploymentList) {
			for i := range l.Items {
				d := l.Items[i].DeepCopy()
				deployments[d.Namespace+"/"+d.Name] = d
				snap.Workloads = append(snap.Workloads, workloads.FromDeployment(d))
			}
		}); err != nil {
			return failed("deployments", ns, err)
		}
		if err := listPages(ctx, r.Reader, ns, &appsv1.StatefulSetList{}, func(l *appsv1.StatefulSetList) {
			for i := range l.Items {
				snap.Workloads = append(snap.Workloads, workloads.FromStatefulSet(&l.Items[i]))
			}
		}); err != nil {
			return failed("statefulsets", ns, err)
		}
		if err := listPages(ctx, r.Reader, ns, &batchv1.CronJobList{}, func(l *batchv1.CronJobList) {
			for i := range l.Items {
				snap.Workloads = append(snap.Workloads, workloads.FromCronJob(&l.Items[i]))
			}
		}); err != nil {
			return failed("cronjobs", ns, err)
		}
		rollouts := &unstructured.UnstructuredList{}
		rollouts.SetAPIVersion("argoproj.io/v1alpha1")
		rollouts.SetKind("RolloutList")
		var convErr error
		err := listPages(ctx, r.Reader, ns, rollouts, func(l *unstructured.UnstructuredList) {
			for i := range l.Items {
				u := &l.Items[i]
				w, err := workloads.FromRollout(u.GetNamespace(), u.GetName(), u.Object, func(name string) *appsv1.Deployment {
					return deployments[u.GetNamespace()+"/"+name]
				})
				if err != nil {
					convErr = err
					continue
				}
				snap.Workloads = append(snap.Workloads, w)
			}
		})
		switch {
		case meta.IsNoMatchError(err), apierrors.IsNotFound(err), apierrors.IsForbidden(err):
			// Argo Rollouts is not installed, or not guarded here (the
			// chart grants Rollouts only where it guards them).
		case err != nil:
			return failed("argoproj.io rollouts", ns, err)
		case convErr != nil:
			return convErr
		}
		if err := r.scalers(ctx, ns, snap); err != nil {
			return err
		}
	}
	return r.configMaps(ctx, snap)
}

// kedaGroup is KEDA's API group: ScaledObjects and ScaledJobs.
const kedaGroup = "keda.sh/v1alpha1"

// scalers adds the KEDA ScaledObjects and ScaledJobs of namespace ns (all
// when empty), each ScaledJob as a workload too. Where KEDA is not
// installed (its kinds are not served) or its objects may not be read,
// there are none. TriggerAuthentications are never read: they hold
// credentials, never the group.
func (r *Reader) scalers(ctx context.Context, ns string, snap *workloads.Snapshot) error {
	for _, kind := range []string{"ScaledObject", "ScaledJob"} {
		list := &unstructured.UnstructuredList{}
		list.SetAPIVersion(kedaGroup)
		list.SetKind(kind + "List")
		var convErr error
		err := listPages(ctx, r.Reader, ns, list, func(l *unstructured.UnstructuredList) {
			for i := range l.Items {
				u := &l.Items[i]
				if kind == "ScaledObject" {
					s, err := workloads.FromScaledObject(u.GetNamespace(), u.GetName(), u.Object)
					if err != nil {
						convErr = err
						continue
					}
					snap.Scalers = append(snap.Scalers, s)
					continue
				}
				s, w, err := workloads.FromScaledJob(u.GetNamespace(), u.GetName(), u.Object)
				if err != nil {
					convErr = err
					continue
				}
				snap.Scalers = append(snap.Scalers, s)
				snap.Workloads = append(snap.Workloads, w)
			}
		})
		switch {
		case meta.IsNoMatchError(err), apierrors.IsNotFound(err), apierrors.IsForbidden(err):
			// KEDA is not installed, or its objects are not granted here.
		case err != nil:
			return failed("keda.sh "+strings.ToLower(kind)+"s", ns, err)
		case convErr != nil:
			return convErr
		}
	}
	return nil
}

// DeclaredConsumers adds, for a policy's gap check, the KEDA
// ScaledObjects and ScaledJobs with a Kafka trigger, the workloads they
// scale (Get) and the ConfigMaps those read: what maps a group to a
// workload parked at zero, where no member's address leads. Use it after
// PodsAt and OwningWorkloads.
func (r *Reader) DeclaredConsumers(ctx context.Context, snap *workloads.Snapshot) error {
	// Shared between calls (ScalersTTL): read, never written, below.
	all, err := r.allScalers(ctx)
	if err != nil {
		return err
	}
	have := map[workloads.Ref]bool{}
	for _, w := range snap.Workloads {
		have[w.Ref] = true
	}
	kafka := map[workloads.Ref]bool{}
	for _, s := range snap.Scalers {
		kafka[s.Ref] = true
	}
	for _, s := range all.Scalers {
		if !kafka[s.Ref] && slices.ContainsFunc(s.Triggers, workloads.Trigger.Kafka) {
			kafka[s.Ref] = true
			snap.Scalers = append(snap.Scalers, s)
		}
	}
	for _, w := range all.Workloads { // ScaledJobs
		if kafka[w.Ref] && !have[w.Ref] {
			have[w.Ref] = true
			snap.Workloads = append(snap.Workloads, w)
		}
	}
	for _, s := range snap.Scalers {
		if have[s.Target] {
			continue
		}
		have[s.Target] = true
		if err := r.get(ctx, s.Target, snap); err != nil {
			return err
		}
	}
	return r.configMaps(ctx, snap)
}

// configMaps adds the ConfigMaps the snapshot's workloads read (Get,
// each once) that it does not hold yet.
func (r *Reader) configMaps(ctx context.Context, snap *workloads.Snapshot) error {
	have := map[[2]string]bool{}
	for _, cm := range snap.ConfigMaps {
		have[[2]string{cm.Namespace, cm.Name}] = true
	}
	var refs [][2]string
	for i := range snap.Workloads {
		for _, name := range snap.Workloads[i].ConfigMapNames() {
			refs = append(refs, [2]string{snap.Workloads[i].Ref.Namespace, name})
		}
	}
	slices.SortFunc(refs, func(a, b [2]string) int { return cmp.Or(cmp.Compare(a[0], b[0]), cmp.Compare(a[1], b[1])) })
	for _, ref := range slices.Compact(refs) {
		if have[ref] {
			continue
		}
		var cm corev1.ConfigMap
		err := r.Reader.Get(ctx, client.ObjectKey{Namespace: ref[0], Name: ref[1]}, &cm)
		switch {
		case apierrors.IsNotFound(err):
			continue // the pods could not start either
		case err != nil:
			return fmt.Errorf("reading ConfigMap %s/%s: %w", ref[0], ref[1], err)
		}
		snap.ConfigMaps = append(snap.ConfigMaps, workloads.ConfigMap{Namespace: cm.Namespace, Name: cm.Name, Data: cm.Data})
	}
	return nil
}

// OwningWorkloads adds, for a snapshot PodsAt filled, the workloads at
// the top of its pods' owners (Get): the Deployment or Rollout of each
// ReplicaSet, the CronJob or KEDA ScaledJob of each Job, each
// StatefulSet. Use it instead
// of Workloads, not with it.
func (r *Reader) OwningWorkloads(ctx context.Context, snap *workloads.Snapshot) error {
	want := map[workloads.Ref]bool{}
	for _, o := range snap.Owned {
		if o.Owner != nil {
			want[workloads.Ref{Kind: o.Owner.Kind, Namespace: o.Ref.Namespace, Name: o.Owner.Name}] = true
		}
	}
	for _, p := range snap.Pods {
		if p.Owner != nil && p.Owner.Kind == workloads.StatefulSet {
			want[workloads.Ref{Kind: workloads.StatefulSet, Namespace: p.Namespace, Name: p.Owner.Name}] = true
		}
	}
	refs := slices.SortedFunc(maps.Keys(want), func(a, b workloads.Ref) int {
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Kind, b.Kind), cmp.Compare(a.Name, b.Name))
	})
	for _, ref := range refs {
		if err := r.get(ctx, ref, snap); err != nil {
			return err
		}
	}
	return nil
}

// get adds the workload ref names (Get): a Deployment, StatefulSet,
// CronJob, Argo Rollout or KEDA ScaledJob; nothing when it is gone, its
// kind is not served or not granted, or is none of those.
func (r *Reader) get(ctx context.Context, ref workloads.Ref, snap *workloads.Snapshot) error {
	key := client.ObjectKey{Namespace: ref.Namespace, Name: ref.Name}
	switch ref.Kind {
	case workloads.Deployment:
		var d appsv1.Deployment
		if err := r.Reader.Get(ctx, key, &d); err != nil {
			return ignoreNotFound(err, "Deployment", key)
		}
		snap.Workloads = append(snap.Workloads, workloads.FromDeployment(&d))
	case workloads.StatefulSet:
		var s appsv1.StatefulSet
		if err := r.Reader.Get(ctx, key, &s); err != nil {
			return ignoreNotFound(err, "StatefulSet", key)
		}
		snap.Workloads = append(snap.Workloads, workloads.FromStatefulSet(&s))
	case workloads.CronJob:
		var c batchv1.CronJob
		if err := r.Reader.Get(ctx, key, &c); err != nil {
			return ignoreNotFound(err, "CronJob", key)
		}
		snap.Workloads = append(snap.Workloads, workloads.FromCronJob(&c))
	case workloads.Rollout:
		u := &unstructured.Unstructured{}
		u.SetAPIVersion("argoproj.io/v1alpha1")
		u.SetKind("Rollout")
		if err := r.Reader.Get(ctx, key, u); err != nil {
			if meta.IsNoMatchError(err) || apierrors.IsForbidden(err) {
				return nil
			}
			return ignoreNotFound(err, "Rollout", key)
		}
		w, err := workloads.FromRollout(ref.Namespace, ref.Name, u.Object, func(name string) *appsv1.Deployment {
			var d appsv1.Deployment
			if r.Reader.Get(ctx, client.ObjectKey{Namespace: ref.Namespace, Name: name}, &d) != nil {
				return nil
			}
			return &d
		})
		if err != nil {
			return err
		}
		snap.Workloads = append(snap.Workloads, w)
	case workloads.ScaledJob:
		u := &unstructured.Unstructured{}
		u.SetAPIVersion(kedaGroup)
		u.SetKind("ScaledJob")
		if err := r.Reader.Get(ctx, key, u); err != nil {
			if meta.IsNoMatchError(err) || apierrors.IsForbidden(err) {
				return nil
			}
			return ignoreNotFound(err, "ScaledJob", key)
		}
		s, w, err := workloads.FromScaledJob(ref.Namespace, ref.Name, u.Object)
		if err != nil {
			return err
		}
		snap.Scalers = append(snap.Scalers, s)
		snap.Workloads = append(snap.Workloads, w)
	}
	return nil
}

// owner reads the ReplicaSet or Job that owns a pod.
func (r *Reader) owner(ctx context.Context, p workloads.Pod, seen map[workloads.Ref]bool, snap *workloads.Snapshot) error {
	if p.Owner == nil {
		return nil
	}
	ref := workloads.Ref{Kind: p.Owner.Kind, Namespace: p.Namespace, Name: p.Owner.Name}
	if seen[ref] {
		return nil
	}
	seen[ref] = true
	key := client.ObjectKey{Namespace: p.Namespace, Name: p.Owner.Name}
	switch p.Owner.Kind {
	case workloads.ReplicaSet:
		var rs appsv1.ReplicaSet
		if err := r.Reader.Get(ctx, key, &rs); err != nil {
			return ignoreNotFound(err, "ReplicaSet", key)
		}
		snap.Owned = append(snap.Owned, workloads.FromReplicaSet(&rs))
	case workloads.Job:
		var j batchv1.Job
		if err := r.Reader.Get(ctx, key, &j); err != nil {
			return ignoreNotFound(err, "Job", key)
		}
		w := workloads.FromJob(&j)
		snap.Workloads = append(snap.Workloads, w)
		snap.Owned = append(snap.Owned, workloads.Owned{Ref: w.Ref, Owner: w.Owner})
	}
	return nil
}

func ignoreNotFound(err error, kind string, key client.ObjectKey) error {
	if apierrors.IsNotFound(err) {
		return nil // gone since the pod was listed
	}
	return fmt.Errorf("reading %s %s: %w", kind, key, err)
}

// failed says which list failed where; a refusal names the permissions.
func failed(resource, ns string, err error) error {
	in := "in every namespace"
	if ns != "" {
		in = "in namespace " + ns
	}
	if apierrors.IsForbidden(err) {
		return fmt.Errorf("listing %s %s is forbidden: mapping groups to workloads needs get and list on pods, replicasets, "+
			"deployments, statefulsets, jobs, cronjobs and configmaps (and argoproj.io rollouts, keda.sh scaledobjects and scaledjobs where installed): %w", resource, in, err)
	}
	return fmt.Errorf("listing %s %s: %w", resource, in, err)
}

// listPage bounds each list request.
const listPage = 500

// listPages lists list's kind in namespace ns (all when empty) page by
// page, handing each page to each.
func listPages[L client.ObjectList](ctx context.Context, r client.Reader, ns string, list L, each func(L), extra ...client.ListOption) error {
	var cont string
	for {
		opts := append([]client.ListOption{client.Limit(listPage)}, extra...)
		if ns != "" {
			opts = append(opts, client.InNamespace(ns))
		}
		if cont != "" {
			opts = append(opts, client.Continue(cont))
		}
		if err := r.List(ctx, list, opts...); err != nil {
			return err
		}
		each(list)
		if cont = list.GetContinue(); cont == "" {
			return nil
		}
	}
}
