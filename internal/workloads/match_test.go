package workloads

import (
	"fmt"
	"net/netip"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/retentionguard/retention-guard/internal/proof"
)

// Builders for snapshots.

func tmpl(labels map[string]string, containers ...corev1.Container) corev1.PodTemplateSpec {
	t := corev1.PodTemplateSpec{}
	t.Labels = labels
	t.Spec.Containers = containers
	return t
}

func container(name string, env ...corev1.EnvVar) corev1.Container {
	return corev1.Container{Name: name, Env: env}
}

func literal(name, value string) corev1.EnvVar { return corev1.EnvVar{Name: name, Value: value} }

func fromConfigMap(name, cm, key string) corev1.EnvVar {
	return corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{
		LocalObjectReference: corev1.LocalObjectReference{Name: cm}, Key: key}}}
}

func deployment(ns, name string, replicas int32, labels map[string]string, cs ...corev1.Container) Workload {
	return Workload{Ref: Ref{Deployment, ns, name}, Replicas: replicas, Selector: labels, Template: tmpl(labels, cs...)}
}

func pod(ns, name, ip string, owner Kind, ownerName string) Pod {
	p := Pod{Namespace: ns, Name: name, IPs: []netip.Addr{netip.MustParseAddr(ip)}}
	if owner != "" {
		p.Owner = &Owner{Kind: owner, Name: ownerName}
	}
	return p
}

func rs(ns, name string, owner Kind, ownerName string) Owned {
	return Owned{Ref: Ref{ReplicaSet, ns, name}, Owner: &Owner{Kind: owner, Name: ownerName}}
}

func member(clientID, ip string) proof.GroupMember {
	return proof.GroupMember{MemberID: clientID + "-m", ClientID: clientID, ClientHost: "/" + ip, Host: netip.MustParseAddr(ip)}
}

// matchText is a GroupMatch as lines: one per workload (confidence,
// namespace/kind/name, parked) with its evidence, then unplaced hosts.
func matchText(m GroupMatch) string {
	var lines []string
	for _, w := range m.Workloads {
		line := fmt.Sprintf("%s %s/%s", w.Confidence, w.Workload.Namespace, w.Workload)
		if w.Parked {
			line += " parked"
		}
		lines = append(lines, line)
		for _, e := range w.Evidence {
			lines = append(lines, fmt.Sprintf("  %s %s: %s", e.Confidence, e.Kind, e))
		}
	}
	for _, u := range m.Unplaced {
		lines = append(lines, "unplaced "+u.ClientID+" "+u.Host.String())
	}
	return strings.Join(lines, "\n")
}

