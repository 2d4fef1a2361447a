package webhook

import (
	"bytes"
	"encoding/json"

	admissionv1 "k8s.io/api/admission/v1"
	batchv1 "k8s.io/api/batch/v1"
	"k8s.io/apimachinery/pkg/api/equality"
)

// templatesDiffer reports whether the pod template changed. Templates from
// a request are compared byte for byte: the API server serializes the old
// and the new object alike from its typed objects (fields in one order,
// quantities canonical, empty values omitted), so equal templates arrive
// as equal bytes — and it calls the webhook for an update only when its
// CEL match condition finds the templates different. Comparing bytes spares
// decoding two whole pod templates on every guarded rollout. Templates
// that were decoded, not received (tests), are compared semantically
// (equality.Semantic: 1000m equals 1).
func templatesDiffer(old, cur *workload) bool {
	if old.RawTemplate != nil || cur.RawTemplate != nil {
		return !bytes.Equal(old.RawTemplate, cur.RawTemplate)
	}
	return !equality.Semantic.DeepEqual(&old.Template, &cur.Template)
}

// rollout says why a request would start consumers; rolloutNone when it
// would not.
type rollout string

const (
	rolloutNone            rollout = ""
	rolloutCreate          rollout = "create"
	rolloutScaleFromZero   rollout = "scale from zero"
	rolloutUnpause         rollout = "unpause"
	rolloutTemplateChanged rollout = "pod template change"
	// The batch kinds (Jobs and CronJobs).
	rolloutUnsuspend          rollout = "unsuspend"
	rolloutJobTemplateChanged rollout = "job template change"
)

// startsConsumers reports whether the rollout starts consumers that were not
// running: a create with replicas, a scale from zero, an unpause, an
// unsuspend, a Job's create (a CronJob's run included). Such a rollout is
// judged on a live observation. A CronJob's own create or edit starts
// nothing until its Jobs are created, each judged then; a pod template
// change replaces consumers that were running.
func startsConsumers(kind string, r rollout) bool {
	if kind == kindCronJob {
		return false
	}
	switch r {
	case rolloutCreate, rolloutScaleFromZero, rolloutUnpause, rolloutUnsuspend:
		return true
	}
	return false
}

// detectRollout implements the admission contract's definition of a
// rollout:
//
//   - CREATE with replicas ≠ 0 (nil replicas is 1);
//   - UPDATE that scales from 0 to more;
//   - UPDATE that unpauses a Deployment or Rollout whose replicas > 0;
//   - UPDATE that changes the pod template (semantically) while the new
//     replicas > 0 (a Rollout's spec.workloadRef changing counts).
//
// Everything else — scale down, scale within > 0, metadata, status — is not
// a rollout and is always allowed. For a scale subresource request old and
// new carry only replicas, so only the scale rule can fire.
func detectRollout(op admissionv1.Operation, old, cur *workload) rollout {
	switch cur.Kind {
	case kindJob:
		return detectJobRollout(op, old, cur)
	case kindCronJob:
		return detectCronJobRollout(op, old, cur)
	}
	switch op {
	case admissionv1.Create:
		if cur.replicas() != 0 {
			return rolloutCreate
		}
		return rolloutNone
	case admissionv1.Update:
		if old == nil || cur.replicas() <= 0 {
			return rolloutNone
		}
		switch {
		case old.replicas() == 0:
			return rolloutScaleFromZero
		case old.Paused && !cur.Paused:
			return rolloutUnpause
		case templatesDiffer(old, cur), workloadRefsDiffer(old.WorkloadRef, cur.WorkloadRef):
			return rolloutTemplateChanged
		}
	}
	return rolloutNone
}

// workloadRefsDiffer reports whether a Rollout's spec.workloadRef changed:
// its pods then come from another template.
func workloadRefsDiffer(old, cur *workloadRef) bool {
	if old == nil || cur == nil {
		return old != cur
	}
	return *old != *cur
}

// detectJobRollout: every start of a Job is a rollout, including the Jobs
// a CronJob's controller creates for its runs.
//
//   - CREATE of a Job that is not suspended;
//   - UPDATE that unsuspends it (spec.suspend true → false).
//
// Everything else — suspending, metadata, the few fields a Job lets change
// — starts nothing. (A Job's pod template is immutable once it has
// started; while suspended it may change, and the unsuspend is judged with
// the template it then has.)
func detectJobRollout(op admissionv1.Operation, old, cur *workload) rollout {
	switch op {
	case admissionv1.Create:
		if !cur.Suspended {
			return rolloutCreate
		}
	case admissionv1.Update:
		if old != nil && old.Suspended && !cur.Suspended {
			return rolloutUnsuspend
		}
	}
	return rolloutNone
}

// detectCronJobRollout: a CronJob is a rollout when it would schedule runs
// of a (possibly new) job template.
//
//   - CREATE of a CronJob that is not suspended;
//   - UPDATE that unsuspends it;
//   - UPDATE that changes spec.jobTemplate (semantically) while the new
//     CronJob is not suspended.
//
// Suspending, a schedule change, history limits and metadata are not
// rollouts. Each run is judged again when its Job is created.
func detectCronJobRollout(op admissionv1.Operation, old, cur *workload) rollout {
	switch op {
	case admissionv1.Create:
		if !cur.Suspended {
			return rolloutCreate
		}
	case admissionv1.Update:
		switch {
		case old == nil || cur.Suspended:
		case old.Suspended:
			return rolloutUnsuspend
		case jobTemplatesDiffer(old.RawJobTemplate, cur.RawJobTemplate):
			return rolloutJobTemplateChanged
		}
	}
	return rolloutNone
}

// jobTemplatesDiffer compares two CronJob job templates semantically;
// identical bytes are equal without decoding, and a template that does not
// decode counts as changed.
func jobTemplatesDiffer(old, cur []byte) bool {
	if bytes.Equal(old, cur) {
		return false
	}
	var o, c batchv1.JobTemplateSpec
	if json.Unmarshal(old, &o) != nil || json.Unmarshal(cur, &c) != nil {
		return true
	}
	return !equality.Semantic.DeepEqual(o, c)
}
