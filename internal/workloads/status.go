package workloads

import (
	"fmt"
	"slices"

	rgv1 "github.com/retentionguard/retention-guard/api/v1alpha1"
	"github.com/retentionguard/retention-guard/internal/proof"
)

// maxWorkloadMessage bounds a GroupWorkload's message.
const maxWorkloadMessage = 512

// StatusWorkloads is the match as the API says it (a connection's
// status.unguardedGroups[].workloads, scan --output json): at most limit
// workloads, surest first, each with the kinds of its evidence and its
// strongest evidence in a line.
func (m GroupMatch) StatusWorkloads(limit int) []rgv1.GroupWorkload {
	var out []rgv1.GroupWorkload
	for i, wm := range m.Workloads {
		if i == limit {
			break
		}
		gw := rgv1.GroupWorkload{
			Kind: string(wm.Workload.Kind), Namespace: wm.Workload.Namespace, Name: wm.Workload.Name,
			Confidence: wm.Confidence.String(), Parked: wm.Parked && wm.Confidence < Certain,
		}
		for _, ev := range wm.Evidence {
			if !slices.Contains(gw.Evidence, string(ev.Kind)) {
				gw.Evidence = append(gw.Evidence, string(ev.Kind))
			}
		}
		slices.Sort(gw.Evidence)
		gw.Message = wm.Evidence[0].String()
		if n := len(wm.Evidence) - 1; n > 0 {
			gw.Message += fmt.Sprintf(" (and %d more)", n)
		}
		gw.Message = proof.Truncate(gw.Message, maxWorkloadMessage)
		out = append(out, gw)
	}
	return out
}
