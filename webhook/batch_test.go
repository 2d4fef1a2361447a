package webhook

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	rgv1 "github.com/retentionguard/retention-guard/api/v1alpha1"
)

// Issue #8, through a real kube-apiserver: Jobs and CronJobs are guarded
// like Deployments. No kube-controller-manager runs in envtest, so the
// tests create a CronJob's run the way its controller does: a Job built
// from spec.jobTemplate whose controller ownerReference is the CronJob.

// settleJobTemplate is seed 003's daily batch settlement consumer as a
// Job's pod template (labels app=settle).
func settleJobTemplate() batchv1.JobTemplateSpec {
	tmpl := template(map[string]string{"app": "settle"}, container("settle", resetEnv, "none", commitEnv, "false"))
	tmpl.Spec.RestartPolicy = corev1.RestartPolicyNever
	return batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{Template: tmpl}}
}

func settleCronJob(ns, name string, suspend bool) *batchv1.CronJob {
	return &batchv1.CronJob{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: batchv1.CronJobSpec{
			Schedule:    "0 2 * * *",
			Suspend:     &suspend,
			JobTemplate: settleJobTemplate(),
		},
	}
}

// runOf is the Job the CronJob controller would create for cj's run at t.
func runOf(cj *batchv1.CronJob, at time.Time) *batchv1.Job {
	return &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{
			Name:        cj.Name + "-" + time.Unix(at.Unix()/60, 0).Format("0405"),
			Namespace:   cj.Namespace,
			Labels:      cj.Spec.JobTemplate.Labels,
			Annotations: cj.Spec.JobTemplate.Annotations,
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: "batch/v1", Kind: "CronJob", Name: cj.Name, UID: cj.UID,
				Controller: ptr(true), BlockOwnerDeletion: ptr(true),
			}},
		},
		Spec: *cj.Spec.JobTemplate.Spec.DeepCopy(),
	}
}

func settleJob(ns, name string, suspend bool) *batchv1.Job {
	jt := settleJobTemplate()
	jt.Spec.Suspend = &suspend
	return &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Spec: jt.Spec}
}

func (s *suiteEnv) batchCalls() float64 {
	var n float64
	for _, kind := range []string{kindJob, kindCronJob} {
		for _, o := range []outcome{outcomeAllowed, outcomeDenied, outcomeWarned, outcomeAudited, outcomeOverridden, outcomeSkipped, outcomeError} {
			n += testutil.ToFloat64(decisionsTotal.WithLabelValues(kind, string(o)))
		}
	}
	return n
}