func TestMatch(t *testing.T) {
	fanoutLabels := map[string]string{"app": "fanout"}
	for _, tc := range []struct {
		name    string
		group   string
		members []proof.GroupMember
		snap    Snapshot
		want    []string
	}{
		{
			// Seed 000's fan-out, scaled out: two pods of one Deployment
			// are live members, and a second region's Deployment consumes
			// the same group from another namespace. Each workload once,
			// Certain, with the pods that prove it.
			name:    "seed 000: multiple consumers of one group in two namespaces",
			group:   "qim-fanout",
			members: []proof.GroupMember{member("fanout-0", "10.1.0.5"), member("fanout-1", "10.1.0.6"), member("fanout-eu", "10.2.0.9")},
			snap: Snapshot{
				Pods: []Pod{
					pod("qim", "fanout-7d9f-a", "10.1.0.5", ReplicaSet, "fanout-7d9f"),
					pod("qim", "fanout-7d9f-b", "10.1.0.6", ReplicaSet, "fanout-7d9f"),
					pod("qim-eu", "fanout-55c4-a", "10.2.0.9", ReplicaSet, "fanout-55c4"),
					pod("qim", "writer-1-x", "10.1.0.7", ReplicaSet, "writer-1"),
				},
				Owned: []Owned{rs("qim", "fanout-7d9f", Deployment, "fanout"), rs("qim-eu", "fanout-55c4", Deployment, "fanout"), rs("qim", "writer-1", Deployment, "writer")},
				Workloads: []Workload{
					deployment("qim", "fanout", 2, fanoutLabels),
					deployment("qim-eu", "fanout", 1, fanoutLabels),
					deployment("qim", "writer", 1, map[string]string{"app": "writer"}),
				},
			},
			want: []string{
				"Certain qim/Deployment/fanout",
				"  Certain MemberHost: member client fanout-0 at 10.1.0.5 is pod fanout-7d9f-a",
				"  Certain MemberHost: member client fanout-1 at 10.1.0.6 is pod fanout-7d9f-b",
				"Certain qim-eu/Deployment/fanout",
				"  Certain MemberHost: member client fanout-eu at 10.2.0.9 is pod fanout-55c4-a",
			},
		},
		{
			// Seed 000 as written: librdkafka with a static assign() is a
			// simple group, never a member: only its configuration names
			// the group.
			name:  "seed 000: static assign, no members, the group ID in the environment",
			group: "qim-fanout",
			snap: Snapshot{Workloads: []Workload{
				deployment("qim", "fanout", 2, fanoutLabels, container("fanout", literal("KAFKA_GROUP_ID", "qim-fanout"), literal("RUST_LOG", "info"))),
				deployment("qim", "other", 1, map[string]string{"app": "other"}, container("c", literal("KAFKA_GROUP_ID", "qim-other"))),
			}},
			want: []string{
				"Likely qim/Deployment/fanout",
				"  Likely Environment: container fanout sets KAFKA_GROUP_ID to the group ID",
			},
		},
		{
			// Seed 003: the nightly settlement batch (a CronJob) is down
			// between runs, its group Empty with offsets expired: no member
			// is live, the group ID comes from its ConfigMap. Its pods of
			// last night's run (a Job the CronJob owns) are gone.
			name:  "seed 003: nightly batch CronJob between runs, group ID from a ConfigMap key",
			group: "ledger-settle-consumer",
			snap: Snapshot{
				Workloads: []Workload{
					{Ref: Ref{CronJob, "ledger", "settle"}, Template: tmpl(map[string]string{"app": "settle"},
						container("settle", fromConfigMap("SPRING_KAFKA_CONSUMER_GROUP_ID", "settle-config", "group"), literal("KAFKA_AUTO_OFFSET_RESET", "none")))},
					{Ref: Ref{Job, "ledger", "settle-29011"}, Template: tmpl(map[string]string{"app": "settle", "job-name": "settle-29011"},
						container("settle", fromConfigMap("SPRING_KAFKA_CONSUMER_GROUP_ID", "settle-config", "group"))), Owner: &Owner{CronJob, "settle"}},
				},
				ConfigMaps: []ConfigMap{{Namespace: "ledger", Name: "settle-config", Data: map[string]string{"group": "ledger-settle-consumer\n"}}},
			},
			want: []string{
				"Likely ledger/CronJob/settle",
				"  Likely Environment: container settle sets SPRING_KAFKA_CONSUMER_GROUP_ID to the group ID (ConfigMap settle-config key group)",
			},
		},
		{
			// Seed 003 during its run: the Job's pod is a live member; the
			// pod resolves through the Job to the CronJob.
			name:    "seed 003: the batch running, its pod a member through Job to CronJob",
			group:   "ledger-settle-consumer",
			members: []proof.GroupMember{member("settle", "10.3.0.4")},
			snap: Snapshot{
				Pods:  []Pod{pod("ledger", "settle-29011-q", "10.3.0.4", Job, "settle-29011")},
				Owned: []Owned{{Ref: Ref{Job, "ledger", "settle-29011"}, Owner: &Owner{CronJob, "settle"}}},
				Workloads: []Workload{
					{Ref: Ref{CronJob, "ledger", "settle"}, Template: tmpl(map[string]string{"app": "settle"},
						container("settle", literal("SPRING_KAFKA_CONSUMER_GROUP_ID", "ledger-settle-consumer")))},
					{Ref: Ref{Job, "ledger", "settle-29011"}, Owner: &Owner{CronJob, "settle"}, Template: tmpl(map[string]string{"app": "settle"},
						container("settle", literal("SPRING_KAFKA_CONSUMER_GROUP_ID", "ledger-settle-consumer")))},
				},
			},
			want: []string{
				"Certain ledger/CronJob/settle",
				"  Certain MemberHost: member client settle at 10.3.0.4 is pod settle-29011-q",
				"  Likely Environment: container settle sets SPRING_KAFKA_CONSUMER_GROUP_ID to the group ID",
			},
		},
		{
			// Seed 003's CronJob suspended, and a Deployment scaled to 0:
			// parked, matched by configuration only.
			name:  "seed 003: parked workloads (suspended CronJob, 0 replicas) by environment only",
			group: "ledger-settle-consumer",
			snap: Snapshot{Workloads: []Workload{
				{Ref: Ref{CronJob, "ledger", "settle"}, Suspended: true, Template: tmpl(map[string]string{"app": "settle"},
					container("settle", literal("SPRING_KAFKA_CONSUMER_GROUPID", "ledger-settle-consumer")))},
				deployment("ledger", "settle-replay", 0, map[string]string{"app": "settle-replay"},
					container("replay", literal("SETTLE_GROUP", "ledger-settle-consumer"))),
			}},
			want: []string{
				"Likely ledger/CronJob/settle parked",
				"  Likely Environment: container settle sets SPRING_KAFKA_CONSUMER_GROUPID to the group ID",
				"Possible ledger/Deployment/settle-replay parked",
				"  Possible Environment: container replay sets SETTLE_GROUP to the group ID",
			},
		},
		{
			// An Argo Rollout's pods come from its ReplicaSets; a
			// StatefulSet owns its pods directly.
			name:    "Rollout through its ReplicaSet, StatefulSet directly",
			group:   "orders",
			members: []proof.GroupMember{member("orders-a", "10.4.0.2"), member("orders-b", "10.4.0.3")},
			snap: Snapshot{
				Pods: []Pod{
					pod("shop", "orders-6b8-x", "10.4.0.2", ReplicaSet, "orders-6b8"),
					pod("shop", "orders-db-0", "10.4.0.3", StatefulSet, "orders-db"),
				},
				Owned: []Owned{rs("shop", "orders-6b8", Rollout, "orders")},
				Workloads: []Workload{
					{Ref: Ref{Rollout, "shop", "orders"}, Replicas: 3, Selector: map[string]string{"app": "orders"}, Template: tmpl(map[string]string{"app": "orders"})},
					{Ref: Ref{StatefulSet, "shop", "orders-db"}, Replicas: 1, Selector: map[string]string{"app": "orders-db"}, Template: tmpl(map[string]string{"app": "orders-db"})},
				},
			},
			want: []string{
				"Certain shop/Rollout/orders",
				"  Certain MemberHost: member client orders-a at 10.4.0.2 is pod orders-6b8-x",
				"Certain shop/StatefulSet/orders-db",
				"  Certain MemberHost: member client orders-b at 10.4.0.3 is pod orders-db-0",
			},
		},
		{
			// A member at a host-network pod's IP (its node's, shared by
			// every pod on the node), at a finished pod's released IP, at a
			// bare pod's, or at no pod's is evidence of nothing: it is
			// reported unplaced.
			name:    "hosts that prove no workload: host network, terminated, bare pod, outside",
			group:   "orders",
			members: []proof.GroupMember{member("hostnet", "192.168.1.10"), member("old", "10.4.0.8"), member("bare", "10.4.0.9"), member("laptop", "172.16.0.1")},
			snap: Snapshot{
				Pods: []Pod{
					func() Pod {
						p := pod("shop", "agent-x", "192.168.1.10", ReplicaSet, "agent-1")
						p.HostNetwork = true
						return p
					}(),
					func() Pod {
						p := pod("shop", "orders-6b8-old", "10.4.0.8", ReplicaSet, "orders-6b8")
						p.Terminated = true
						return p
					}(),
					pod("shop", "debug", "10.4.0.9", "", ""),
				},
				Owned:     []Owned{rs("shop", "agent-1", Deployment, "agent"), rs("shop", "orders-6b8", Deployment, "orders")},
				Workloads: []Workload{deployment("shop", "agent", 1, map[string]string{"app": "agent"}), deployment("shop", "orders", 1, map[string]string{"app": "orders"})},
			},
			want: []string{"unplaced hostnet 192.168.1.10", "unplaced old 10.4.0.8", "unplaced bare 10.4.0.9", "unplaced laptop 172.16.0.1"},
		},
		{
			// The group ID in the files a ConfigMap mounts: Spring's
			// application.properties and application.yaml, a group.id key,
			// a Kafka Streams application.id; keys outside a volume's items
			// are not mounted.
			name:  "mounted ConfigMaps: properties, YAML, a key, items",
			group: "billing",
			snap: Snapshot{
				Workloads: []Workload{
					withVolume(deployment("pay", "spring-props", 1, map[string]string{"app": "a"}), "props", nil),
					withVolume(deployment("pay", "spring-yaml", 1, map[string]string{"app": "b"}), "yaml", nil),
					withVolume(deployment("pay", "rdkafka", 1, map[string]string{"app": "c"}), "rdkafka", nil),
					withVolume(deployment("pay", "streams", 1, map[string]string{"app": "d"}), "streams", nil),
					withVolume(deployment("pay", "not-mounted", 1, map[string]string{"app": "e"}), "rdkafka", []string{"bootstrap.servers"}),
				},
				ConfigMaps: []ConfigMap{
					{Namespace: "pay", Name: "props", Data: map[string]string{"application.properties": "# billing\nspring.kafka.bootstrap-servers=kafka:9092\nspring.kafka.consumer.group-id = billing\n"}},
					{Namespace: "pay", Name: "yaml", Data: map[string]string{"application.yaml": "spring:\n  kafka:\n    consumer:\n      groupId: billing\n      auto-offset-reset: none\n"}},
					{Namespace: "pay", Name: "rdkafka", Data: map[string]string{"group.id": "billing", "bootstrap.servers": "kafka:9092"}},
					{Namespace: "pay", Name: "streams", Data: map[string]string{"streams.properties": "application.id=billing\n"}},
				},
			},
			want: []string{
				"Likely pay/Deployment/rdkafka",
				"  Likely ConfigMap: mounted ConfigMap rdkafka key group.id is the group ID",
				"Likely pay/Deployment/spring-props",
				"  Likely ConfigMap: mounted ConfigMap props key application.properties sets spring.kafka.consumer.group-id to the group ID",
				"Likely pay/Deployment/spring-yaml",
				"  Likely ConfigMap: mounted ConfigMap yaml key application.yaml sets spring.kafka.consumer.groupId to the group ID",
				"Likely pay/Deployment/streams",
				"  Likely ConfigMap: mounted ConfigMap streams key streams.properties sets application.id to the group ID",
			},
		},
		{
			// envFrom: every key of the ConfigMap becomes a variable, with
			// the prefix; SPRING_APPLICATION_JSON holds properties as JSON;
			// Kafka Streams' application ID is its group ID. A name without
			// GROUP (APP_NAME), a $(VAR) reference and another group's ID
			// are no evidence.
			name:  "envFrom with a prefix, SPRING_APPLICATION_JSON, Streams; what is not evidence",
			group: "billing",
			snap: Snapshot{
				Workloads: []Workload{
					func() Workload {
						w := deployment("pay", "envfrom", 1, map[string]string{"app": "a"}, container("app"))
						w.Template.Spec.Containers[0].EnvFrom = []corev1.EnvFromSource{{Prefix: "KAFKA_", ConfigMapRef: &corev1.ConfigMapEnvSource{
							LocalObjectReference: corev1.LocalObjectReference{Name: "kafka-env"}}}}
						return w
					}(),
					deployment("pay", "json", 1, map[string]string{"app": "b"}, container("app",
						literal("SPRING_APPLICATION_JSON", `{"spring":{"kafka":{"consumer":{"group-id":"billing"}}}}`))),
					deployment("pay", "streams", 1, map[string]string{"app": "c"}, container("app",
						literal("SPRING_KAFKA_STREAMS_APPLICATION_ID", "billing"))),
					deployment("pay", "unrelated", 1, map[string]string{"app": "d"}, container("app",
						literal("APP_NAME", "billing"), literal("GROUP_ID", "$(APP_NAME)"), literal("CONSUMER_GROUP", "billing-eu"))),
				},
				ConfigMaps: []ConfigMap{{Namespace: "pay", Name: "kafka-env", Data: map[string]string{"GROUP_ID": "billing", "BOOTSTRAP": "kafka:9092"}}},
			},
			want: []string{
				"Likely pay/Deployment/envfrom",
				"  Likely Environment: container app sets KAFKA_GROUP_ID to the group ID (ConfigMap kafka-env key GROUP_ID)",
				"Likely pay/Deployment/json",
				"  Likely Environment: container app sets SPRING_APPLICATION_JSON with spring.kafka.consumer.group-id the group ID",
				"Likely pay/Deployment/streams",
				"  Likely Environment: container app sets SPRING_KAFKA_STREAMS_APPLICATION_ID to the group ID",
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := matchText(NewIndex(tc.snap).Match(tc.group, tc.members))
			if want := strings.Join(tc.want, "\n"); got != want {
				t.Errorf("got\n%s\nwant\n%s", got, want)
			}
		})
	}
}

