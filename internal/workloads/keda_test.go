package workloads

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/retentionguard/retention-guard/internal/proof"
)

func scaledObject(ns, name, target string, triggers ...Trigger) Scaler {
	return Scaler{Ref: Ref{ScaledObject, ns, name}, Target: Ref{Deployment, ns, target}, Triggers: triggers}
}

func kafkaTrigger(typ string, md ...string) Trigger {
	t := Trigger{Type: typ, Metadata: map[string]string{}}
	for i := 0; i+1 < len(md); i += 2 {
		t.Metadata[md[i]] = md[i+1]
	}
	return t
}

func fromSecret(name, secret, key string) corev1.EnvVar {
	return corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
		LocalObjectReference: corev1.LocalObjectReference{Name: secret}, Key: key}}}
}

// Seed 003 in modern clothes: a batch consumer parked between runs — a
// KEDA-scaled Deployment at zero replicas, no live member — whose
// offsets expire. Its ScaledObject's Kafka trigger declares the group:
// the Deployment matches, Declared and parked, however its variables are
// named; a trigger whose group or cluster cannot be known maps nothing
// and says why.
func TestMatchKEDATriggers(t *testing.T) {
	settle := map[string]string{"app": "settle"}
	servers := []string{"kafka-0.kafka.kafka.svc.cluster.local:9092", "kafka-1.kafka.kafka.svc:9092"}
	bs := "kafka-0.kafka.kafka:9092"
	for _, tc := range []struct {
		name       string
		workloads  []Workload
		scalers    []Scaler
		configMaps []ConfigMap
		pods       []Pod
		owned      []Owned
		members    []proof.GroupMember
		want       string
		unresolved string
	}{{
		name:      "declared group, parked at zero",
		workloads: []Workload{deployment("ledger", "settle", 0, settle, container("settle", literal("APP_MODE", "batch")))},
		scalers: []Scaler{scaledObject("ledger", "settle", "settle",
			kafkaTrigger("kafka", "bootstrapServers", bs, "consumerGroup", "settle", "topic", "settle-task"))},
		want: "Declared ledger/Deployment/settle parked\n" +
			`  Declared ScaledObject: ScaledObject settle scales it on the group's lag (trigger kafka, topics settle-task)`,
	}, {
		name:      "apache-kafka, topics listed, no servers in the trigger",
		workloads: []Workload{deployment("ledger", "settle", 2, settle, container("settle"))},
		scalers: []Scaler{scaledObject("ledger", "settle-scaler", "settle",
			Trigger{Type: "apache-kafka", Name: "lag", Metadata: map[string]string{"consumerGroup": "settle", "topic": "settle-task, settle-retry"}})},
		want: "Declared ledger/Deployment/settle\n" +
			`  Declared ScaledObject: ScaledObject settle-scaler scales it on the group's lag (trigger apache-kafka "lag", topics settle-task,settle-retry)`,
	}, {
		name: "consumerGroupFromEnv, a literal of the first container",
		workloads: []Workload{deployment("ledger", "settle", 0, settle,
			container("settle", literal("TASK_CONSUMER", "settle"), literal("BROKERS", bs)), container("sidecar"))},
		scalers: []Scaler{scaledObject("ledger", "settle", "settle",
			kafkaTrigger("kafka", "bootstrapServersFromEnv", "BROKERS", "consumerGroupFromEnv", "TASK_CONSUMER"))},
		want: "Declared ledger/Deployment/settle parked\n" +
			`  Declared ScaledObject: ScaledObject settle scales it on the group's lag (trigger kafka, consumerGroupFromEnv TASK_CONSUMER of container settle)`,
	}, {
		name: "consumerGroupFromEnv from a ConfigMap, envSourceContainerName",
		workloads: []Workload{deployment("ledger", "settle", 0, settle,
			container("proxy", literal("TASK_CONSUMER", "not-this")), container("settle", fromConfigMap("TASK_CONSUMER", "settle-config", "group")))},
		configMaps: []ConfigMap{{Namespace: "ledger", Name: "settle-config", Data: map[string]string{"group": "settle"}}},
		scalers: func() []Scaler {
			s := scaledObject("ledger", "settle", "settle", kafkaTrigger("kafka", "bootstrapServers", bs, "consumerGroupFromEnv", "TASK_CONSUMER"))
			s.EnvSourceContainerName = "settle"
			return []Scaler{s}
		}(),
		want: "Declared ledger/Deployment/settle parked\n" +
			`  Declared ScaledObject: ScaledObject settle scales it on the group's lag (trigger kafka, consumerGroupFromEnv TASK_CONSUMER of container settle, ConfigMap settle-config key group)`,
	}, {
		name:      "consumerGroupFromEnv from a Secret: unresolvable, never read",
		workloads: []Workload{deployment("ledger", "settle", 0, settle, container("settle", fromSecret("TASK_CONSUMER", "settle-kafka", "group")))},
		scalers: []Scaler{scaledObject("ledger", "settle", "settle",
			kafkaTrigger("kafka", "bootstrapServers", bs, "consumerGroupFromEnv", "TASK_CONSUMER"))},
		unresolved: "ScaledObject/settle (namespace ledger) trigger kafka: consumerGroup unresolvable: consumerGroupFromEnv TASK_CONSUMER " +
			"comes from Secret settle-kafka key group, and Secrets are never read",
	}, {
		name:      "bootstrapServersFromEnv from a Secret: the group matches, the cluster is not checked",
		workloads: []Workload{deployment("ledger", "settle", 0, settle, container("settle", fromSecret("BROKERS", "settle-kafka", "servers")))},
		scalers: []Scaler{scaledObject("ledger", "settle", "settle",
			kafkaTrigger("kafka", "bootstrapServersFromEnv", "BROKERS", "consumerGroup", "settle"))},
		want: "Likely ledger/Deployment/settle parked\n" +
			`  Likely ScaledObject: ScaledObject settle scales it on the group's lag (trigger kafka); bootstrapServers unresolvable ` +
			`(bootstrapServersFromEnv BROKERS comes from Secret settle-kafka key servers, and Secrets are never read): its cluster is not checked`,
	}, {
		name:      "another cluster's servers: no match",
		workloads: []Workload{deployment("ledger", "settle", 0, settle, container("settle"))},
		scalers: []Scaler{scaledObject("ledger", "settle", "settle",
			kafkaTrigger("kafka", "bootstrapServers", "kafka.dr-region:9092", "consumerGroup", "settle"))},
		unresolved: "ScaledObject/settle (namespace ledger) trigger kafka: its bootstrapServers kafka.dr-region:9092 are not this cluster's " +
			"(" + strings.Join(servers, ",") + "): another cluster's consumer",
	}, {
		name:      "another trigger type: nothing",
		workloads: []Workload{deployment("ledger", "settle", 0, settle, container("settle"))},
		scalers:   []Scaler{scaledObject("ledger", "settle", "settle", kafkaTrigger("rabbitmq", "consumerGroup", "settle"))},
	}, {
		name: "ScaledJob: its Jobs' pods are the ScaledJob's; declared and live",
		workloads: []Workload{
			{Ref: Ref{ScaledJob, "ledger", "settle"}, Replicas: 1, Template: tmpl(settle, container("settle"))},
			{Ref: Ref{Job, "ledger", "settle-x7k2p"}, Replicas: 1, Template: tmpl(settle, container("settle")), Owner: &Owner{ScaledJob, "settle"}},
		},
		owned: []Owned{{Ref: Ref{Job, "ledger", "settle-x7k2p"}, Owner: &Owner{ScaledJob, "settle"}}},
		pods:  []Pod{pod("ledger", "settle-x7k2p-abcde", "10.1.2.3", Job, "settle-x7k2p")},
		scalers: []Scaler{{Ref: Ref{ScaledJob, "ledger", "settle"}, Target: Ref{ScaledJob, "ledger", "settle"},
			Triggers: []Trigger{kafkaTrigger("kafka", "bootstrapServers", bs, "consumerGroup", "settle")}}},
		members: []proof.GroupMember{member("settle-1", "10.1.2.3")},
		want: "Certain ledger/ScaledJob/settle\n" +
			"  Certain MemberHost: member client settle-1 at 10.1.2.3 is pod settle-x7k2p-abcde\n" +
			`  Declared ScaledJob: ScaledJob settle scales it on the group's lag (trigger kafka)`,
	}, {
		name:      "target not read",
		workloads: []Workload{deployment("ledger", "other", 0, settle, container("settle"))},
		scalers:   []Scaler{scaledObject("ledger", "settle", "settle", kafkaTrigger("kafka", "consumerGroup", "settle"))},
		unresolved: "ScaledObject/settle (namespace ledger) trigger kafka: its target Deployment/settle is not a workload read " +
			"(Deployment, StatefulSet, Argo Rollout in the namespaces read)",
	}} {
		t.Run(tc.name, func(t *testing.T) {
			idx := NewIndex(Snapshot{Workloads: tc.workloads, Scalers: tc.scalers, ConfigMaps: tc.configMaps, Pods: tc.pods,
				Owned: tc.owned, Servers: servers})
			if got := matchText(idx.Match("settle", tc.members)); got != tc.want {
				t.Errorf("match:\n%s\nwant\n%s", got, tc.want)
			}
			var un []string
			for _, u := range idx.Unresolved() {
				un = append(un, u.String())
			}
			if got := strings.Join(un, "\n"); got != tc.unresolved {
				t.Errorf("unresolved:\n%s\nwant\n%s", got, tc.unresolved)
			}
		})
	}
}

