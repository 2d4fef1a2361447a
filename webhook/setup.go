package webhook

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	rgv1 "github.com/retentionguard/retention-guard/api/v1alpha1"
)

// The webhook configuration generated into config/webhook/manifests.yaml by
// `make manifests`: one webhook for apps/v1 Deployments and StatefulSets,
// batch/v1 Jobs and CronJobs, and Argo Rollouts' argoproj.io/v1alpha1
// Rollouts (the chart renders that rule, and the RBAC rule reading
// Rollouts, only where the Rollout CRD is installed: argoRollouts.enabled).
// The scale subresources are included:
// `kubectl scale` and autoscalers scale from zero through them. Jobs and
// CronJobs are guarded like Deployments (issue #8): every Job start is a
// rollout, including the runs a CronJob's controller creates. matchConditions
// (all must hold; each applies to its own kind) let the API server skip
// everything that is not a rollout without calling the webhook, so
// scale-downs and suspends never depend on it; the handler checks again:
//
//   - rollouts-only (apps): create with replicas ≠ 0, scale from zero,
//     unpause, pod template change while replicas > 0;
//   - job-starts-only: create not suspended, or unsuspend;
//   - cronjob-runs-only: create not suspended, unsuspend, or a job template
//     change while not suspended;
//   - argo-rollouts-only: as rollouts-only, with spec.template optional and
//     a spec.workloadRef change counted as a template change (the
//     Rollout's pods then come from the referenced Deployment's template).
//
// +kubebuilder:webhook:path=/validate-apps-v1-workloads,mutating=false,failurePolicy=fail,sideEffects=NoneOnDryRun,groups=apps;batch,resources=deployments;statefulsets;deployments/scale;statefulsets/scale;jobs;cronjobs,verbs=create;update,versions=v1,name=workloads.retentionguard.io,admissionReviewVersions=v1,timeoutSeconds=5,matchPolicy=Equivalent,patch=`{"rules":[{"apiGroups":["apps"],"apiVersions":["v1"],"operations":["CREATE","UPDATE"],"resources":["deployments","statefulsets","deployments/scale","statefulsets/scale"]},{"apiGroups":["batch"],"apiVersions":["v1"],"operations":["CREATE","UPDATE"],"resources":["jobs","cronjobs"]},{"apiGroups":["argoproj.io"],"apiVersions":["v1alpha1"],"operations":["CREATE","UPDATE"],"resources":["rollouts","rollouts/scale"]}],"namespaceSelector":{"matchExpressions":[{"key":"kubernetes.io/metadata.name","operator":"NotIn","values":["kube-system","kube-node-lease"]}]},"matchConditions":[{"name":"rollouts-only","expression":"request.resource.group != 'apps' || (request.operation == 'CREATE' ? !(has(object.spec.replicas) && object.spec.replicas == 0) : has(request.subResource) && request.subResource == 'scale' ? ((!has(oldObject.spec) || !has(oldObject.spec.replicas) || oldObject.spec.replicas == 0) && has(object.spec) && has(object.spec.replicas) && object.spec.replicas > 0) : has(request.subResource) && request.subResource != '' ? false : ((!has(object.spec.replicas) || object.spec.replicas > 0) && ((has(oldObject.spec.replicas) && oldObject.spec.replicas == 0) || (has(oldObject.spec.paused) && oldObject.spec.paused && !(has(object.spec.paused) && object.spec.paused)) || object.spec.template != oldObject.spec.template)))"},{"name":"job-starts-only","expression":"request.resource.group != 'batch' || request.resource.resource != 'jobs' || (request.operation == 'CREATE' ? !(has(object.spec.suspend) && object.spec.suspend) : (has(oldObject.spec.suspend) && oldObject.spec.suspend && !(has(object.spec.suspend) && object.spec.suspend)))"},{"name":"cronjob-runs-only","expression":"request.resource.group != 'batch' || request.resource.resource != 'cronjobs' || (!(has(object.spec.suspend) && object.spec.suspend) && (request.operation == 'CREATE' || (has(oldObject.spec.suspend) && oldObject.spec.suspend) || object.spec.jobTemplate != oldObject.spec.jobTemplate))"},{"name":"argo-rollouts-only","expression":"request.resource.group != 'argoproj.io' || (request.operation == 'CREATE' ? !(has(object.spec.replicas) && object.spec.replicas == 0) : has(request.subResource) && request.subResource == 'scale' ? ((!has(oldObject.spec) || !has(oldObject.spec.replicas) || oldObject.spec.replicas == 0) && has(object.spec) && has(object.spec.replicas) && object.spec.replicas > 0) : has(request.subResource) && request.subResource != '' ? false : ((!has(object.spec.replicas) || object.spec.replicas > 0) && ((has(oldObject.spec.replicas) && oldObject.spec.replicas == 0) || (has(oldObject.spec.paused) && oldObject.spec.paused && !(has(object.spec.paused) && object.spec.paused)) || has(object.spec.template) != has(oldObject.spec.template) || (has(object.spec.template) && object.spec.template != oldObject.spec.template) || has(object.spec.workloadRef) != has(oldObject.spec.workloadRef) || (has(object.spec.workloadRef) && object.spec.workloadRef != oldObject.spec.workloadRef))))"}]}`
//
// The webhook reads policies (informer), ConfigMaps and, for scale
// requests, the workload; it records events on policies.
//
// +kubebuilder:rbac:groups=retentionguard.io,resources=consumerretentionpolicies,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=configmaps,verbs=get
// +kubebuilder:rbac:groups=apps,resources=deployments;statefulsets,verbs=get
// +kubebuilder:rbac:groups=argoproj.io,resources=rollouts,verbs=get
//
// Jobs and CronJobs need no read: everything (the pod template, the owning
// CronJob's name) is in the request.
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