func withVolume(w Workload, cm string, items []string) Workload {
	v := corev1.Volume{Name: "config", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
		LocalObjectReference: corev1.LocalObjectReference{Name: cm}}}}
	for _, k := range items {
		v.ConfigMap.Items = append(v.ConfigMap.Items, corev1.KeyToPath{Key: k, Path: k})
	}
	w.Template.Spec.Volumes = append(w.Template.Spec.Volumes, v)
	return w
}

// The summary line a person reads says a parked workload matched by its
// configuration only.
func TestMatchSummary(t *testing.T) {
	idx := NewIndex(Snapshot{Workloads: []Workload{
		{Ref: Ref{CronJob, "ledger", "settle"}, Suspended: true, Template: tmpl(map[string]string{"app": "settle"},
			container("settle", literal("GROUP_ID", "settle"), literal("KAFKA_CONSUMER_GROUP", "settle")))},
	}})
	m := idx.Match("settle", nil)
	want := "Likely CronJob/settle (namespace ledger): container settle sets GROUP_ID to the group ID, and 1 more; " +
		"parked (no pods by its spec): matched by its configuration only"
	if len(m.Workloads) != 1 || m.Workloads[0].Summary() != want {
		t.Errorf("got %+v\nwant %q", m.Workloads, want)
	}
}

