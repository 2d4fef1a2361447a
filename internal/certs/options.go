// Package certs provides the webhook's serving certificate when cert-manager
// does not: open-policy-agent/cert-controller's rotator keeps a self-signed
// CA and a serving certificate in one Secret and injects the CA into the
// ValidatingWebhookConfiguration's caBundle; a small syncer in this package
// copies the Secret's tls.crt and tls.key into the webhook server's
// certificate directory (a writable emptyDir in the chart), where
// controller-runtime's certificate watcher picks up every rotation.
//
// With rotation off (cert-manager, or certificates mounted some other way)
// Setup only waits for the certificate files to appear.
//
// How the manager uses it (the webhook server refuses to start without its
// certificate files: it is built apart and the manager starts it only once
// ReadyChecker asks for it, after ready closed; the handler is registered
// on it before that):
//
//	ready, err := certs.Setup(mgr, certOpts)
//	synced, err := webhook.Setup(ctx, mgr, webhook.Options{Server: server, ...})
//	mgr.AddReadyzCheck("webhook", certs.ReadyChecker(ready, mgr) and then synced)
package certs

import (
	"errors"
	"os"
	"time"

	"github.com/spf13/pflag"
)

// Defaults of the flags; the Helm chart and config/default pass their own
// names explicitly.
const (
	DefaultSecretName               = "retention-guard-webhook-cert"
	DefaultServiceName              = "retention-guard-webhook"
	DefaultWebhookConfigurationName = "retention-guard"
	// DefaultCertDir is controller-runtime's default webhook certificate
	// directory (--webhook-cert-dir).
	DefaultCertDir = "/tmp/k8s-webhook-server/serving-certs"
	// CertFile and KeyFile are the file names in CertDir, and the keys of
	// the Secret (kubernetes.io/tls); controller-runtime reads these names.
	CertFile = "tls.crt"
	KeyFile  = "tls.key"
)

// Options configure the serving certificate.
type Options struct {
	// Enabled turns the built-in rotation on (--cert-rotation). Off: the
	// certificate files come from elsewhere (cert-manager's Secret mounted
	// at CertDir) and Setup only waits for them.
	Enabled bool
	// SecretName is the Secret holding the CA and serving certificate
	// (--cert-secret-name). It must exist (the chart creates it empty): the
	// rotator updates it, and needs no create permission.
	SecretName string
	// SecretNamespace is the namespace of the Secret and the Service
	// (--namespace, default $POD_NAMESPACE).
	SecretNamespace string
	// ServiceName is the webhook Service; the certificate is issued for
	// <service>.<namespace>.svc and its longer and shorter forms
	// (--webhook-service-name).
	ServiceName string
	// WebhookName is the ValidatingWebhookConfiguration whose caBundle the
	// rotator keeps current (--webhook-configuration-name).
	WebhookName string
	// CertDir is where the webhook server reads tls.crt and tls.key. Not a
	// flag of this package: the manager sets it from --webhook-cert-dir.
	CertDir string
	// ExtraDNSNames are added to the serving certificate, e.g. a host name
	// used by an out-of-cluster webhook URL.
	ExtraDNSNames []string
	// SyncInterval is how often the Secret is copied to CertDir once the
	// first copy succeeded (rotations are rare; certwatcher reloads). Default
	// 1m; 1s until the first copy.
	SyncInterval time.Duration
}

// BindFlags registers the certificate flags on fs. CertDir is left to the
// manager's --webhook-cert-dir.
func (o *Options) BindFlags(fs *pflag.FlagSet) {
	fs.BoolVar(&o.Enabled, "cert-rotation", false,
		"Generate and rotate the webhook's serving certificate and CA in --cert-secret-name, and keep the CA bundle of "+
			"--webhook-configuration-name current. Off: the certificate files in --webhook-cert-dir come from elsewhere (cert-manager).")
	fs.StringVar(&o.SecretName, "cert-secret-name", DefaultSecretName,
		"Secret (in --namespace) that holds the rotated CA and serving certificate; it must exist.")
	fs.StringVar(&o.ServiceName, "webhook-service-name", DefaultServiceName,
		"Service in front of the webhook; the serving certificate names <service>.<namespace>.svc.")
	fs.StringVar(&o.WebhookName, "webhook-configuration-name", DefaultWebhookConfigurationName,
		"ValidatingWebhookConfiguration of the webhook: --cert-rotation keeps its caBundle current, and the leader keeps its "+
			"guarded-namespaces matchCondition to the namespaces that hold policies.")
	fs.StringVar(&o.SecretNamespace, "namespace", os.Getenv("POD_NAMESPACE"),
		"The manager's namespace: the certificate Secret, the webhook Service, ClusterKafkaConnections' Secrets and the heartbeat Leases that confirm unchanged proofs live there. Default: $POD_NAMESPACE.")
}

// Validate reports what rotation cannot work without.
func (o *Options) Validate() error {
	if o.CertDir == "" {
		return errors.New("the webhook certificate directory is empty")
	}
	if !o.Enabled {
		return nil
	}
	var errs []error
	if o.SecretNamespace == "" {
		errs = append(errs, errors.New("--cert-rotation needs --namespace (or $POD_NAMESPACE)"))
	}
	if o.SecretName == "" {
		errs = append(errs, errors.New("--cert-rotation needs --cert-secret-name"))
	}
	if o.ServiceName == "" {
		errs = append(errs, errors.New("--cert-rotation needs --webhook-service-name"))
	}
	if o.WebhookName == "" {
		errs = append(errs, errors.New("--cert-rotation needs --webhook-configuration-name"))
	}
	return errors.Join(errs...)
}