// The declared consumer of a group the policy does not select is an
// unselected consumer, member or not (seed 003: parked at zero, nothing connects).
func TestUnselectedDeclared(t *testing.T) {
	settle := map[string]string{"app": "settle"}
	idx := NewIndex(Snapshot{
		Workloads: []Workload{deployment("ledger", "settle", 0, settle, container("settle", literal("KAFKA_GROUP_ID", "settle"))),
			deployment("ledger", "settle-v2", 0, map[string]string{"app": "settle-v2"}, container("settle", literal("KAFKA_GROUP_ID", "settle")))},
		Scalers: []Scaler{scaledObject("ledger", "settle", "settle", kafkaTrigger("kafka", "consumerGroup", "settle"))},
	})
	unselected := idx.Unselected("ledger", labels.SelectorFromSet(map[string]string{"app": "other"}), "settle", nil)
	if len(unselected) != 1 || unselected[0].Workload != (Ref{Deployment, "ledger", "settle"}) {
		t.Fatalf("unselected %v, want the declared Deployment/settle only (an environment match is not unselected)", unselected)
	}
	want := "Deployment/settle consumes the group (ScaledObject settle scales it on the group's lag (trigger kafka)) but spec.selector " +
		"does not select its pod template: its rollouts are not guarded; widen the selector"
	if got := UnselectedMessage(unselected[0], "ledger"); got != want {
		t.Errorf("message %q, want %q", got, want)
	}
	if unselected := idx.Unselected("ledger", labels.SelectorFromSet(settle), "settle", nil); len(unselected) != 0 {
		t.Errorf("a policy that selects the declared consumer leaves %v unselected", unselected)
	}
}