func TestSelections(t *testing.T) {
	idx := NewIndex(Snapshot{Workloads: []Workload{
		// The Deployment's selector uses app only: the policy selects
		// with app, not with the version the template also carries.
		{Ref: Ref{Deployment, "qim", "fanout"}, Replicas: 2, Selector: map[string]string{"app": "fanout"},
			Template: tmpl(map[string]string{"app": "fanout", "version": "v7"})},
		deployment("qim-eu", "fanout", 1, map[string]string{"app": "fanout"}),
		// A CronJob's template without the labels Kubernetes generates.
		{Ref: Ref{CronJob, "ledger", "settle"}, Template: tmpl(map[string]string{"app": "settle", "team": "ledger", "job-name": "x"})},
		deployment("ledger", "settle-api", 1, map[string]string{"app": "settle-api", "team": "ledger"}),
		deployment("ledger", "reports", 1, map[string]string{"app": "reports", "team": "ledger"}),
		{Ref: Ref{Deployment, "pay", "a"}, Replicas: 1, Selector: map[string]string{"app": "a"}, Template: tmpl(map[string]string{"app": "a", "group": "billing"})},
		{Ref: Ref{Deployment, "pay", "b"}, Replicas: 1, Selector: map[string]string{"app": "b"}, Template: tmpl(map[string]string{"app": "b", "group": "billing"})},
		deployment("bare", "nolabels", 1, nil),
		deployment("shared", "x", 1, map[string]string{"app": "x"}),
		deployment("shared", "x-canary", 1, map[string]string{"app": "x"}),
	}})
	ref := func(k Kind, ns, name string) Match { return Match{Workload: Ref{k, ns, name}} }
	text := func(ss []Selection) string {
		var lines []string
		for _, s := range ss {
			line := fmt.Sprintf("%s %v %v", s.Namespace, s.MatchLabels, s.Workloads)
			if len(s.AlsoSelects) > 0 {
				line += fmt.Sprintf(" also %v", s.AlsoSelects)
			}
			lines = append(lines, line)
		}
		return strings.Join(lines, "\n")
	}
	for _, tc := range []struct {
		name    string
		matches []Match
		want    []string
	}{
		{"seed 000: one policy per namespace, the selector's labels only",
			[]Match{ref(Deployment, "qim", "fanout"), ref(Deployment, "qim-eu", "fanout")},
			[]string{"qim map[app:fanout] [Deployment/fanout]", "qim-eu map[app:fanout] [Deployment/fanout]"}},
		{"seed 003: a CronJob's labels without job-name",
			[]Match{ref(CronJob, "ledger", "settle")},
			[]string{"ledger map[app:settle team:ledger] [CronJob/settle]"}},
		{"two workloads whose common label selects a third: one policy each",
			[]Match{ref(CronJob, "ledger", "settle"), ref(Deployment, "ledger", "settle-api")},
			[]string{"ledger map[app:settle team:ledger] [CronJob/settle]", "ledger map[app:settle-api team:ledger] [Deployment/settle-api]"}},
		{"two workloads whose common label selects them alone: one policy",
			[]Match{ref(Deployment, "pay", "a"), ref(Deployment, "pay", "b")},
			[]string{"pay map[group:billing] [Deployment/a Deployment/b]"}},
		{"a template without labels",
			[]Match{ref(Deployment, "bare", "nolabels")},
			[]string{"bare map[] [Deployment/nolabels]"}},
		{"a selector that selects another workload says so",
			[]Match{ref(Deployment, "shared", "x")},
			[]string{"shared map[app:x] [Deployment/x] also [Deployment/x-canary]"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got, want := text(idx.Selections(tc.matches)), strings.Join(tc.want, "\n"); got != want {
				t.Errorf("got\n%s\nwant\n%s", got, want)
			}
		})
	}
}

