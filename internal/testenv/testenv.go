// Package testenv starts the real control plane for tests: kube-apiserver
// and etcd built by hack/build-control-plane.sh (make envtest-assets), with
// the project's generated CRDs installed.
package testenv

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	goruntime "runtime"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	rgv1 "github.com/retentionguard/retention-guard/api/v1alpha1"
)

// Env is a running control plane.
type Env struct {
	*envtest.Environment
	Config *rest.Config
	Client client.Client
	Scheme *runtime.Scheme
}

// RepoRoot is the repository's top folder, found from this file.
func RepoRoot() string {
	_, file, _, _ := goruntime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}

// Scheme returns a scheme with the built-in types and this project's API.
func Scheme() *runtime.Scheme {
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		panic(err)
	}
	if err := rgv1.AddToScheme(s); err != nil {
		panic(err)
	}
	return s
}

// Start starts kube-apiserver and etcd and installs the CRDs from
// config/crd/bases. It fails with instructions when KUBEBUILDER_ASSETS is
// not set: tests never skip for want of a control plane.
func Start(opts ...func(*envtest.Environment)) (*Env, error) {
	assets := os.Getenv("KUBEBUILDER_ASSETS")
	if assets == "" {
		return nil, errors.New("KUBEBUILDER_ASSETS is not set: run the tests with `make test` " +
			"(or export KUBEBUILDER_ASSETS=$(hack/build-control-plane.sh)); they need a real kube-apiserver and etcd")
	}
	for _, b := range []string{"kube-apiserver", "etcd"} {
		if _, err := os.Stat(filepath.Join(assets, b)); err != nil {
			return nil, fmt.Errorf("KUBEBUILDER_ASSETS=%s has no %s: run hack/build-control-plane.sh", assets, b)
		}
	}
	scheme := Scheme()
	env := &envtest.Environment{
		BinaryAssetsDirectory:    assets,
		CRDDirectoryPaths:        []string{filepath.Join(RepoRoot(), "config", "crd", "bases")},
		ErrorIfCRDPathMissing:    true,
		Scheme:                   scheme,
		ControlPlaneStartTimeout: 2 * time.Minute,
		ControlPlaneStopTimeout:  30 * time.Second,
	}
	for _, o := range opts {
		o(env)
	}
	cfg, err := env.Start()
	if err != nil {
		return nil, fmt.Errorf("starting kube-apiserver and etcd from %s: %w", assets, err)
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		_ = env.Stop()
		return nil, err
	}
	return &Env{Environment: env, Config: cfg, Client: c, Scheme: scheme}, nil
}

// Main is the body of a package's TestMain: it starts the control plane
// into *env, runs the tests, stops the control plane and returns the exit
// code for os.Exit. Tests that start managers stop them (and wait) before
// they return, so nothing talks to the API server while it stops.
//
//	func TestMain(m *testing.M) { os.Exit(testenv.Main(m, &env)) }
func Main(m *testing.M, env **Env, opts ...func(*envtest.Environment)) int {
	e, err := Start(opts...)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	*env = e
	code := m.Run()
	if err := e.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, "stopping the control plane:", err)
	}
	return code
}

// ArgoRolloutsVersion is the Argo Rollouts release whose Rollout CRD the
// tests install: the real CRD, from the release's Go module (the module
// proxy serves the repository's manifests with its code).
const ArgoRolloutsVersion = "v1.8.3"

// ArgoRolloutsCRD returns the path of Argo Rollouts' Rollout CRD
// (manifests/crds/rollout-crd.yaml of ArgoRolloutsVersion), downloading the
// module into Go's module cache on first use (`go mod download`), offline
// after that.
func ArgoRolloutsCRD() (string, error) {
	out, err := exec.Command("go", "mod", "download", "-json", "github.com/argoproj/argo-rollouts@"+ArgoRolloutsVersion).Output()
	if err != nil {
		return "", fmt.Errorf("go mod download github.com/argoproj/argo-rollouts@%s: %w", ArgoRolloutsVersion, err)
	}
	var mod struct{ Dir, Error string }
	if err := json.Unmarshal(out, &mod); err != nil {
		return "", fmt.Errorf("go mod download -json: %w", err)
	}
	if mod.Error != "" || mod.Dir == "" {
		return "", fmt.Errorf("go mod download github.com/argoproj/argo-rollouts@%s: %s", ArgoRolloutsVersion, mod.Error)
	}
	crd := filepath.Join(mod.Dir, "manifests", "crds", "rollout-crd.yaml")
	if _, err := os.Stat(crd); err != nil {
		return "", fmt.Errorf("the Argo Rollouts module has no Rollout CRD: %w", err)
	}
	return crd, nil
}

// KEDAVersion is the KEDA release whose ScaledObject and ScaledJob CRDs
// the tests install: the real CRDs, from the release's Go module
// (config/crd/bases ships with the code), downloaded alone — its
// dependencies are never built or fetched, and the project reads KEDA's
// objects unstructured rather than import its API packages, whose
// go.mod requires some 370 modules.
const KEDAVersion = "v2.20.2"

// KEDACRDs returns the paths of KEDA's ScaledObject and ScaledJob CRDs
// (config/crd/bases of KEDAVersion), downloading the module into Go's
// module cache on first use (`go mod download`), offline after that.
func KEDACRDs() ([]string, error) {
	out, err := exec.Command("go", "mod", "download", "-json", "github.com/kedacore/keda/v2@"+KEDAVersion).Output()
	if err != nil {
		return nil, fmt.Errorf("go mod download github.com/kedacore/keda/v2@%s: %w", KEDAVersion, err)
	}
	var mod struct{ Dir, Error string }
	if err := json.Unmarshal(out, &mod); err != nil {
		return nil, fmt.Errorf("go mod download -json: %w", err)
	}
	if mod.Error != "" || mod.Dir == "" {
		return nil, fmt.Errorf("go mod download github.com/kedacore/keda/v2@%s: %s", KEDAVersion, mod.Error)
	}
	var crds []string
	for _, f := range []string{"keda.sh_scaledobjects.yaml", "keda.sh_scaledjobs.yaml"} {
		crd := filepath.Join(mod.Dir, "config", "crd", "bases", f)
		if _, err := os.Stat(crd); err != nil {
			return nil, fmt.Errorf("the KEDA module has no %s: %w", f, err)
		}
		crds = append(crds, crd)
	}
	return crds, nil
}