// KEDA's objects as the API serves them: a ScaledObject's target kind is
// Deployment when unset, a Rollout by its kind; a ScaledJob is the
// workload of its jobTargetRef's template, parked while paused.
func TestFromKEDA(t *testing.T) {
	trig := []any{map[string]any{"type": "apache-kafka", "name": "lag", "metadata": map[string]any{"consumerGroup": "settle"}}}
	so, err := FromScaledObject("ledger", "settle", map[string]any{"spec": map[string]any{
		"scaleTargetRef": map[string]any{"name": "settle", "envSourceContainerName": "app"}, "triggers": trig}})
	if err != nil {
		t.Fatal(err)
	}
	if so.Target != (Ref{Deployment, "ledger", "settle"}) || so.EnvSourceContainerName != "app" || len(so.Triggers) != 1 ||
		so.Triggers[0].Name != "lag" || !so.Triggers[0].Kafka() || so.Triggers[0].Metadata["consumerGroup"] != "settle" {
		t.Errorf("ScaledObject: %+v", so)
	}
	ro, err := FromScaledObject("shop", "orders", map[string]any{"spec": map[string]any{
		"scaleTargetRef": map[string]any{"apiVersion": "argoproj.io/v1alpha1", "kind": "Rollout", "name": "orders"}, "triggers": trig}})
	if err != nil || ro.Target != (Ref{Rollout, "shop", "orders"}) {
		t.Errorf("ScaledObject of a Rollout: %+v %v", ro, err)
	}
	sj, w, err := FromScaledJob("ledger", "settle", map[string]any{
		"metadata": map[string]any{"annotations": map[string]any{"autoscaling.keda.sh/paused": "true"}},
		"spec": map[string]any{"envSourceContainerName": "app", "triggers": trig, "jobTargetRef": map[string]any{
			"template": map[string]any{"metadata": map[string]any{"labels": map[string]any{"app": "settle"}},
				"spec": map[string]any{"containers": []any{map[string]any{"name": "app"}}}}}}})
	if err != nil {
		t.Fatal(err)
	}
	if sj.Target != (Ref{ScaledJob, "ledger", "settle"}) || sj.EnvSourceContainerName != "app" || w.Ref != sj.Target ||
		!w.Parked() || w.Template.Labels["app"] != "settle" || PolicySelector(&w)["app"] != "settle" {
		t.Errorf("ScaledJob: %+v %+v", sj, w)
	}
}