// A policy whose selector misses a workload a live member runs in leaves
// it an unselected consumer (seed 000: the fan-out's canary Deployment
// carries another app label; the second region's copy runs in another
// namespace). The selected workload, and a workload matched only by
// configuration, are not unselected consumers.
func TestUnselected(t *testing.T) {
	idx := NewIndex(Snapshot{
		Pods: []Pod{
			pod("qim", "fanout-1-a", "10.1.0.5", ReplicaSet, "fanout-1"),
			pod("qim", "canary-1-a", "10.1.0.6", ReplicaSet, "canary-1"),
			pod("qim-eu", "fanout-2-a", "10.2.0.5", ReplicaSet, "fanout-2"),
		},
		Owned: []Owned{rs("qim", "fanout-1", Deployment, "fanout"), rs("qim", "canary-1", Deployment, "fanout-canary"), rs("qim-eu", "fanout-2", Deployment, "fanout")},
		Workloads: []Workload{
			deployment("qim", "fanout", 2, map[string]string{"app": "fanout"}),
			deployment("qim", "fanout-canary", 1, map[string]string{"app": "fanout-canary"}),
			deployment("qim-eu", "fanout", 1, map[string]string{"app": "fanout"}),
			deployment("qim", "fanout-parked", 0, map[string]string{"app": "parked"}, container("c", literal("KAFKA_GROUP_ID", "qim-fanout"))),
		},
	})
	members := []proof.GroupMember{member("a", "10.1.0.5"), member("b", "10.1.0.6"), member("c", "10.2.0.5")}
	var got []string
	for _, m := range idx.Unselected("qim", labels.SelectorFromSet(map[string]string{"app": "fanout"}), "qim-fanout", members) {
		got = append(got, UnselectedMessage(m, "qim"))
	}
	want := []string{
		"Deployment/fanout-canary consumes the group (member client b at 10.1.0.6 is pod canary-1-a) but spec.selector does not select its pod template: its rollouts are not guarded; widen the selector",
		"Deployment/fanout in namespace qim-eu consumes the group (member client c at 10.2.0.5 is pod fanout-2-a) but a policy guards only its own namespace: add a policy for the group in qim-eu",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if unselected := idx.Unselected("qim", labels.Everything(), "qim-fanout", members[:2]); len(unselected) != 0 {
		t.Errorf("a selector that selects every consumer: unselected %v", unselected)
	}
}