const (
	// Path is where the handler is served on the manager's webhook server.
	Path = "/validate-apps-v1-workloads"
	// Name is the webhook's name in the ValidatingWebhookConfiguration.
	Name = "workloads.retentionguard.io"
	// TimeoutSeconds is the webhook configuration's timeoutSeconds; the
	// handler's own budget stays below it.
	TimeoutSeconds = 5
	// DefaultHandlerTimeout bounds one admission decision.
	DefaultHandlerTimeout = 4 * time.Second
	// DefaultLiveCheckTimeout bounds one live re-check
	// (--webhook-live-check-timeout).
	DefaultLiveCheckTimeout = 3 * time.Second
	// setupTimeout bounds Setup's wait for the policy informer (it does
	// not wait before the manager starts).
	setupTimeout = 30 * time.Second
	// EventSource is the reporting controller of the webhook's events.
	EventSource = "retention-guard-webhook"
)

// LiveChecker re-proves one policy now, when its status proof is missing
// or stale. It must honour ctx's deadline; the handler stops waiting at the
// deadline either way. It must not modify policy (it gets a copy).
type LiveChecker interface {
	Check(ctx context.Context, policy *rgv1.ConsumerRetentionPolicy) (*rgv1.ProofStatus, error)
}

// Options configure the handler.
type Options struct {
	// LiveCheckTimeout bounds one live re-check (--webhook-live-check-timeout).
	// Default 3s.
	LiveCheckTimeout time.Duration
	// HandlerTimeout bounds one admission decision; keep it below the
	// webhook's timeoutSeconds (5s). Default 4s.
	HandlerTimeout time.Duration
	// LiveChecker re-proves a policy whose status proof is stale or
	// missing. nil: such a policy's verdict is Unknown.
	LiveChecker LiveChecker
	// Clock returns now; default time.Now.
	Clock func() time.Time
	// ConfigMapReader reads the ConfigMaps named by the pod template.
	// Setup uses the manager's API reader (fresh, no cluster-wide ConfigMap
	// informer); NewHandler defaults to the policy reader.
	ConfigMapReader client.Reader
	// WorkloadReader reads the Deployment, StatefulSet or Rollout of a
	// scale subresource request, and the Deployment a Rollout's
	// spec.workloadRef names. Setup uses the manager's API reader; NewHandler
	// defaults to the policy reader.
	WorkloadReader client.Reader
	// Heartbeats reads the heartbeat Leases policies' statuses name (the
	// manager's cache, holding only those). nil: a status proof is fresh
	// by its checkedAt alone.
	Heartbeats client.Reader
	// Server is the webhook server Setup registers the handler on; nil:
	// the manager's (mgr.GetWebhookServer, which adds the server to the
	// manager at once: it then starts with the manager, and fails to
	// without its certificate files). Give the server the manager was
	// built with, to register before the certificate is in place.
	Server webhook.Server
	// PolicyIndex is the policy informer, read without copying: once it
	// has synced, a request's policies come from its namespace index (the
	// informer's own objects, read-only), not from a List through the
	// reader (a copy of each policy per request). Setup sets it to the
	// manager's informer when that informer exposes its store (not with
	// several --watch-namespaces); nil: every request Lists.
	PolicyIndex PolicyIndex
	// Namespaces are the namespaces the policy cache holds, when the
	// manager watches only some (--watch-namespaces); empty: all. A
	// rollout elsewhere is not guarded — no policy there is reconciled or
	// cached — and is allowed without reading policies (decision
	// "skipped"); give the webhook configuration a namespaceSelector to
	// match so the API server does not call for them.
	Namespaces []string
}

