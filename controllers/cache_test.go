package controllers

import (
	"testing"

	. "github.com/onsi/gomega"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	rgv1 "github.com/retentionguard/retention-guard/api/v1alpha1"
)

// The cache transforms keep exactly what the reconciler and the webhook
// read, and drop the rest (managedFields, pod specs, annotations that
// repeat data).
func TestCacheTransformsKeepWhatDecisionsRead(t *testing.T) {
	g := NewWithT(t)
	managed := []metav1.ManagedFieldsEntry{{Manager: "kubectl", Operation: metav1.ManagedFieldsOperationApply}}

	cj := &batchv1.CronJob{
		ObjectMeta: metav1.ObjectMeta{Name: "settle", Namespace: "ledger", UID: "u1", ResourceVersion: "7", Generation: 3,
			Labels: map[string]string{"team": "ledger"}, Annotations: map[string]string{"note": "x"}, ManagedFields: managed},
		Spec: batchv1.CronJobSpec{
			Schedule: "0 2 * * *", TimeZone: ptr.To("Asia/Shanghai"), Suspend: ptr.To(true), StartingDeadlineSeconds: ptr.To[int64](300),
			JobTemplate: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "settle"}, Annotations: map[string]string{"a": "b"}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "settle:1"}}},
			}}},
		},
		Status: batchv1.CronJobStatus{LastScheduleTime: &metav1.Time{}},
	}
	out, err := reduceCronJob(cj)
	g.Expect(err).NotTo(HaveOccurred())
	want := &batchv1.CronJob{
		ObjectMeta: metav1.ObjectMeta{Name: "settle", Namespace: "ledger", UID: "u1", ResourceVersion: "7", Generation: 3},
		Spec: batchv1.CronJobSpec{Schedule: "0 2 * * *", TimeZone: ptr.To("Asia/Shanghai"), Suspend: ptr.To(true),
			StartingDeadlineSeconds: ptr.To[int64](300)},
	}
	want.Spec.JobTemplate.Spec.Template.Labels = map[string]string{"app": "settle"}
	g.Expect(out).To(Equal(want))

	sec := &metav1.PartialObjectMetadata{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: metav1.ObjectMeta{Name: "kafka-user", Namespace: "ledger", UID: "u2", ResourceVersion: "9",
			Labels: map[string]string{"a": "b"}, ManagedFields: managed,
			Annotations: map[string]string{corev1.LastAppliedConfigAnnotation: `{"data":{"password":"…"}}`}},
	}
	out, err = reduceSecretMetadata(sec)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(out).To(Equal(&metav1.PartialObjectMetadata{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: metav1.ObjectMeta{Name: "kafka-user", Namespace: "ledger", UID: "u2", ResourceVersion: "9"},
	}))

	p := &rgv1.ConsumerRetentionPolicy{ObjectMeta: metav1.ObjectMeta{Name: "settle", ManagedFields: managed,
		Annotations: map[string]string{corev1.LastAppliedConfigAnnotation: "{}", "team": "ledger"}},
		Spec: rgv1.ConsumerRetentionPolicySpec{GroupID: "settle"}}
	out, err = stripPolicy(p)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(out).To(Equal(&rgv1.ConsumerRetentionPolicy{ObjectMeta: metav1.ObjectMeta{Name: "settle",
		Annotations: map[string]string{"team": "ledger"}}, Spec: rgv1.ConsumerRetentionPolicySpec{GroupID: "settle"}}))

	// Other types pass through untouched.
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "x", ManagedFields: managed}}
	for _, fn := range []func(any) (any, error){reduceCronJob, reduceSecretMetadata, stripPolicy} {
		out, err := fn(cm)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(out).To(BeIdenticalTo(cm))
	}
}
