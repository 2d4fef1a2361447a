package stack

import (
	"context"
	"fmt"
	"net/url"
	"sort"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/retentionguard/retention-guard/test/chartrender"
)

// Release is the name and namespace the chart is installed with.
const (
	ReleaseName      = chartrender.ReleaseName
	ReleaseNamespace = chartrender.ReleaseNamespace
)

// RenderChart renders charts/retention-guard as `helm install` would
// (values.schema.json validation included), with vals over values.yaml, and
// returns its objects in file order.
func RenderChart(chartDir string, vals map[string]any) ([]*unstructured.Unstructured, error) {
	return chartrender.Render(chartDir, vals)
}

// applyOrder puts what others depend on first: CRDs and namespaced
// plumbing before the webhook configuration that starts guarding.
func applyOrder(kind string) int {
	switch kind {
	case "CustomResourceDefinition":
		return 0
	case "ServiceAccount", "ClusterRole", "Role", "ClusterRoleBinding", "RoleBinding", "Secret", "ConfigMap":
		return 1
	case "ValidatingWebhookConfiguration":
		return 3
	default:
		return 2
	}
}

// ApplyChart creates the release namespace and server-side applies every
// rendered object, as `helm install` (or a GitOps controller) would, but
// the Prometheus Operator's (see monitoringObject). It returns a
// description of each object applied.
func ApplyChart(ctx context.Context, c client.Client, objs []*unstructured.Unstructured) ([]string, error) {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ReleaseNamespace}}
	if err := c.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
		return nil, fmt.Errorf("creating namespace %s: %w", ReleaseNamespace, err)
	}
	sorted := append([]*unstructured.Unstructured(nil), objs...)
	sort.SliceStable(sorted, func(i, j int) bool { return applyOrder(sorted[i].GetKind()) < applyOrder(sorted[j].GetKind()) })
	var applied []string
	for _, o := range sorted {
		if monitoringObject(o) {
			continue
		}
		namespaced, err := c.IsObjectNamespaced(o)
		if err != nil {
			return applied, fmt.Errorf("%s %s: %w", o.GetKind(), o.GetName(), err)
		}
		if namespaced && o.GetNamespace() == "" {
			o.SetNamespace(ReleaseNamespace)
		}
		if err := c.Apply(ctx, client.ApplyConfigurationFromUnstructured(o), client.FieldOwner("helm"), client.ForceOwnership); err != nil {
			return applied, fmt.Errorf("applying %s %s: %w", o.GetKind(), o.GetName(), err)
		}
		applied = append(applied, o.GetKind()+"/"+o.GetName())
	}
	return applied, nil
}

// ServiceAccountKubeconfig asks the TokenRequest API for a token of the
// ServiceAccount namespace/name and writes a kubeconfig that uses it to
// path: a process using it has exactly that ServiceAccount's RBAC.
func ServiceAccountKubeconfig(ctx context.Context, admin *rest.Config, namespace, name, path string) (*rest.Config, error) {
	token, err := ServiceAccountToken(ctx, admin, namespace, name)
	if err != nil {
		return nil, err
	}
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["e2e"] = &clientcmdapi.Cluster{Server: admin.Host, CertificateAuthorityData: admin.CAData}
	cfg.AuthInfos[name] = &clientcmdapi.AuthInfo{Token: token}
	cfg.Contexts["e2e"] = &clientcmdapi.Context{Cluster: "e2e", AuthInfo: name, Namespace: namespace}
	cfg.CurrentContext = "e2e"
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		return nil, err
	}
	return clientcmd.BuildConfigFromFlags("", path)
}

// ServiceAccountToken asks the TokenRequest API for a day-long token of
// the ServiceAccount namespace/name.
func ServiceAccountToken(ctx context.Context, admin *rest.Config, namespace, name string) (string, error) {
	cs, err := kubernetes.NewForConfig(admin)
	if err != nil {
		return "", err
	}
	tr, err := cs.CoreV1().ServiceAccounts(namespace).CreateToken(ctx, name, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](24 * 3600)},
	}, metav1.CreateOptions{})
	if err != nil {
		return "", fmt.Errorf("TokenRequest for ServiceAccount %s/%s: %w", namespace, name, err)
	}
	return tr.Status.Token, nil
}

// hostOf is the host:port of an API server URL.
func hostOf(server string) (string, error) {
	u, err := url.Parse(server)
	if err != nil || u.Host == "" {
		return "", fmt.Errorf("API server address %q: %v", server, err)
	}
	return u.Host, nil
}

// monitoringObject: the Prometheus Operator's kinds (ServiceMonitor,
// PrometheusRule), which this control plane has no CRDs for; the stack's
// Prometheus is configured from them instead.
func monitoringObject(o *unstructured.Unstructured) bool {
	return o.GroupVersionKind().Group == "monitoring.coreos.com"
}

// AdminKubeconfig writes the envtest admin credentials as a kubeconfig
// (for kubectl in the demo and for people poking at a kept stack).
func AdminKubeconfig(admin *rest.Config, path string) error {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["e2e"] = &clientcmdapi.Cluster{Server: admin.Host, CertificateAuthorityData: admin.CAData}
	cfg.AuthInfos["admin"] = &clientcmdapi.AuthInfo{
		ClientCertificateData: admin.CertData, ClientKeyData: admin.KeyData, Token: admin.BearerToken,
	}
	cfg.Contexts["e2e"] = &clientcmdapi.Context{Cluster: "e2e", AuthInfo: "admin"}
	cfg.CurrentContext = "e2e"
	return clientcmd.WriteToFile(*cfg, path)
}