// Seed 003 under KEDA, before the loss: a policy's consumer that KEDA
// holds at zero (its ScaledObject's target at 0 replicas, or a
// ScaledJob, whose Jobs run only on lag) while the group has no member is
// named with its scaler; one still running, one the policy does not
// select, one matched by its environment only, or any while the group has
// a member, is not.
func TestHeldAtZero(t *testing.T) {
	settle := map[string]string{"app": "settle"}
	trig := kafkaTrigger("kafka", "consumerGroup", "settle")
	sj, sjw, err := FromScaledJob("ledger", "settle-batch", map[string]any{"spec": map[string]any{
		"triggers": []any{map[string]any{"type": "kafka", "metadata": map[string]any{"consumerGroup": "settle"}}},
		"jobTargetRef": map[string]any{"template": map[string]any{"metadata": map[string]any{"labels": map[string]any{"app": "settle"}},
			"spec": map[string]any{"containers": []any{map[string]any{"name": "app"}}}}}}})
	if err != nil {
		t.Fatal(err)
	}
	// KEDA's status.lastActiveTime: when it last saw lag (the ScaledJob
	// has none yet).
	so, err := FromScaledObject("ledger", "settle", map[string]any{
		"spec":   map[string]any{"scaleTargetRef": map[string]any{"name": "settle"}, "triggers": []any{map[string]any{"type": "kafka", "metadata": map[string]any{"consumerGroup": "settle"}}}},
		"status": map[string]any{"lastActiveTime": "2026-11-27T09:30:00Z"},
	})
	if err != nil {
		t.Fatal(err)
	}
	lastActive := time.Date(2026, 11, 27, 9, 30, 0, 0, time.UTC)
	idx := NewIndex(Snapshot{
		Workloads: []Workload{
			deployment("ledger", "settle", 0, settle, container("settle")),
			deployment("ledger", "settle-live", 2, settle, container("settle")),
			deployment("ledger", "settle-other", 0, map[string]string{"app": "other"}, container("settle")),
			deployment("ledger", "settle-env", 0, settle, container("settle", literal("KAFKA_GROUP_ID", "settle"))),
			sjw,
		},
		Scalers: []Scaler{so, scaledObject("ledger", "settle-live", "settle-live", trig),
			scaledObject("ledger", "settle-other", "settle-other", trig), sj},
	})
	sel := labels.SelectorFromSet(settle)
	got := idx.HeldAtZero("ledger", sel, "settle", nil)
	want := []ScaledToZero{{Workload: Ref{Deployment, "ledger", "settle"}, Scaler: Ref{ScaledObject, "ledger", "settle"}, LastActive: lastActive},
		{Workload: Ref{ScaledJob, "ledger", "settle-batch"}, Scaler: Ref{ScaledJob, "ledger", "settle-batch"}}}
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("HeldAtZero = %+v, want %+v", got, want)
	}
	if got := idx.HeldAtZero("other-ns", sel, "settle", nil); len(got) != 0 {
		t.Errorf("another namespace's policy: %+v", got)
	}
	member := []proof.GroupMember{{ClientID: "settle-1"}}
	if got := idx.HeldAtZero("ledger", sel, "settle", member); len(got) != 0 {
		t.Errorf("the group has a member: %+v", got)
	}
}