func (o Options) withDefaults(reader client.Reader) Options {
	if o.LiveCheckTimeout <= 0 {
		o.LiveCheckTimeout = DefaultLiveCheckTimeout
	}
	if o.HandlerTimeout <= 0 {
		o.HandlerTimeout = DefaultHandlerTimeout
	}
	if o.Clock == nil {
		o.Clock = time.Now
	}
	if o.ConfigMapReader == nil {
		o.ConfigMapReader = reader
	}
	if o.WorkloadReader == nil {
		o.WorkloadReader = reader
	}
	return o
}

// Setup registers the validating handler at Path on the webhook server
// (Options.Server) and returns the handler's readiness check: failing until
// the policy informer has synced, so a replica never takes admission
// traffic it would answer without its policies. Call it before the manager
// starts: the handler is then in place before the server serves, so the
// path never answers 404. Policies are read from the manager's informer
// cache, by namespace through the informer's built-in namespace index (so
// a request costs O(policies in its namespace)): from the index itself,
// without copying, once the informer has synced (Options.PolicyIndex); no
// other index is needed. The policy informer is created here so it starts and syncs
// with the manager, and its delete events drop parsed selectors. The
// metrics are registered on controller-runtime's registry when the package
// loads.
func Setup(ctx context.Context, mgr ctrl.Manager, opts Options) (healthz.Checker, error) {
	if opts.ConfigMapReader == nil {
		opts.ConfigMapReader = mgr.GetAPIReader()
	}
	if opts.WorkloadReader == nil {
		opts.WorkloadReader = mgr.GetAPIReader()
	}
	// Before the manager starts, GetInformer creates the informer and
	// returns; after, it waits for the sync: bounded either way.
	ctx, cancel := context.WithTimeout(ctx, setupTimeout)
	defer cancel()
	inf, err := mgr.GetCache().GetInformer(ctx, &rgv1.ConsumerRetentionPolicy{})
	if err != nil {
		return nil, fmt.Errorf("webhook: informer for ConsumerRetentionPolicies: %w", err)
	}
	if idx, ok := inf.(PolicyIndex); ok && opts.PolicyIndex == nil {
		opts.PolicyIndex = idx
	}
	h := NewHandler(mgr.GetCache(), mgr.GetEventRecorder(EventSource), opts)
	if _, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{DeleteFunc: h.forgetPolicy}); err != nil {
		return nil, fmt.Errorf("webhook: watching ConsumerRetentionPolicy deletions: %w", err)
	}
	server := opts.Server
	if server == nil {
		server = mgr.GetWebhookServer()
	}
	server.Register(Path, &webhook.Admission{Handler: h})
	return func(*http.Request) error {
		if !inf.HasSynced() {
			return errNotSynced
		}
		return nil
	}, nil
}

// PolicyIndex is what the handler reads of the policy informer: a
// client-go SharedIndexInformer is one.
type PolicyIndex interface {
	HasSynced() bool
	GetIndexer() toolscache.Indexer
}

var errNotSynced = errors.New("the admission handler's policy cache has not synced yet")

// NewHandler returns the admission handler reading policies from reader
// (an informer cache in production: it is listed per request) and
// recording events with recorder (nil: no events). For tests and
// benchmarks without a manager.
func NewHandler(reader client.Reader, recorder events.EventRecorder, opts Options) *Handler {
	h := &Handler{
		policies:  reader,
		recorder:  recorder,
		opts:      opts.withDefaults(reader),
		selectors: newSelectorCache(),
		index:     opts.PolicyIndex,
	}
	if len(opts.Namespaces) > 0 {
		h.namespaces = make(map[string]bool, len(opts.Namespaces))
		for _, ns := range opts.Namespaces {
			h.namespaces[ns] = true
		}
	}
	return h
}

func (h *Handler) forgetPolicy(obj any) {
	if t, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	if p, ok := obj.(*rgv1.ConsumerRetentionPolicy); ok {
		h.selectors.forget(p.UID)
	}
}
