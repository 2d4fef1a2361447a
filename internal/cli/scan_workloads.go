package cli

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"slices"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/retentionguard/retention-guard/internal/workloads"
)

// kubeOptions are scan's Kubernetes flags: where the workloads that
// consume each group are read (for --emit-policies).
type kubeOptions struct {
	kubeconfig string
	context    string
	namespaces []string
}

// wanted: a kubeconfig is named (--kubeconfig, --context, or the
// standard KUBECONFIG variable).
func (k *kubeOptions) wanted() bool {
	return k.kubeconfig != "" || k.context != "" || os.Getenv(clientcmd.RecommendedConfigPathEnvVar) != ""
}

// restConfig loads the kubeconfig the way kubectl does: --kubeconfig, else
// KUBECONFIG, else ~/.kube/config; --context picks a context.
func (k *kubeOptions) restConfig() (*rest.Config, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = k.kubeconfig
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules,
		&clientcmd.ConfigOverrides{CurrentContext: k.context}).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("loading the kubeconfig: %w", err)
	}
	cfg.QPS, cfg.Burst = 50, 100
	return cfg, nil
}

// listPage bounds each list request; the rest comes in pages.
const listPage = 500

// rolloutsResource is Argo Rollouts' Rollout, read only where its CRD is
// installed.
var rolloutsResource = schema.GroupVersionResource{Group: "argoproj.io", Version: "v1alpha1", Resource: "rollouts"}

