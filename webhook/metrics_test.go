package webhook

import (
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// Every kind and decision has a series from the start, at 0 before any
// request: the first denial after a restart is an increase rate() sees.
func TestDecisionSeriesExistBeforeTheFirstRequest(t *testing.T) {
	families, err := metrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	have := map[string]bool{}
	for _, f := range families {
		if f.GetName() != "retentionguard_admission_decisions_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			l := map[string]string{}
			for _, lp := range m.GetLabel() {
				l[lp.GetName()] = lp.GetValue()
			}
			have[l["kind"]+"/"+l["decision"]] = true
		}
	}
	for _, kind := range []string{"Deployment", "StatefulSet", "Job", "CronJob"} {
		for _, d := range []string{"allowed", "denied", "warned", "audited", "overridden", "skipped", "error"} {
			if !have[kind+"/"+d] {
				t.Errorf("no series retentionguard_admission_decisions_total{kind=%q,decision=%q} before any request", kind, d)
			}
		}
	}
}
