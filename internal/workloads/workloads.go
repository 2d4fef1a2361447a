// Package workloads maps a consumer group to the Kubernetes workloads whose
// pods consume it, says which evidence matched and how sure the match is.
//
// It is pure: no I/O, no clocks, no Kubernetes client. A caller gathers a
// Snapshot (pods, the ReplicaSets and Jobs between pods and their
// workloads, the workloads, the ConfigMaps their pods read), builds an
// Index once, and asks it about each group with the group's live members
// (proof.GroupMember: the client host the broker saw). The evidence, from
// the strongest:
//
//   - MemberHost (Certain): a live member's client host is the IP of a
//     running pod the workload owns (through a ReplicaSet for a Deployment
//     or an Argo Rollout, through a Job for a CronJob). The broker sees pod
//     IPs when consumers reach it without NAT, as inside one cluster.
//   - ScaledObject, ScaledJob (Declared): a KEDA ScaledObject scales the
//     workload (or a ScaledJob creates its Jobs) on the lag of a kafka or
//     apache-kafka trigger whose consumerGroup is the group and whose
//     bootstrapServers are the cluster's (keda.go). A trigger is the
//     operator's own statement of the group, for a workload parked at
//     zero as well; but it declares what KEDA scales on, where a live
//     member's address proves what runs: Declared is below Certain.
//   - Environment (Likely, or Possible): a container variable (a literal
//     value, a configMapKeyRef, or a key of an envFrom ConfigMap) equals
//     the group ID, under a name the Kafka clients and frameworks read the
//     group ID from (wellknown.go) — Likely — or any name containing GROUP
//     — Possible.
//   - ConfigMap (Likely, or Possible): a ConfigMap the pod mounts has the
//     group ID under such a key, or as a property of an application
//     .properties/.yaml file it holds.
//
// A parked workload (0 replicas, a suspended Job or CronJob) has no pods:
// only its environment and its KEDA triggers can match, and the match says
// so. Secrets are never read: a group ID kept in a Secret is not seen (a
// KEDA trigger whose consumerGroupFromEnv names a Secret's variable is
// listed unresolved), nor are KEDA's TriggerAuthentications (credentials
// only).
package workloads

import (
	"fmt"
	"net/netip"

	corev1 "k8s.io/api/core/v1"
)

// Kind is a workload kind the guard protects, or an object between a pod
// and its workload.
type Kind string

const (
	Deployment  Kind = "Deployment"
	StatefulSet Kind = "StatefulSet"
	Job         Kind = "Job"
	CronJob     Kind = "CronJob"
	// Rollout is Argo Rollouts' argoproj.io/v1alpha1 Rollout.
	Rollout    Kind = "Rollout"
	ReplicaSet Kind = "ReplicaSet"
)

// Ref names an object of a kind in a namespace.
type Ref struct {
	Kind      Kind
	Namespace string
	Name      string
}

// String is Kind/Name (the namespace is said where it matters).
func (r Ref) String() string { return fmt.Sprintf("%s/%s", r.Kind, r.Name) }

// Owner is an object's controller (its ownerReference with controller:
// true), in the object's namespace.
type Owner struct {
	Kind Kind
	Name string
}

// Pod is what matching needs of a pod.
type Pod struct {
	Namespace string
	Name      string
	// IPs are status.podIPs (status.podIP first).
	IPs []netip.Addr
	// HostNetwork pods have their node's IP, shared by every process on
	// the node: a member at that address is not evidence of this pod.
	HostNetwork bool
	// Terminated: phase Succeeded or Failed; its IP may be another pod's
	// by now.
	Terminated bool
	Labels     map[string]string
	// Owner is the pod's controller; nil for a bare pod.
	Owner *Owner
}

// Owned is an object between a pod and its workload: a ReplicaSet (owned
// by a Deployment or a Rollout) or a Job (owned by a CronJob or a KEDA
// ScaledJob; a Job is also a Workload).
type Owned struct {
	Ref   Ref
	Owner *Owner
}

// Workload is a Deployment, StatefulSet, Job, CronJob, Rollout or KEDA
// ScaledJob.
type Workload struct {
	Ref Ref
	// Replicas is the desired count (spec.replicas, 1 when unset; a Job's
	// parallelism). Unused for CronJobs.
	Replicas int32
	// Suspended is a Job's or CronJob's spec.suspend, a ScaledJob's
	// autoscaling.keda.sh/paused annotation.
	Suspended bool
	// Selector is spec.selector.matchLabels (Deployment, StatefulSet,
	// Rollout); empty for Jobs and CronJobs, whose selectors Kubernetes
	// generates.
	Selector map[string]string
	// Template is the pod template (a CronJob's
	// spec.jobTemplate.spec.template; the Deployment's that a Rollout's
	// spec.workloadRef names).
	Template corev1.PodTemplateSpec
	// Owner is a Job's CronJob or ScaledJob; such a Job is matched as its
	// owner.
	Owner *Owner
}

// Parked: the workload runs no pods by its spec (0 replicas, suspended).
func (w *Workload) Parked() bool {
	switch w.Ref.Kind {
	case CronJob, Job, ScaledJob:
		return w.Suspended
	}
	return w.Replicas == 0
}

// ConfigMap is a ConfigMap's data.
type ConfigMap struct {
	Namespace string
	Name      string
	Data      map[string]string
}

// Snapshot is what the matcher sees of the cluster. Namespaces not read
// are simply absent.
type Snapshot struct {
	Pods       []Pod
	Owned      []Owned // ReplicaSets, and Jobs as owned objects
	Workloads  []Workload
	ConfigMaps []ConfigMap
	// Scalers are KEDA's ScaledObjects and ScaledJobs (a ScaledJob is a
	// Workload as well).
	Scalers []Scaler
	// Servers are the cluster's bootstrap servers: a KEDA trigger that
	// names others is another cluster's and maps nothing. Empty: not
	// compared.
	Servers []string
}
