package testenv

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// RunDeploymentPod does what the Deployment controller and a kubelet would
// for one pod of d, on a control plane that runs neither (see RunPod).
func RunDeploymentPod(ctx context.Context, c client.Client, d *appsv1.Deployment, hash, ip string) (*corev1.Pod, error) {
	owner := metav1.OwnerReference{APIVersion: "apps/v1", Kind: "Deployment", Name: d.Name, UID: d.UID, Controller: ptr.To(true)}
	return RunPod(ctx, c, d.Namespace, owner, d.Spec.Selector.MatchLabels, d.Spec.Template, hash, ip)
}

// RunPod does what a Deployment's (or an Argo Rollout's) controller and a
// kubelet would for one pod of the workload owner names: it creates the
// ReplicaSet the owner controls (named <owner>-hash, the template's labels
// with pod-template-hash, selecting selector with it), a pod that
// ReplicaSet controls (<owner>-hash-x1), and sets the pod Running at ip
// through the status subresource.
func RunPod(ctx context.Context, c client.Client, namespace string, owner metav1.OwnerReference, selector map[string]string,
	template corev1.PodTemplateSpec, hash, ip string) (*corev1.Pod, error) {
	labels := map[string]string{"pod-template-hash": hash}
	for k, v := range template.Labels {
		labels[k] = v
	}
	sel := map[string]string{"pod-template-hash": hash}
	for k, v := range selector {
		sel[k] = v
	}
	rs := &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: owner.Name + "-" + hash, OwnerReferences: []metav1.OwnerReference{owner}},
		Spec:       appsv1.ReplicaSetSpec{Selector: &metav1.LabelSelector{MatchLabels: sel}, Template: *template.DeepCopy()},
	}
	rs.Spec.Template.Labels = labels
	if err := c.Create(ctx, rs); err != nil {
		return nil, fmt.Errorf("creating ReplicaSet %s: %w", rs.Name, err)
	}
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: rs.Name + "-x1", Labels: labels,
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: rs.Name, UID: rs.UID, Controller: ptr.To(true)}}},
		Spec: *template.Spec.DeepCopy(),
	}
	if err := c.Create(ctx, p); err != nil {
		return nil, fmt.Errorf("creating pod %s: %w", p.Name, err)
	}
	p.Status = corev1.PodStatus{Phase: corev1.PodRunning, PodIP: ip, PodIPs: []corev1.PodIP{{IP: ip}}}
	if err := c.Status().Update(ctx, p); err != nil {
		return nil, fmt.Errorf("setting pod %s's IP: %w", p.Name, err)
	}
	return p, nil
}