// Seed 003 as a CronJob: the daily settlement run was down 8 days and its
// group's offsets expired. The CronJob controller's next Job is refused
// with the numbers and the way out, the policy gets an event naming the
// CronJob (related object: the CronJob); editing the job template of the
// running schedule is a rollout too; suspending and rescheduling are not.
// After the group's position is restored (Proven), the next run starts.
func TestCronJobRunRefusedWhileOffsetsExpired(t *testing.T) {
	s := startSuite(t)
	ns := s.newNamespace(t, "settlement")
	p := s.createPolicy(t, ns, rgv1.EnforcementDeny, proven(), 0)
	cj := settleCronJob(ns, "settle", false)
	if err := s.alice.Create(ctxFor(t), cj); err != nil {
		t.Fatalf("creating the CronJob under a proven policy refused: %v", err)
	}
	if err := s.alice.Create(ctxFor(t), runOf(cj, time.Date(2026, 11, 1, 2, 0, 0, 0, time.UTC))); err != nil {
		t.Fatalf("a run under a proven policy refused: %v", err)
	}

	s.setProof(t, p, noCommittedOffset(), 20*time.Second)
	deniedBefore := testutil.ToFloat64(decisionsTotal.WithLabelValues(kindJob, string(outcomeDenied)))
	run := runOf(cj, time.Date(2026, 11, 9, 2, 0, 0, 0, time.UTC))
	msg := mustDeny(t, s.admin.Create(ctxFor(t), run)) // as the CronJob controller, not alice
	mustContain(t, msg,
		"retention-guard refused this rollout (create) of Job "+ns+"/"+run.Name+" (a run of CronJob settle):",
		"policy ledger-settle-consumer (group ledger-settle-consumer) is Violated (proof 7f3a9c21, checked ",
		"24 partitions, 24 without a committed offset",
		"- NoCommittedOffset on 24 partitions of settle-task, e.g. settle-task[19]: no committed offset while log start is 193946",
		"--group ledger-settle-consumer --topic settle-task --reset-offsets --to-earliest --execute",
		`kubectl patch cronjob settle -n `+ns+` --type merge -p '{"spec":{"jobTemplate":{"metadata":{"annotations":{"retentionguard.io/override-proof":"7f3a9c21"}}}}}'`)
	if got := testutil.ToFloat64(decisionsTotal.WithLabelValues(kindJob, string(outcomeDenied))); got != deniedBefore+1 {
		t.Errorf("retentionguard_admission_decisions_total{kind=Job,decision=denied} went %v → %v, want +1", deniedBefore, got)
	}

	// The event on the policy names the CronJob and relates to it.
	note := s.waitEvent(t, p, EventRolloutDenied, "refused Job "+ns+"/"+run.Name+" (a run of CronJob settle) (create)")
	mustContain(t, note, "Violated (proof 7f3a9c21)", "NoCommittedOffset settle-task[0]")
	var evs eventsv1.EventList
	if err := s.admin.List(ctxFor(t), &evs, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	related := false
	for _, e := range evs.Items {
		if e.Reason == EventRolloutDenied && e.Related != nil && e.Related.Kind == "CronJob" && e.Related.Name == "settle" && e.Related.UID == cj.UID {
			related = true
		}
	}
	if !related {
		t.Errorf("no RolloutDenied event on the policy relates to CronJob settle (uid %s)", cj.UID)
	}

	// Editing the running schedule's job template is a rollout; changing
	// the schedule or suspending is not (and does not call the webhook).
	edit := cj.DeepCopy()
	edit.Spec.JobTemplate.Spec.Template.Spec.Containers[0].Image = "settle:2"
	msg = mustDeny(t, s.alice.Update(ctxFor(t), edit))
	mustContain(t, msg, "rollout (job template change) of CronJob "+ns+"/settle:", "kubectl patch cronjob settle")
	before := s.batchCalls()
	if err := s.alice.Patch(ctxFor(t), cj, client.RawPatch(types.MergePatchType, []byte(`{"spec":{"schedule":"0 3 * * *"}}`))); err != nil {
		t.Fatalf("a schedule change refused: %v", err)
	}
	if err := s.alice.Patch(ctxFor(t), cj, client.RawPatch(types.MergePatchType, []byte(`{"spec":{"suspend":true}}`))); err != nil {
		t.Fatalf("suspending refused: %v", err)
	}
	if after := s.batchCalls(); after != before {
		t.Errorf("the webhook was called %v times for a schedule change and a suspend; matchConditions should skip them", after-before)
	}

	// The group's position restored: the next run starts.
	s.setProof(t, p, proven(), 0)
	if err := s.admin.Create(ctxFor(t), runOf(cj, time.Date(2026, 11, 10, 2, 0, 0, 0, time.UTC))); err != nil {
		t.Fatalf("the next run after the proof holds again was refused: %v", err)
	}
}

// A suspended CronJob schedules nothing: it is created and edited freely
// while the proof fails; unsuspending it is a rollout and is refused.
func TestSuspendedCronJobIsFreeUntilUnsuspended(t *testing.T) {
	s := startSuite(t)
	ns := s.newNamespace(t, "settlement")
	s.createPolicy(t, ns, rgv1.EnforcementDeny, noCommittedOffset(), 0)

	before := s.batchCalls()
	cj := settleCronJob(ns, "settle", true)
	if err := s.alice.Create(ctxFor(t), cj); err != nil {
		t.Fatalf("creating a suspended CronJob refused: %v", err)
	}
	edit := cj.DeepCopy()
	edit.Spec.JobTemplate.Spec.Template.Spec.Containers[0].Image = "settle:2"
	edit.Spec.Schedule = "0 2 * * 1"
	if err := s.alice.Update(ctxFor(t), edit); err != nil {
		t.Fatalf("editing a suspended CronJob refused: %v", err)
	}
	if after := s.batchCalls(); after != before {
		t.Errorf("the webhook was called %v times for a suspended CronJob; matchConditions should skip it", after-before)
	}

	msg := mustDeny(t, s.alice.Patch(ctxFor(t), edit, client.RawPatch(types.MergePatchType, []byte(`{"spec":{"suspend":false}}`))))
	mustContain(t, msg, "retention-guard refused this rollout (unsuspend) of CronJob "+ns+"/settle:",
		"24 partitions, 24 without a committed offset",
		"kubectl patch cronjob settle -n "+ns+" --type merge")

	// Created unsuspended: refused, and the CronJob was not stored, so
	// the override goes into the manifest's job template.
	msg = mustDeny(t, s.alice.Create(ctxFor(t), settleCronJob(ns, "settle-now", false)))
	mustContain(t, msg, "retention-guard refused this rollout (create) of CronJob "+ns+"/settle-now:",
		"add to the manifest's spec.jobTemplate.metadata.annotations, then apply it again:\n  retentionguard.io/override-proof: \"7f3a9c21\"")
	mustLack(t, msg, "kubectl patch", "kubectl annotate")

	var got batchv1.CronJob
	if err := s.admin.Get(ctxFor(t), client.ObjectKeyFromObject(cj), &got); err != nil || got.Spec.Suspend == nil || !*got.Spec.Suspend {
		t.Errorf("the CronJob was unsuspended anyway (err %v)", err)
	}
}

// A Job created suspended starts nothing; unsuspending it starts its pods
// and is refused while the proof fails. A Job of another app is untouched.
func TestSuspendedJobStartsOnUnsuspend(t *testing.T) {
	s := startSuite(t)
	ns := s.newNamespace(t, "settlement")
	s.createPolicy(t, ns, rgv1.EnforcementDeny, noCommittedOffset(), 0)

	j := settleJob(ns, "settle-backfill", true)
	if err := s.alice.Create(ctxFor(t), j); err != nil {
		t.Fatalf("creating a suspended Job refused: %v", err)
	}
	msg := mustDeny(t, s.alice.Patch(ctxFor(t), j, client.RawPatch(types.MergePatchType, []byte(`{"spec":{"suspend":false}}`))))
	mustContain(t, msg, "retention-guard refused this rollout (unsuspend) of Job "+ns+"/settle-backfill:",
		"NoCommittedOffset on 24 partitions of settle-task",
		"kubectl annotate --overwrite job settle-backfill -n "+ns+" retentionguard.io/override-proof=7f3a9c21")

	// Started directly: refused too. The Job was not stored, so the way
	// to override is the manifest, not `kubectl annotate`.
	msg = mustDeny(t, s.alice.Create(ctxFor(t), settleJob(ns, "settle-now", false)))
	mustContain(t, msg, "retention-guard refused this rollout (create) of Job "+ns+"/settle-now:",
		"add to the manifest's metadata.annotations, then apply it again:\n  retentionguard.io/override-proof: \"7f3a9c21\"")
	mustLack(t, msg, "kubectl annotate", "kubectl patch")

	other := settleJob(ns, "report", false)
	other.Spec.Template.Labels = map[string]string{"app": "report"}
	if err := s.alice.Create(ctxFor(t), other); err != nil {
		t.Fatalf("a Job no policy selects was refused: %v", err)
	}
}

// The override annotation on the CronJob's job template lets the job
// template change and the runs through, as for a Deployment.
func TestCronJobOverrideOnTheJobTemplate(t *testing.T) {
	s := startSuite(t)
	ns := s.newNamespace(t, "settlement")
	p := s.createPolicy(t, ns, rgv1.EnforcementDeny, proven(), 0)
	cj := settleCronJob(ns, "settle", false)
	if err := s.alice.Create(ctxFor(t), cj); err != nil {
		t.Fatalf("creating the CronJob under a proven policy refused: %v", err)
	}
	s.setProof(t, p, noCommittedOffset(), 0)
	patch := `{"spec":{"jobTemplate":{"metadata":{"annotations":{"` + OverrideAnnotation + `":"7f3a9c21"}}}}}`
	if err := s.alice.Patch(ctxFor(t), cj, client.RawPatch(types.MergePatchType, []byte(patch))); err != nil {
		t.Fatalf("the override on the job template was refused: %v", err)
	}
	if err := s.admin.Create(ctxFor(t), runOf(cj, time.Date(2026, 11, 9, 2, 0, 0, 0, time.UTC))); err != nil {
		t.Fatalf("a run carrying the override was refused: %v", err)
	}
	s.waitEvent(t, p, EventProofOverridden, "(a run of CronJob settle) (create) over proof 7f3a9c21")
}
