package webhook

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	rgv1 "github.com/retentionguard/retention-guard/api/v1alpha1"
	"github.com/retentionguard/retention-guard/internal/proof"
	"github.com/retentionguard/retention-guard/internal/shard"
)

// Handler is the validating admission handler for apps/v1 Deployments and
// StatefulSets (and their scale subresources), batch/v1 Jobs and CronJobs,
// and Argo Rollouts (argoproj.io/v1alpha1, scale included). It gathers — policies from
// the cache, proofs (status or live), ConfigMaps — and leaves the judgement
// to the pure functions of decode.go, rollout.go, match.go, decision.go and
// message.go.
type Handler struct {
	policies  client.Reader
	recorder  events.EventRecorder
	opts      Options
	selectors *selectorCache
	// index is the policy informer's store (Options.PolicyIndex); nil:
	// policies are listed through the reader.
	index PolicyIndex
	// namespaces the policy cache holds; nil: all.
	namespaces map[string]bool
}

var _ admission.Handler = (*Handler)(nil)

// Handle answers one admission request.
func (h *Handler) Handle(ctx context.Context, req admission.Request) admission.Response {
	if req.UID == "" || req.Operation == "" || req.Resource.Resource == "" {
		// No API server sends this (a body without a request decodes to
		// an empty one): refused, never read as "not a rollout".
		return admission.Denied("retention-guard: not an admission request (the AdmissionReview has no request uid, operation or resource)")
	}
	start := time.Now()
	kind := workloadKind(req.Resource.Group, req.Resource.Resource)
	resp, oc := h.handle(ctx, req, kind)
	if kind == "" {
		kind = "other"
	}
	decisionsTotal.WithLabelValues(kind, string(oc)).Inc()
	durationSeconds.WithLabelValues(kind, string(oc)).Observe(time.Since(start).Seconds())
	return resp
}

// The kinds the webhook guards.
const (
	kindDeployment  = "Deployment"
	kindStatefulSet = "StatefulSet"
	kindJob         = "Job"
	kindCronJob     = "CronJob"
	// kindRollout is Argo Rollouts' argoproj.io/v1alpha1 Rollout: guarded
	// like a Deployment (rollout.go).
	kindRollout = "Rollout"
)

// argoprojGroup is Argo Rollouts' API group.
const argoprojGroup = "argoproj.io"

func workloadKind(group, resource string) string {
	switch {
	case group == appsv1.GroupName && resource == "deployments":
		return kindDeployment
	case group == appsv1.GroupName && resource == "statefulsets":
		return kindStatefulSet
	case group == batchv1.GroupName && resource == "jobs":
		return kindJob
	case group == batchv1.GroupName && resource == "cronjobs":
		return kindCronJob
	case group == argoprojGroup && resource == "rollouts":
		return kindRollout
	}
	return ""
}

