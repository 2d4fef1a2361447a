package gather

import (
	"fmt"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	rgv1 "github.com/retentionguard/retention-guard/api/v1alpha1"
	"github.com/retentionguard/retention-guard/internal/resolve"
)

// ReasonInvalidSelector: spec.selector does not parse as a Kubernetes label
// selector (an operator it does not know, In without values, a key or value
// no label can have), so it matches no workload and the webhook guards
// nothing. The CRD refuses unknown operators and In, NotIn without values; a policy
// stored before, or with a key or value CEL cannot check, is Stalled with
// this reason until the selector is fixed. Never Ready.
const ReasonInvalidSelector = "InvalidSelector"

// SelectorProblem is the spec problem of a selector that cannot guard
// anything, nil when it parses and selects.
func SelectorProblem(p *rgv1.ConsumerRetentionPolicy) *resolve.SpecProblem {
	sel, err := metav1.LabelSelectorAsSelector(&p.Spec.Selector)
	switch {
	case err != nil:
		return &resolve.SpecProblem{Reason: ReasonInvalidSelector, Message: fmt.Sprintf(
			"spec.selector {%s} is not a label selector (%v): it matches no workload, so no rollout of this consumer is guarded; fix the selector",
			describeSelector(&p.Spec.Selector), err)}
	case sel.Empty():
		return &resolve.SpecProblem{Reason: ReasonInvalidSelector, Message: "spec.selector is empty: it would match every workload of the namespace; set matchLabels or matchExpressions to the consumer's pod labels"}
	}
	return nil
}

// describeSelector writes a selector as stored, parsable or not.
func describeSelector(s *metav1.LabelSelector) string {
	var parts []string
	for k, v := range s.MatchLabels {
		parts = append(parts, fmt.Sprintf("%q: %q", k, v))
	}
	if len(parts) > 1 {
		slices.Sort(parts)
	}
	for _, e := range s.MatchExpressions {
		parts = append(parts, fmt.Sprintf("%q %s %q", e.Key, e.Operator, e.Values))
	}
	return strings.Join(parts, ", ")
}
