package e2e

// What a person with kubectl does and sees is test/e2e/e2eutil's, shared
// with test/e2e (stk.Admin()); here is only what this suite's policies and
// Deployments look like.

import (
	"testing"
	"time"

	rgv1 "github.com/retentionguard/retention-guard/api/v1alpha1"
	"github.com/retentionguard/retention-guard/test/e2e/e2eutil"
)

// policy creates a Deny policy named after its group with the shortest
// check interval the CRD allows, on the broker at bootstrap.
func policy(t *testing.T, ns, group, topic, app, bootstrap string, window time.Duration) *rgv1.ConsumerRetentionPolicy {
	t.Helper()
	return policyWith(t, ns, group, topic, app, bootstrap, window, nil)
}

// policyWith is policy, with edit applied to the spec before it is
// created.
func policyWith(t *testing.T, ns, group, topic, app, bootstrap string, window time.Duration,
	edit func(*rgv1.ConsumerRetentionPolicySpec)) *rgv1.ConsumerRetentionPolicy {
	t.Helper()
	p := e2eutil.NewPolicy(ns, group, group, topic, app, bootstrap, window)
	if edit != nil {
		edit(&p.Spec)
	}
	e2eutil.Must(t, stk.Admin().Create(t, p))
	return p
}

// deployment creates a Deployment of the consumer app (no kubelet runs
// it: admission is what is tested) and returns the API server's answer.
func deployment(t *testing.T, ns, name, app string, replicas int32) error {
	t.Helper()
	return stk.Admin().Create(t, e2eutil.NewDeployment(ns, name, app, replicas))
}
