package gather

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"

	rgv1 "github.com/retentionguard/retention-guard/api/v1alpha1"
)

// The unselected-consumer check of a policy (seed 000: the fan-out's
// canary Deployment its selector misses) stands while the group's members
// and the selector stay the same, for unselectedRecheck; a replica that
// only live-checks drops what it no longer uses, and the reconciler
// forgets a deleted policy.
func TestUnselectedMemo(t *testing.T) {
	at := time.Date(2026, 11, 30, 3, 0, 0, 0, time.UTC)
	fanout := types.NamespacedName{Namespace: "qim", Name: "fanout"}
	other := types.NamespacedName{Namespace: "qim", Name: "other"}
	canary := []UnselectedConsumer{{Message: "Deployment/fanout-canary consumes the group",
		Fact: rgv1.WarningFact{Type: WarningConsumerWorkload, Reason: WarningReasonNotSelected, Subject: "Deployment/fanout-canary"}}}
	var m unselectedMemo
	m.put(fanout, "10.1.0.6|1|app=fanout", at, canary, nil)
	if e, ok := m.get(fanout, "10.1.0.6|1|app=fanout", at.Add(unselectedRecheck-time.Second)); !ok || len(e.unselected) != 1 {
		t.Fatalf("within unselectedRecheck, the same members and selector: %+v, %v", e, ok)
	}
	if _, ok := m.get(fanout, "10.1.0.6,10.1.0.7|2|app=fanout", at); ok {
		t.Error("another member set is checked again")
	}
	if _, ok := m.get(fanout, "10.1.0.6|1|app=fanout", at.Add(unselectedRecheck)); ok {
		t.Error("after unselectedRecheck the check is made again")
	}
	// Another policy's put, a recheck later, drops the stale entry.
	m.put(other, "k", at.Add(unselectedRecheck), nil, nil)
	if _, kept := m.m[fanout]; kept {
		t.Error("a stale entry outlives the purge")
	}
	m.forget(other)
	if len(m.m) != 0 {
		t.Errorf("forgotten: %v left", m.m)
	}
}
