package node

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	rgv1 "github.com/retentionguard/retention-guard/api/v1alpha1"
	"github.com/retentionguard/retention-guard/test/e2e/e2eutil"
)

// Scenario 4: a CronJob's run is refused while its group's proof fails and
// admitted once it holds. The Jobs are created by the real CronJob
// controller (every minute), which records the refusal as a FailedCreate
// event on the CronJob; the admitted run's pod resumes at the reset
// position and exits when its batch is done.
func TestCronJobRunRefusedThenAdmitted(t *testing.T) {
	installed(t)
	ctx := ctxFor(t, 8*time.Minute)
	const ns, topic, group, app = "nightly", "nightly-tasks", "nightly-settle", "nightly"
	namespace(t, ns)
	must(t, kafka.CreateTopic(ctx, topic, 1, map[string]string{"retention.ms": strconv.FormatInt((30 * 24 * time.Hour).Milliseconds(), 10)}))
	must(t, kafka.Produce(ctx, topic, 1, 50))
	must(t, kafka.Commit(ctx, group, topic, map[int32]int64{0: 10}))
	key := createPolicy(t, ns, app, group, topic, app, policyOpts{})
	e2eutil.WaitPolicy(t, admin(), key, time.Minute, "Proven", proven)
	waitGuarded(t, ns)

	container := consumerContainer(group, topic, "none", false)
	container.Env = append(container.Env, corev1.EnvVar{Name: "CONSUMER_EXIT_AFTER_IDLE", Value: "3s"})
	cj := &batchv1.CronJob{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: app},
		Spec: batchv1.CronJobSpec{
			Schedule:          "* * * * *",
			ConcurrencyPolicy: batchv1.ForbidConcurrent,
			JobTemplate: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{
				BackoffLimit: ptr.To[int32](0),
				Template: corev1.PodTemplateSpec{
					ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": app}},
					Spec: corev1.PodSpec{
						RestartPolicy: corev1.RestartPolicyNever,
						Containers:    []corev1.Container{container},
					},
				},
			}},
		},
	}
	// Created while the proof holds: admitted.
	must(t, admin().Create(ctx, cj))

	// Retention passes the committed offset before the first run.
	must(t, kafka.DeleteRecords(ctx, topic, map[int32]int64{0: 20}))
	e2eutil.WaitPolicy(t, admin(), key, time.Minute, "Violated with CommittedOffsetExpired", func(p *rgv1.ConsumerRetentionPolicy) bool {
		return e2eutil.Verdict(p) == "Violated" && e2eutil.Ready(p).Reason == "CommittedOffsetExpired"
	})
	ev := waitEvent(t, ns, "CronJob", app, "FailedCreate")
	t.Logf("the CronJob controller's event: %s %s: %s", ev.Type, ev.Reason, ev.Message)
	contains(t, "the FailedCreate event", ev.Message, `admission webhook "workloads.retentionguard.io" denied the request`,
		"CommittedOffsetExpired", "10 records expired")
	if jobs := jobsOf(t, ns, app); len(jobs) != 0 {
		t.Fatalf("a Job exists although its creation was refused: %v", jobs)
	}

	// The team replays from the log start; the controller's next attempt
	// is admitted. (Annotating the CronJob makes the controller retry now
	// instead of after its backoff; it is not a rollout, so not guarded.)
	_, err := kafka.ResetToLogStart(ctx, group, topic)
	must(t, err)
	e2eutil.WaitPolicy(t, admin(), key, time.Minute, "Proven after the reset", proven)
	_, err = kubectl(ctx, "annotate", "cronjob/"+app, "--namespace", ns, "--overwrite", "test.retentionguard.io/retry="+strconv.FormatInt(time.Now().Unix(), 10))
	must(t, err)
	var job batchv1.Job
	waitFor(t, "a Job of the CronJob completed", 4*time.Minute, func() error {
		jobs := jobsOf(t, ns, app)
		for _, j := range jobs {
			if j.Status.Succeeded > 0 {
				job = j
				return nil
			}
			if j.Status.Failed > 0 {
				return fmt.Errorf("job %s failed", j.Name)
			}
		}
		return fmt.Errorf("%d jobs, none succeeded yet", len(jobs))
	})
	if len(job.OwnerReferences) == 0 || job.OwnerReferences[0].Kind != "CronJob" {
		t.Errorf("job %s is not the CronJob controller's: owners %+v", job.Name, job.OwnerReferences)
	}
	var pods corev1.PodList
	must(t, admin().List(ctx, &pods, client.InNamespace(ns), client.MatchingLabels{"job-name": job.Name}))
	if len(pods.Items) != 1 {
		t.Fatalf("job %s has %d pods", job.Name, len(pods.Items))
	}
	lines, raw, err := consumerLog(ctx, ns, pods.Items[0].Name)
	must(t, err)
	c := summarize(lines)
	if f := c.first[0]; f.Offset != 20 || f.Reset || c.last[0] != 49 {
		t.Errorf("the admitted run read from %d (reset %v) to %d; want 20 (the reset position) to 49:\n%s", f.Offset, f.Reset, c.last[0], raw)
	}
	if !strings.Contains(raw, "no record for 3s") {
		t.Errorf("the run did not end as a batch (idle exit):\n%s", raw)
	}
	_, err = kubectl(ctx, "patch", "cronjob/"+app, "--namespace", ns, "--type=merge", "--patch", `{"spec":{"suspend":true}}`)
	must(t, err) // suspending is never refused
}

func jobsOf(t *testing.T, ns, cronJob string) []batchv1.Job {
	t.Helper()
	var jobs batchv1.JobList
	must(t, admin().List(suite, &jobs, client.InNamespace(ns)))
	var out []batchv1.Job
	for _, j := range jobs.Items {
		for _, o := range j.OwnerReferences {
			if o.Kind == "CronJob" && o.Name == cronJob {
				out = append(out, j)
			}
		}
	}
	return out
}
