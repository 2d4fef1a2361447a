package main

import (
	"maps"
	"reflect"
	"slices"
	"testing"

	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	rgv1 "github.com/retentionguard/retention-guard/api/v1alpha1"
	"github.com/retentionguard/retention-guard/internal/heartbeat"
	"github.com/retentionguard/retention-guard/internal/shard"
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

// Seed 003, past one manager: each shard elects its own leader (a name
// derived from its selector, stable across restarts and spellings), an
// explicit --leader-election-id wins, and an unsharded manager keeps the
// name it always had. A shard without the webhook caches only its
// policies and connections; one serving the webhook caches them all.
func TestShardElectionIDAndCache(t *testing.T) {
	opts := func(selector string, webhook bool, id string) *managerOptions {
		o := &managerOptions{watchLabelSelector: selector, webhookEnabled: webhook, leaderElectionID: id}
		var err error
		if o.shard, err = shard.Parse(selector); err != nil {
			t.Fatal(err)
		}
		return o
	}
	a, a2, b := electionIDFor(opts("retentionguard.io/shard=a", false, "")),
		electionIDFor(opts("retentionguard.io/shard = a", false, "")), electionIDFor(opts("retentionguard.io/shard=b", false, ""))
	if a != a2 || a == b || a == leaderElectionID || len(a) > 63 {
		t.Errorf("election IDs a %q (again %q), b %q: want one stable short name per shard, not the unsharded %q", a, a2, b, leaderElectionID)
	}
	if got := electionIDFor(opts("", false, "")); got != leaderElectionID {
		t.Errorf("unsharded election ID %q, want %q", got, leaderElectionID)
	}
	if got := electionIDFor(opts("retentionguard.io/shard=a", false, "rg-shard-a")); got != "rg-shard-a" {
		t.Errorf("explicit election ID %q, want rg-shard-a", got)
	}

	for _, c := range []struct {
		webhook bool
		want    string
	}{{false, "retentionguard.io/shard=a"}, {true, ""}} {
		byObject := managerCache(opts("retentionguard.io/shard=a", c.webhook, "")).ByObject
		for _, obj := range []client.Object{&rgv1.ConsumerRetentionPolicy{}, &rgv1.KafkaConnection{}, &rgv1.ClusterKafkaConnection{}} {
			var got string
			found := false
			for o, by := range byObject {
				if reflect.TypeOf(o) == reflect.TypeOf(obj) {
					found = true
					if by.Label != nil {
						got = by.Label.String()
					}
				}
			}
			if !found || got != c.want {
				t.Errorf("webhook %v: %T cached by label %q (found %v), want %q", c.webhook, obj, got, found, c.want)
			}
		}
	}
}
