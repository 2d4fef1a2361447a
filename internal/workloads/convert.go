package workloads

import (
	"fmt"
	"net/netip"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// The conversions from API objects a gatherer lists.

func controller(refs []metav1.OwnerReference) *Owner {
	for _, r := range refs {
		if r.Controller != nil && *r.Controller {
			return &Owner{Kind: Kind(r.Kind), Name: r.Name}
		}
	}
	return nil
}

func replicas(r *int32) int32 {
	if r == nil {
		return 1
	}
	return *r
}

func matchLabels(s *metav1.LabelSelector) map[string]string {
	if s == nil {
		return nil
	}
	return s.MatchLabels
}

// FromPod converts a pod.
func FromPod(p *corev1.Pod) Pod {
	out := Pod{
		Namespace: p.Namespace, Name: p.Name, Labels: p.Labels,
		HostNetwork: p.Spec.HostNetwork,
		Terminated:  p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed,
		Owner:       controller(p.OwnerReferences),
	}
	seen := map[netip.Addr]bool{}
	add := func(s string) {
		if a, err := netip.ParseAddr(s); err == nil && !seen[a.Unmap()] {
			seen[a.Unmap()] = true
			out.IPs = append(out.IPs, a.Unmap())
		}
	}
	add(p.Status.PodIP)
	for _, ip := range p.Status.PodIPs {
		add(ip.IP)
	}
	return out
}

// FromReplicaSet converts a ReplicaSet to the link between its pods and
// its Deployment or Rollout.
func FromReplicaSet(rs *appsv1.ReplicaSet) Owned {
	return Owned{Ref: Ref{ReplicaSet, rs.Namespace, rs.Name}, Owner: controller(rs.OwnerReferences)}
}

// FromDeployment converts a Deployment.
func FromDeployment(d *appsv1.Deployment) Workload {
	return Workload{
		Ref: Ref{Deployment, d.Namespace, d.Name}, Replicas: replicas(d.Spec.Replicas),
		Selector: matchLabels(d.Spec.Selector), Template: d.Spec.Template,
	}
}

// FromStatefulSet converts a StatefulSet.
func FromStatefulSet(s *appsv1.StatefulSet) Workload {
	return Workload{
		Ref: Ref{StatefulSet, s.Namespace, s.Name}, Replicas: replicas(s.Spec.Replicas),
		Selector: matchLabels(s.Spec.Selector), Template: s.Spec.Template,
	}
}

// FromJob converts a Job (owned by a CronJob, it is matched as the
// CronJob).
func FromJob(j *batchv1.Job) Workload {
	return Workload{
		Ref: Ref{Job, j.Namespace, j.Name}, Replicas: replicas(j.Spec.Parallelism),
		Suspended: j.Spec.Suspend != nil && *j.Spec.Suspend,
		Template:  j.Spec.Template, Owner: controller(j.OwnerReferences),
	}
}

// FromCronJob converts a CronJob.
func FromCronJob(c *batchv1.CronJob) Workload {
	return Workload{
		Ref:       Ref{CronJob, c.Namespace, c.Name},
		Suspended: c.Spec.Suspend != nil && *c.Spec.Suspend,
		Template:  c.Spec.JobTemplate.Spec.Template,
	}
}

// rolloutJSON is what matching reads of an Argo Rollout.
type rolloutJSON struct {
	Spec struct {
		Replicas    *int32                 `json:"replicas"`
		Selector    *metav1.LabelSelector  `json:"selector"`
		Template    corev1.PodTemplateSpec `json:"template"`
		WorkloadRef *struct {
			Kind string `json:"kind"`
			Name string `json:"name"`
		} `json:"workloadRef"`
	} `json:"spec"`
}

// FromRollout converts an Argo Rollout (argoproj.io/v1alpha1, as
// unstructured content). A Rollout whose spec.workloadRef names a
// Deployment takes that Deployment's pod template (and selector when it
// has none): deployment returns it, or nil when it is not known.
func FromRollout(namespace, name string, content map[string]any, deployment func(name string) *appsv1.Deployment) (Workload, error) {
	var r rolloutJSON
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(content, &r); err != nil {
		return Workload{}, fmt.Errorf("reading Rollout %s/%s: %w", namespace, name, err)
	}
	w := Workload{
		Ref: Ref{Rollout, namespace, name}, Replicas: replicas(r.Spec.Replicas),
		Selector: matchLabels(r.Spec.Selector), Template: r.Spec.Template,
	}
	if ref := r.Spec.WorkloadRef; ref != nil && ref.Kind == string(Deployment) && deployment != nil {
		if d := deployment(ref.Name); d != nil {
			w.Template = d.Spec.Template
			if len(w.Selector) == 0 {
				w.Selector = matchLabels(d.Spec.Selector)
			}
		}
	}
	return w, nil
}

// kedaJSON is what matching reads of a KEDA ScaledObject or ScaledJob
// (keda.sh/v1alpha1).
type kedaJSON struct {
	Metadata struct {
		Annotations map[string]string `json:"annotations"`
	} `json:"metadata"`
	Spec struct {
		ScaleTargetRef *struct {
			APIVersion             string `json:"apiVersion"`
			Kind                   string `json:"kind"`
			Name                   string `json:"name"`
			EnvSourceContainerName string `json:"envSourceContainerName"`
		} `json:"scaleTargetRef"`
		JobTargetRef *struct {
			Parallelism *int32                 `json:"parallelism"`
			Template    corev1.PodTemplateSpec `json:"template"`
		} `json:"jobTargetRef"`
		EnvSourceContainerName string `json:"envSourceContainerName"`
		Triggers               []struct {
			Type     string            `json:"type"`
			Name     string            `json:"name"`
			Metadata map[string]string `json:"metadata"`
		} `json:"triggers"`
	} `json:"spec"`
	Status struct {
		LastActiveTime *metav1.Time `json:"lastActiveTime"`
	} `json:"status"`
}

// lastActive is KEDA's status.lastActiveTime, zero when unset.
func (k *kedaJSON) lastActive() time.Time {
	if k.Status.LastActiveTime == nil {
		return time.Time{}
	}
	return k.Status.LastActiveTime.UTC()
}

func (k *kedaJSON) triggers() []Trigger {
	var out []Trigger
	for _, t := range k.Spec.Triggers {
		out = append(out, Trigger{Type: t.Type, Name: t.Name, Metadata: t.Metadata})
	}
	return out
}

// FromScaledObject converts a KEDA ScaledObject (unstructured content).
// Its scaleTargetRef names the target: kind Deployment when unset, an
// Argo Rollout by its kind and argoproj.io group.
func FromScaledObject(namespace, name string, content map[string]any) (Scaler, error) {
	var k kedaJSON
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(content, &k); err != nil {
		return Scaler{}, fmt.Errorf("reading ScaledObject %s/%s: %w", namespace, name, err)
	}
	s := Scaler{Ref: Ref{ScaledObject, namespace, name}, Triggers: k.triggers(), LastActive: k.lastActive()}
	if t := k.Spec.ScaleTargetRef; t != nil {
		kind := Kind(t.Kind)
		if kind == "" {
			kind = Deployment
		}
		s.Target = Ref{kind, namespace, t.Name}
		s.EnvSourceContainerName = t.EnvSourceContainerName
	}
	return s, nil
}

// FromScaledJob converts a KEDA ScaledJob (unstructured content): the
// Scaler, and the Workload its Jobs are matched as (the pod template of
// spec.jobTargetRef; parked while autoscaling.keda.sh/paused is true).
func FromScaledJob(namespace, name string, content map[string]any) (Scaler, Workload, error) {
	var k kedaJSON
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(content, &k); err != nil {
		return Scaler{}, Workload{}, fmt.Errorf("reading ScaledJob %s/%s: %w", namespace, name, err)
	}
	ref := Ref{ScaledJob, namespace, name}
	w := Workload{Ref: ref, Replicas: 1, Suspended: k.Metadata.Annotations["autoscaling.keda.sh/paused"] == "true"}
	if j := k.Spec.JobTargetRef; j != nil {
		w.Template = j.Template
		w.Replicas = replicas(j.Parallelism)
	}
	return Scaler{Ref: ref, Target: ref, EnvSourceContainerName: k.Spec.EnvSourceContainerName, Triggers: k.triggers(), LastActive: k.lastActive()}, w, nil
}
