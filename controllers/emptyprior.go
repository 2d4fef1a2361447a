package controllers

import (
	rgv1 "github.com/retentionguard/retention-guard/api/v1alpha1"
)

// priorProof is the policy's last proof when it proves generation (the
// same group and connection as written), else nil: a restarted manager
// dates an Empty classic group's clock from it (assemble.Input.Prior), on
// the reconciler's path and the live check's alike.
func priorProof(st rgv1.ConsumerRetentionPolicyStatus, generation int64) *rgv1.ProofStatus {
	if st.ObservedGeneration != generation {
		return nil
	}
	return st.Proof
}