func (h *Handler) handle(ctx context.Context, req admission.Request, kind string) (admission.Response, outcome) {
	if kind == "" || (req.SubResource != "" && (req.SubResource != "scale" || kind == kindJob || kind == kindCronJob)) {
		return admission.Allowed("not a Deployment, StatefulSet, Job, CronJob or Rollout rollout"), outcomeSkipped
	}
	if h.namespaces != nil && !h.namespaces[req.Namespace] {
		return admission.Allowed("namespace not watched by retention-guard"), outcomeSkipped
	}
	cur, old, err := decodeWorkloads(req, kind)
	if err != nil {
		return admission.Errored(http.StatusBadRequest, err), outcomeError
	}
	ro := detectRollout(req.Operation, old, cur)
	if ro == rolloutNone {
		return admission.Allowed("not a rollout"), outcomeSkipped
	}

	dl := &requestDeadline{parent: ctx, at: time.Now().Add(h.opts.HandlerTimeout)}
	defer dl.stop()
	t := target{Kind: kind, Namespace: req.Namespace, Name: req.Name, Rollout: ro, User: req.UserInfo.Username,
		CronJob: cur.CronJob, CronJobUID: cur.CronJobUID, ScaledJob: cur.ScaledJob, ScaledJobUID: cur.ScaledJobUID}
	if t.Name == "" {
		t.Name = cur.Name // generateName on create
	}
	tmpl, oldLabels, what, err := h.podTemplates(dl, req, t, cur, old)
	if err != nil {
		return failClosed(t, what, err), outcomeError
	}

	policies, err := h.namespacePolicies(dl, req.Namespace)
	if err != nil {
		logf.FromContext(ctx).Error(err, "listing policies", "namespace", req.Namespace)
		return failClosed(t, "listing the namespace's ConsumerRetentionPolicies", err), outcomeError
	}
	matched, invalid := matchPolicies(h.selectors, policies, tmpl.Labels, oldLabels)
	for _, p := range invalid {
		logf.FromContext(ctx).Info("policy selector does not parse; it matches nothing", "policy", p.Namespace+"/"+p.Name)
	}
	if len(matched) == 0 {
		return admission.Allowed("no ConsumerRetentionPolicy selects this workload"), outcomeAllowed
	}
	slices.SortFunc(matched, func(a, b *rgv1.ConsumerRetentionPolicy) int { return strings.Compare(a.Name, b.Name) })

	evals := h.gather(dl, req.Namespace, matched, tmpl, startsConsumers(kind, ro))
	d := decide(evals, cur.Annotations[OverrideAnnotation])
	dryRun := req.DryRun != nil && *req.DryRun
	if !dryRun {
		h.record(t, &d)
	}
	ws := warnings(&d)
	if !d.allowed() {
		msg := denyMessage(t, &d, h.opts.Clock())
		logf.FromContext(ctx).V(1).Info("rollout denied", "workload", t.String(), "rollout", string(ro), "dryRun", dryRun)
		return admission.Denied(msg).WithWarnings(ws...), d.Outcome
	}
	resp := admission.Allowed("")
	if len(ws) > 0 {
		resp = resp.WithWarnings(ws...)
	}
	return resp, d.Outcome
}

// podTemplates reads the pod template the rollout would run — for a scale
// request the stored workload's, for a Rollout with spec.workloadRef the
// referenced Deployment's — and the labels of the old one (what a policy
// may have selected the workload by). On failure, what says what could
// not be read.
func (h *Handler) podTemplates(dl *requestDeadline, req admission.Request, t target, cur, old *workload) (
	tmpl *corev1.PodTemplateSpec, oldLabels map[string]string, what string, err error) {
	ctx := dl.parent // for the logger; reads wait within dl.context()
	if req.SubResource == "scale" {
		if err := h.readScaled(dl.context(), t.Kind, req.Namespace, req.Name, cur); err != nil {
			logf.FromContext(ctx).Error(err, "reading the scaled workload", "workload", t.String())
			return nil, nil, "reading the " + t.Kind + " being scaled", err
		}
	}
	if cur.WorkloadRef != nil {
		// The Rollout's pods come from the referenced Deployment's
		// template: its labels and environment are what policies select
		// and judge.
		if err := h.readReferencedTemplate(dl.context(), req.Namespace, cur); err != nil {
			logf.FromContext(ctx).Error(err, "reading the Rollout's spec.workloadRef", "workload", t.String())
			return nil, nil, "reading the Deployment the Rollout's spec.workloadRef names", err
		}
	}
	if tmpl, err = cur.template(); err != nil {
		return nil, nil, "reading the pod template", err
	}
	oldLabels = tmpl.Labels
	if old != nil && req.SubResource == "" && !bytes.Equal(old.RawTemplate, cur.RawTemplate) {
		if oldLabels, err = old.labels(cur); err != nil {
			return nil, nil, "reading the old pod template", err
		}
	}
	return tmpl, oldLabels, "", nil
}

