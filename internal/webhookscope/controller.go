package webhookscope

import (
	"context"
	"fmt"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	admissionregistrationv1ac "k8s.io/client-go/applyconfigurations/admissionregistration/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	rgv1 "github.com/retentionguard/retention-guard/api/v1alpha1"
)

// FieldOwner is the field manager of the manager's writes to the webhook
// configuration's guarded-namespaces matchCondition.
const FieldOwner = "retention-guard-webhook-scope"

// Reconciler keeps the guarded-namespaces matchCondition of one webhook of
// one ValidatingWebhookConfiguration equal to the namespaces that hold
// policies. It runs on the leader only. It never creates the configuration
// (that is the installer's) and never touches its other fields.
//
// RBAC (written by hand, like the certificate rotator's, because the patch
// is granted on one name only): get, list and watch
// validatingwebhookconfigurations; patch on ConfigurationName. The chart's
// <fullname>-webhook-scope ClusterRole and config/rbac/webhook_scope_role.yaml
// grant exactly that.
type Reconciler struct {
	// Client is the manager's cached client (policies and webhook
	// configurations come from its informers).
	Client client.Client
	// ConfigurationName is the ValidatingWebhookConfiguration
	// (--webhook-configuration-name).
	ConfigurationName string
	// WebhookName is the webhook in it (webhook.Name).
	WebhookName string
}

// SetupWithManager watches the webhook configuration (by name: a helm
// upgrade or an emergency delete and re-create brings it back to what the
// chart rendered) and every policy (each creation or deletion may change
// the set of namespaces).
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.Client == nil {
		r.Client = mgr.GetClient()
	}
	if r.ConfigurationName == "" || r.WebhookName == "" {
		return fmt.Errorf("webhookscope: the configuration name and the webhook name are required")
	}
	key := reconcile.Request{NamespacedName: types.NamespacedName{Name: r.ConfigurationName}}
	toKey := handler.EnqueueRequestsFromMapFunc(func(context.Context, client.Object) []reconcile.Request {
		return []reconcile.Request{key}
	})
	return ctrl.NewControllerManagedBy(mgr).
		Named("webhookscope").
		For(&admissionregistrationv1.ValidatingWebhookConfiguration{}, builder.WithPredicates(
			predicate.NewPredicateFuncs(func(o client.Object) bool { return o.GetName() == r.ConfigurationName }))).
		Watches(&rgv1.ConsumerRetentionPolicy{}, toKey, builder.WithPredicates(predicate.Funcs{
			// Only creations and deletions change the set of namespaces.
			UpdateFunc: func(event.UpdateEvent) bool { return false },
		})).
		Complete(r)
}

// Reconcile lists the policies, and applies the expression for their
// namespaces when the live one differs.
func (r *Reconciler) Reconcile(ctx context.Context, _ reconcile.Request) (reconcile.Result, error) {
	log := ctrl.LoggerFrom(ctx)
	var vwc admissionregistrationv1.ValidatingWebhookConfiguration
	if err := r.Client.Get(ctx, client.ObjectKey{Name: r.ConfigurationName}, &vwc); err != nil {
		if apierrors.IsNotFound(err) {
			return reconcile.Result{}, nil // uninstalled, or deleted in an emergency: nothing to keep
		}
		return reconcile.Result{}, err
	}
	current, found := currentExpression(&vwc, r.WebhookName)
	if !found {
		// The installer's configuration has no such webhook: adding a
		// partial one would be invalid. Say so once per change.
		log.Info("the webhook configuration has no webhook of this name: not scoping it to the namespaces with policies",
			"configuration", r.ConfigurationName, "webhook", r.WebhookName)
		return reconcile.Result{}, nil
	}
	var policies rgv1.ConsumerRetentionPolicyList
	if err := r.Client.List(ctx, &policies); err != nil {
		return reconcile.Result{}, err
	}
	namespaces := make([]string, 0, len(policies.Items))
	for _, p := range policies.Items {
		namespaces = append(namespaces, p.Namespace)
	}
	want := Expression(namespaces)
	if current == want {
		return reconcile.Result{}, nil
	}
	if err := r.Client.Apply(ctx, applyConfiguration(&vwc, r.WebhookName, want),
		client.FieldOwner(FieldOwner), client.ForceOwnership); err != nil {
		// A conflict (the configuration changed since it was read: its
		// resourceVersion is a precondition) requeues.
		return reconcile.Result{}, fmt.Errorf("scoping webhook %s of %s to the namespaces with policies: %w", r.WebhookName, r.ConfigurationName, err)
	}
	log.Info("the webhook is called for the namespaces that hold policies only", "configuration", r.ConfigurationName,
		"condition", ConditionName, "expression", want, "was", current)
	return reconcile.Result{}, nil
}

// currentExpression is the live guarded-namespaces expression ("" when the
// webhook has none yet), and whether the webhook exists.
func currentExpression(vwc *admissionregistrationv1.ValidatingWebhookConfiguration, webhook string) (string, bool) {
	for _, w := range vwc.Webhooks {
		if w.Name != webhook {
			continue
		}
		for _, c := range w.MatchConditions {
			if c.Name == ConditionName {
				return c.Expression, true
			}
		}
		return "", true
	}
	return "", false
}

// applyConfiguration is the server-side apply configuration that sets the
// condition and nothing else. The observed resourceVersion makes it
// conditional: it can neither create a configuration that was deleted
// meanwhile nor overwrite a change it has not seen.
func applyConfiguration(vwc *admissionregistrationv1.ValidatingWebhookConfiguration, webhook, expression string) *admissionregistrationv1ac.ValidatingWebhookConfigurationApplyConfiguration {
	return admissionregistrationv1ac.ValidatingWebhookConfiguration(vwc.Name).
		WithResourceVersion(vwc.ResourceVersion).
		WithWebhooks(admissionregistrationv1ac.ValidatingWebhook().
			WithName(webhook).
			WithMatchConditions(admissionregistrationv1ac.MatchCondition().
				WithName(ConditionName).
				WithExpression(expression)))
}
