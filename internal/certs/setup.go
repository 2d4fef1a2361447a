package certs

import (
	"fmt"
	"net/http"
	"sync"

	"github.com/open-policy-agent/cert-controller/pkg/rotator"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
)

// rotatorName names the rotator's controller and its field manager.
const rotatorName = "retention-guard-cert-rotator"

// Setup adds what provides the webhook's serving certificate to mgr. The
// returned channel closes once the certificate files are in o.CertDir and,
// with rotation on, the CA is injected into the webhook configuration.
// The webhook server fails to start without its files: do not hand it to
// the manager (mgr.GetWebhookServer) before the channel closes — register
// the handler on the server the manager was built with — and gate
// readiness on it with ReadyChecker, which hands the server over then. Every replica runs it (no leader election): each one serves
// the webhook and needs the files.
func Setup(mgr ctrl.Manager, o Options) (<-chan struct{}, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	if o.SyncInterval <= 0 {
		o.SyncInterval = defaultSyncInterval
	}
	log := ctrl.Log.WithName("certs")
	if !o.Enabled {
		ready := make(chan struct{})
		if err := mgr.Add(&fileWaiter{dir: o.CertDir, ready: ready, log: log}); err != nil {
			return nil, err
		}
		return ready, nil
	}

	secret := types.NamespacedName{Namespace: o.SecretNamespace, Name: o.SecretName}
	ready := make(chan struct{})
	svc := fmt.Sprintf("%s.%s.svc", o.ServiceName, o.SecretNamespace)
	cr := &rotator.CertRotator{
		SecretKey:      secret,
		CertDir:        o.CertDir,
		CAName:         "retention-guard-webhook-ca",
		CAOrganization: "retention-guard",
		DNSName:        svc,
		ExtraDNSNames: append([]string{
			svc + ".cluster.local",
			o.ServiceName + "." + o.SecretNamespace,
			o.ServiceName,
		}, o.ExtraDNSNames...),
		IsReady:               ready,
		Webhooks:              []rotator.WebhookInfo{{Name: o.WebhookName, Type: rotator.Validating}},
		FieldOwner:            rotatorName,
		ControllerName:        rotatorName,
		RequireLeaderElection: false,
		CertName:              CertFile,
		KeyName:               KeyFile,
	}
	if err := rotator.AddRotator(mgr, cr); err != nil {
		return nil, fmt.Errorf("adding the certificate rotator: %w", err)
	}
	if err := mgr.Add(&secretSyncer{
		reader:   mgr.GetAPIReader(),
		key:      secret,
		dir:      o.CertDir,
		interval: o.SyncInterval,
		log:      log,
	}); err != nil {
		return nil, err
	}
	return ready, nil
}

// webhookServerGetter is the part of ctrl.Manager ReadyChecker needs.
type webhookServerGetter interface {
	GetWebhookServer() webhook.Server
}

// ReadyChecker is the readiness check of a replica that serves the webhook:
// not ready until ready closes (certificates in place, CA injected), then
// ready once the webhook server answers TLS (its StartedChecker). The
// webhook server is looked up only after ready closes: looking it up adds
// it to the manager, and it must not start before its files exist.
func ReadyChecker(ready <-chan struct{}, mgr webhookServerGetter) healthz.Checker {
	var (
		once    sync.Once
		started healthz.Checker
	)
	return func(req *http.Request) error {
		select {
		case <-ready:
		default:
			return fmt.Errorf("the webhook's serving certificate is not ready yet")
		}
		once.Do(func() { started = mgr.GetWebhookServer().StartedChecker() })
		return started(req)
	}
}