// namespacePolicies returns the namespace's policies, read-only: from the
// policy informer's namespace index once it has synced (the informer's own
// objects, no copy), else listed through the reader (the cache, which
// waits for its sync within the request's deadline: a replica that cannot
// read its policies refuses, it never judges by a partial list).
func (h *Handler) namespacePolicies(dl *requestDeadline, namespace string) ([]*rgv1.ConsumerRetentionPolicy, error) {
	if h.index != nil && h.index.HasSynced() {
		objs, err := h.index.GetIndexer().ByIndex(toolscache.NamespaceIndex, namespace)
		if err != nil {
			return nil, err
		}
		out := make([]*rgv1.ConsumerRetentionPolicy, len(objs))
		for i, o := range objs {
			p, ok := o.(*rgv1.ConsumerRetentionPolicy)
			if !ok {
				return nil, fmt.Errorf("the policy index holds a %T", o)
			}
			out[i] = p
		}
		return out, nil
	}
	var list rgv1.ConsumerRetentionPolicyList
	if err := h.policies.List(dl.context(), &list, client.InNamespace(namespace), client.UnsafeDisableDeepCopy); err != nil {
		return nil, err
	}
	out := make([]*rgv1.ConsumerRetentionPolicy, len(list.Items))
	for i := range list.Items {
		out[i] = &list.Items[i]
	}
	return out, nil
}

// requestDeadline is the handler's deadline, Options.HandlerTimeout from
// when a rollout is judged, made a context only when something waits (the
// API server, a cache not yet synced, a live check): a rollout judged from
// the informer's objects alone never waits, and a context with a deadline
// costs four allocations and a timer per request (issue 34). The deadline
// is the same instant whenever the context is made. Not for concurrent
// use: the handling goroutine makes the context before it starts others.
type requestDeadline struct {
	parent context.Context
	at     time.Time
	ctx    context.Context
	cancel context.CancelFunc
}

// context returns the request's context with the deadline, made on first
// use.
func (d *requestDeadline) context() context.Context {
	if d.ctx == nil {
		d.ctx, d.cancel = context.WithDeadline(d.parent, d.at)
	}
	return d.ctx
}

// stop releases the context's timer, if one was made.
func (d *requestDeadline) stop() {
	if d.cancel != nil {
		d.cancel()
	}
}

// failClosed refuses a rollout the handler could not judge.
func failClosed(t target, what string, err error) admission.Response {
	return admission.Denied(proof.Truncate(fmt.Sprintf("retention-guard refused this rollout (%s) of %s: it could not finish %s: %v. "+
		"Retry; if this persists, check the retention-guard manager.", t.Rollout, t, what, err), maxMessage))
}

// gather finds each matching policy's proof — for a start (consumers that
// were not running begin), a live check: the status may be up to an
// interval old, and a start is exactly when a stale Proven lets a consumer
// skip records; for other rollouts the status proof when fresh, else a
// live check; all live checks run at once — and resolves the consumer
// settings the policy names in the pod template.
func (h *Handler) gather(dl *requestDeadline, namespace string, policies []*rgv1.ConsumerRetentionPolicy, tmpl *corev1.PodTemplateSpec, start bool) []policyEval {
	now := h.opts.Clock()
	evals := make([]policyEval, len(policies))
	cms := &configMapReader{reader: h.opts.ConfigMapReader, namespace: namespace, deadline: dl}
	var wg *sync.WaitGroup // allocated for the first live check: none on the status path
	for i, p := range policies {
		e := &evals[i]
		e.Policy = p
		fresh, reason, detail := false, ReasonLiveCheckFailed, "a start is judged on a live observation"
		if !start || h.opts.LiveChecker == nil {
			fresh, reason, detail = statusProofFreshness(p, h.heartbeat(dl, p), now)
		}
		switch {
		case fresh:
			e.Proof = p.Status.Proof
		case h.opts.LiveChecker == nil:
			e.NoProofReason, e.NoProofDetail = reason, detail+"; no live check is configured"
		default:
			if wg == nil {
				wg = new(sync.WaitGroup)
			}
			wg.Add(1)
			// The closure captures copies: w, not wg (which would move wg
			// to the heap), and the context made here (requestDeadline is
			// not for concurrent use).
			w, ctx := wg, dl.context()
			go func() {
				defer w.Done()
				proof, failure := h.liveCheck(ctx, p)
				if proof == nil {
					e.NoProofReason, e.NoProofDetail = ReasonLiveCheckFailed, failure+" ("+detail+")"
					return
				}
				e.Proof, e.Live = proof, true
			}()
		}
	}
	// ConfigMap reads go on while live checks run (each eval's Consumer
	// is written here alone; the live checks write its other fields).
	for i, p := range policies {
		if p.Spec.Consumer != nil {
			evals[i].Consumer = resolveConsumerEnv(dl.parent, cms, p.Spec.Consumer, tmpl)
		}
	}
	if wg != nil {
		wg.Wait()
	}
	return evals
}