// readSnapshot reads, in the namespaces asked (all when none), what the
// matcher needs: running pods, ReplicaSets, Deployments, StatefulSets,
// Jobs, CronJobs, Argo Rollouts where installed, and the ConfigMaps the
// workloads' pods read (each fetched by name, never all). Every list is
// paged. Any failure is an error naming what could not be read: a scan
// whose selectors came from half a cluster would be wrong.
func readSnapshot(ctx context.Context, cfg *rest.Config, namespaces []string) (workloads.Snapshot, error) {
	var snap workloads.Snapshot
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return snap, err
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return snap, err
	}
	if len(namespaces) == 0 {
		namespaces = []string{metav1.NamespaceAll}
	}
	where := func(what, ns string, err error) error {
		in := "in every namespace"
		if ns != "" {
			in = "in namespace " + ns
		}
		switch {
		case apierrors.IsForbidden(err):
			return fmt.Errorf("listing %s %s at %s is forbidden: the scan needs get and list on pods, replicasets, "+
				"deployments, statefulsets, jobs, cronjobs, configmaps (and argoproj.io rollouts where installed); "+
				"name the namespaces you may read with --namespace: %w", what, in, cfg.Host, err)
		}
		return fmt.Errorf("listing %s %s at %s: %w", what, in, cfg.Host, err)
	}
	deployments := map[[2]string]*appsv1.Deployment{}
	for _, ns := range namespaces {
		if err := pages(ctx, func(o metav1.ListOptions) (string, error) {
			// Terminated pods' IPs are released and may be another pod's.
			o.FieldSelector = "status.phase!=Succeeded,status.phase!=Failed"
			l, err := cs.CoreV1().Pods(ns).List(ctx, o)
			if err != nil {
				return "", err
			}
			for i := range l.Items {
				snap.Pods = append(snap.Pods, workloads.FromPod(&l.Items[i]))
			}
			return l.Continue, nil
		}); err != nil {
			return snap, where("pods", ns, err)
		}
		if err := pages(ctx, func(o metav1.ListOptions) (string, error) {
			l, err := cs.AppsV1().ReplicaSets(ns).List(ctx, o)
			if err != nil {
				return "", err
			}
			for i := range l.Items {
				snap.Owned = append(snap.Owned, workloads.FromReplicaSet(&l.Items[i]))
			}
			return l.Continue, nil
		}); err != nil {
			return snap, where("replicasets", ns, err)
		}
		if err := pages(ctx, func(o metav1.ListOptions) (string, error) {
			l, err := cs.AppsV1().Deployments(ns).List(ctx, o)
			if err != nil {
				return "", err
			}
			for i := range l.Items {
				d := &l.Items[i]
				deployments[[2]string{d.Namespace, d.Name}] = d
				snap.Workloads = append(snap.Workloads, workloads.FromDeployment(d))
			}
			return l.Continue, nil
		}); err != nil {
			return snap, where("deployments", ns, err)
		}
		if err := pages(ctx, func(o metav1.ListOptions) (string, error) {
			l, err := cs.AppsV1().StatefulSets(ns).List(ctx, o)
			if err != nil {
				return "", err
			}
			for i := range l.Items {
				snap.Workloads = append(snap.Workloads, workloads.FromStatefulSet(&l.Items[i]))
			}
			return l.Continue, nil
		}); err != nil {
			return snap, where("statefulsets", ns, err)
		}
		if err := pages(ctx, func(o metav1.ListOptions) (string, error) {
			l, err := cs.BatchV1().Jobs(ns).List(ctx, o)
			if err != nil {
				return "", err
			}
			for i := range l.Items {
				snap.Workloads = append(snap.Workloads, workloads.FromJob(&l.Items[i]))
			}
			return l.Continue, nil
		}); err != nil {
			return snap, where("jobs", ns, err)
		}
		if err := pages(ctx, func(o metav1.ListOptions) (string, error) {
			l, err := cs.BatchV1().CronJobs(ns).List(ctx, o)
			if err != nil {
				return "", err
			}
			for i := range l.Items {
				snap.Workloads = append(snap.Workloads, workloads.FromCronJob(&l.Items[i]))
			}
			return l.Continue, nil
		}); err != nil {
			return snap, where("cronjobs", ns, err)
		}
		err := pages(ctx, func(o metav1.ListOptions) (string, error) {
			l, err := dyn.Resource(rolloutsResource).Namespace(ns).List(ctx, o)
			if err != nil {
				return "", err
			}
			for i := range l.Items {
				u := &l.Items[i]
				w, err := workloads.FromRollout(u.GetNamespace(), u.GetName(), u.Object, func(name string) *appsv1.Deployment {
					return deployments[[2]string{u.GetNamespace(), name}]
				})
				if err != nil {
					return "", err
				}
				snap.Workloads = append(snap.Workloads, w)
			}
			return l.GetContinue(), nil
		})
		switch {
		case apierrors.IsNotFound(err):
			// Argo Rollouts is not installed.
		case err != nil:
			return snap, where("argoproj.io rollouts", ns, err)
		}
	}
	for _, ref := range referencedConfigMaps(snap.Workloads) {
		cm, err := cs.CoreV1().ConfigMaps(ref[0]).Get(ctx, ref[1], metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			continue // the pods could not start either
		case err != nil:
			return snap, fmt.Errorf("reading ConfigMap %s/%s at %s: %w", ref[0], ref[1], cfg.Host, err)
		}
		snap.ConfigMaps = append(snap.ConfigMaps, workloads.ConfigMap{Namespace: cm.Namespace, Name: cm.Name, Data: cm.Data})
	}
	return snap, nil
}

// pages calls list with a bounded page size until the server says there
// is no more.
func pages(ctx context.Context, list func(metav1.ListOptions) (string, error)) error {
	opts := metav1.ListOptions{Limit: listPage}
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		next, err := list(opts)
		if err != nil {
			return err
		}
		if next == "" {
			return nil
		}
		opts.Continue = next
	}
}

// referencedConfigMaps lists (namespace, name) of every ConfigMap a
// workload's pods read, sorted, each once.
func referencedConfigMaps(ws []workloads.Workload) [][2]string {
	var out [][2]string
	for i := range ws {
		for _, name := range ws[i].ConfigMapNames() {
			out = append(out, [2]string{ws[i].Ref.Namespace, name})
		}
	}
	slices.SortFunc(out, func(a, b [2]string) int { return cmp.Or(cmp.Compare(a[0], b[0]), cmp.Compare(a[1], b[1])) })
	return slices.Compact(out)
}
