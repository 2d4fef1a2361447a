package cli

import (
	"context"
	"fmt"
	"os"

	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/retentionguard/retention-guard/internal/workloadread"
	"github.com/retentionguard/retention-guard/internal/workloads"
)

// kubeOptions are scan's Kubernetes flags: where the workloads that
// consume each group are read (the policies' selectors, the table's
// WORKLOADS column, the JSON's workloads).
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

// named: a Kubernetes flag was given (--kubeconfig, --context,
// --namespace). The table and JSON read the cluster only then; the
// KUBECONFIG variable alone is for --emit-policies.
func (k *kubeOptions) named() bool {
	return k.kubeconfig != "" || k.context != "" || len(k.namespaces) > 0
}

// fallback says how to scan without reading the cluster.
func (k *kubeOptions) fallback(emitPolicies bool) string {
	if emitPolicies {
		return "the policies' selectors come from the cluster's workloads (drop --kubeconfig and unset KUBECONFIG for placeholder selectors)"
	}
	return "the workloads come from the cluster (drop --kubeconfig, --context and --namespace to judge the groups alone)"
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

// readSnapshot reads, in the namespaces asked (all when none), what the
// matcher needs (internal/workloadread: every unfinished pod, ReplicaSet,
// Job, Deployment, StatefulSet, CronJob, Argo Rollout and KEDA
// ScaledObject and ScaledJob where installed, the ConfigMaps the
// workloads read; never a Secret or a TriggerAuthentication), every list in pages. Any failure is an
// error naming the API server: selectors from half a cluster would be
// wrong.
func readSnapshot(ctx context.Context, cfg *rest.Config, namespaces []string) (workloads.Snapshot, error) {
	var snap workloads.Snapshot
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return snap, err
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return snap, fmt.Errorf("the API server at %s: %w", cfg.Host, err)
	}
	r := &workloadread.Reader{Reader: c, Namespaces: namespaces}
	if err := r.AllPods(ctx, &snap); err != nil {
		return snap, fmt.Errorf("the API server at %s: %w", cfg.Host, err)
	}
	if err := r.Workloads(ctx, &snap); err != nil {
		return snap, fmt.Errorf("the API server at %s: %w", cfg.Host, err)
	}
	return snap, nil
}
