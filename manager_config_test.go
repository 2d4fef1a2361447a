package main

import (
	"maps"
	"slices"
	"testing"

	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/cache"

	"github.com/retentionguard/retention-guard/internal/heartbeat"
)

// What the manager's cache holds decides what it reads and what its RBAC
// must grant: --watch-namespaces narrows policies and Secrets to those
// namespaces plus the manager's own (ClusterKafkaConnections' Secrets),
// and of Leases it holds only the heartbeats, only in its own namespace.
func TestManagerCacheFollowsTheFlags(t *testing.T) {
	heartbeat := labels.SelectorFromSet(labels.Set{heartbeat.Label: "true"})
	for _, c := range []struct {
		name           string
		watch          []string
		namespace      string // --namespace
		wantNamespaces []string
		wantLeases     bool
	}{
		{name: "defaults: every namespace, no heartbeat Leases"},
		{name: "the manager's namespace: heartbeat Leases there", namespace: "rg-system", wantLeases: true},
		{name: "watched namespaces and the manager's", watch: []string{"team-a", "team-b"}, namespace: "rg-system",
			wantNamespaces: []string{"rg-system", "team-a", "team-b"}, wantLeases: true},
		{name: "watched namespaces only", watch: []string{"team-a"}, wantNamespaces: []string{"team-a"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			o := &managerOptions{watchNamespaces: c.watch}
			o.certs.SecretNamespace = c.namespace
			opts := managerCache(o)

			if got := slices.Sorted(maps.Keys(opts.DefaultNamespaces)); !slices.Equal(got, c.wantNamespaces) {
				t.Errorf("namespaces %v, want %v (none: all)", got, c.wantNamespaces)
			}
			var leases *cache.ByObject
			for obj, by := range opts.ByObject {
				if _, ok := obj.(*coordinationv1.Lease); ok {
					leases = &by
				}
			}
			switch {
			case !c.wantLeases && leases != nil:
				t.Errorf("Leases cached without a manager namespace: %+v", *leases)
			case c.wantLeases && leases == nil:
				t.Fatal("no heartbeat Leases cached")
			case c.wantLeases:
				if got := slices.Collect(maps.Keys(leases.Namespaces)); !slices.Equal(got, []string{c.namespace}) {
					t.Errorf("Leases cached in %v, want only %s", got, c.namespace)
				}
				if leases.Label == nil || leases.Label.String() != heartbeat.String() {
					t.Errorf("Leases selected by %v, want %v", leases.Label, heartbeat)
				}
			}
			if opts.DefaultTransform == nil {
				t.Error("managed fields are kept in the cache")
			}
		})
	}
}
