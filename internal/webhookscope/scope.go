// Package webhookscope keeps the admission webhook's reach to the
// namespaces that hold ConsumerRetentionPolicies.
//
// The webhook runs with failurePolicy Fail: while no manager replica
// answers, every request it is called for is refused. Called for every
// namespace, an outage of the manager would block rollouts cluster-wide —
// ingress, monitoring, cert-manager — although no policy guards them
// (Gatekeeper #291, Kyverno #16177 and #4686 are this incident). So the
// webhook carries one more matchCondition, named guarded-namespaces,
//
//	request.namespace in ["orders", "settlement"]
//
// which the API server evaluates itself, before calling anyone: a request
// from any other namespace never reaches the webhook, up or down. The leader
// keeps the list equal to the namespaces that hold a policy, the way
// Kyverno keeps its webhook rules to what its policies match.
//
// Why a matchCondition and not the namespaceSelector: the chart owns the
// namespaceSelector (its exclusions, watchNamespaces), and Helm applies
// server-side; a field two managers write makes `helm upgrade` fail with a
// conflict. matchConditions is a list keyed by name, so the manager owns
// this entry alone (server-side apply with its own field manager) and Helm
// never conflicts with it. The chart renders the entry once, reading the
// live value back with `lookup` on upgrades, so that a fresh install guards
// no namespace (not every namespace) until the manager has listed the
// policies.
package webhookscope

import (
	"slices"
	"strconv"
	"strings"
)

// ConditionName names the matchCondition the manager maintains; the chart
// renders it under the same name.
const ConditionName = "guarded-namespaces"

// Expression is the matchCondition's CEL expression for the namespaces
// that hold policies (sorted, deduplicated): true exactly for requests in
// one of them. With none it is `request.namespace in []`, always false: no
// policy, nothing to guard.
func Expression(namespaces []string) string {
	ns := slices.Clone(namespaces)
	slices.Sort(ns)
	ns = slices.Compact(ns)
	quoted := make([]string, 0, len(ns))
	for _, n := range ns {
		if n == "" {
			continue
		}
		quoted = append(quoted, strconv.Quote(n))
	}
	return "request.namespace in [" + strings.Join(quoted, ", ") + "]"
}