// heartbeat is the renewTime of the heartbeat Lease the policy's status
// names, zero when there is none or it cannot be read (the proof is then
// as fresh as its checkedAt).
func (h *Handler) heartbeat(dl *requestDeadline, p *rgv1.ConsumerRetentionPolicy) time.Time {
	ref := p.Status.Heartbeat
	if ref == nil || h.opts.Heartbeats == nil {
		return time.Time{}
	}
	var l coordinationv1.Lease
	if err := h.opts.Heartbeats.Get(dl.context(), client.ObjectKey{Namespace: ref.Namespace, Name: ref.Name}, &l); err != nil ||
		l.Spec.RenewTime == nil {
		return time.Time{}
	}
	if !shard.Vouches(l.Annotations, p.Labels) {
		// A shard's Lease, and the policy was relabelled to another shard:
		// the old shard no longer proves it.
		return time.Time{}
	}
	return l.Spec.RenewTime.Time
}

// liveCheck asks the LiveChecker for a proof within LiveCheckTimeout; on
// failure it says why. It stops waiting at the deadline even when the
// checker does not; a checker that panics fails the check, not the process.
func (h *Handler) liveCheck(ctx context.Context, p *rgv1.ConsumerRetentionPolicy) (*rgv1.ProofStatus, string) {
	ctx, cancel := context.WithTimeout(ctx, h.opts.LiveCheckTimeout)
	defer cancel()
	type answer struct {
		proof *rgv1.ProofStatus
		err   error
	}
	ch := make(chan answer, 1)
	policy := p.DeepCopy()
	go func() {
		defer func() {
			if r := recover(); r != nil {
				ch <- answer{err: fmt.Errorf("live check panicked: %v", r)}
			}
		}()
		proof, err := h.opts.LiveChecker.Check(ctx, policy)
		ch <- answer{proof: proof, err: err}
	}()
	var a answer
	select {
	case a = <-ch:
	case <-ctx.Done():
		a.err = ctx.Err()
	}
	switch {
	case errors.Is(a.err, context.DeadlineExceeded):
		return nil, "the live check did not answer within " + proof.FormatDurationShort(h.opts.LiveCheckTimeout)
	case a.err != nil:
		return nil, "the live check failed: " + a.err.Error()
	case a.proof == nil:
		return nil, "the live check returned no proof"
	}
	return a.proof, ""
}

// record puts an event on each policy that failed for this rollout (and on
// each overridden one, naming the user). Never called for dry-run
// requests.
func (h *Handler) record(t target, d *decision) {
	if h.recorder == nil {
		return
	}
	var related runtime.Object // an untyped nil unless there is a CronJob or ScaledJob
	if ref := t.related(); ref != nil {
		related = ref
	}
	for i := range d.Policies {
		r := &d.Policies[i]
		reason := eventReason(r)
		if reason == "" {
			continue
		}
		h.recorder.Eventf(r.Policy, related, corev1.EventTypeWarning, reason, "AdmitRollout", "%s", eventNote(t, r, reason))
	}
}

// eventReason is the reason of the event a rollout records on a policy;
// "" for none (the policy does not fail).
func eventReason(r *policyResult) string {
	switch {
	case r.Overridden:
		return EventProofOverridden
	case !r.failing():
		return ""
	case r.warnsOnly():
		return EventRolloutWarned
	case r.Enforcement == rgv1.EnforcementAudit:
		return EventRolloutAudited
	default:
		return EventRolloutDenied
	}
}
