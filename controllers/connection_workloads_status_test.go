package controllers

import (
	"fmt"
	"net/netip"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"

	rgv1 "github.com/retentionguard/retention-guard/api/v1alpha1"
	"github.com/retentionguard/retention-guard/internal/proof"
	"github.com/retentionguard/retention-guard/internal/workloads"
)

// status.unguardedGroups[].workloads says the matcher's answer: surest
// first, the kinds of evidence once each, the strongest evidence in
// words, parked only when the workload matched by configuration alone
// (seed 003's suspended batch), at most 10 workloads.
func TestGroupWorkloads(t *testing.T) {
	g := NewWithT(t)
	withEnv := func(name, value string) corev1.PodTemplateSpec {
		return corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Env: []corev1.EnvVar{{Name: name, Value: value}}}}}}
	}
	snap := workloads.Snapshot{
		Pods: []workloads.Pod{{Namespace: "qim", Name: "fanout-1-a", IPs: []netip.Addr{netip.MustParseAddr("10.1.0.5")},
			Owner: &workloads.Owner{Kind: workloads.ReplicaSet, Name: "fanout-1"}}},
		Owned: []workloads.Owned{{Ref: workloads.Ref{Kind: workloads.ReplicaSet, Namespace: "qim", Name: "fanout-1"},
			Owner: &workloads.Owner{Kind: workloads.Deployment, Name: "fanout"}}},
		Workloads: []workloads.Workload{
			{Ref: workloads.Ref{Kind: workloads.Deployment, Namespace: "qim", Name: "fanout"}, Replicas: 1, Template: withEnv("KAFKA_GROUP_ID", "g")},
			{Ref: workloads.Ref{Kind: workloads.CronJob, Namespace: "ledger", Name: "settle"}, Suspended: true, Template: withEnv("GROUP_ID", "g")},
		},
	}
	for i := range 12 {
		snap.Workloads = append(snap.Workloads, workloads.Workload{Ref: workloads.Ref{Kind: workloads.Deployment, Namespace: "z", Name: fmt.Sprintf("w%02d", i)},
			Replicas: 1, Template: withEnv("ORDERS_GROUP", "g")})
	}
	members := []proof.GroupMember{{MemberID: "m", ClientID: "fanout-0", Host: netip.MustParseAddr("10.1.0.5")}}
	got := workloads.NewIndex(snap).Match("g", members).StatusWorkloads(maxGroupWorkloads)
	g.Expect(got).To(HaveLen(maxGroupWorkloads))
	g.Expect(got[0]).To(Equal(rgv1.GroupWorkload{Kind: "Deployment", Namespace: "qim", Name: "fanout", Confidence: "Certain",
		Evidence: []string{"Environment", "MemberHost"}, Message: "member client fanout-0 at 10.1.0.5 is pod fanout-1-a (and 1 more)"}))
	g.Expect(got[1]).To(Equal(rgv1.GroupWorkload{Kind: "CronJob", Namespace: "ledger", Name: "settle", Confidence: "Likely",
		Evidence: []string{"Environment"}, Message: "container app sets GROUP_ID to the group ID", Parked: true}))
	g.Expect(got[2].Confidence).To(Equal("Possible"))
}
