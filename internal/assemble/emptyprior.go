package assemble

import (
	"time"

	rgv1 "github.com/retentionguard/retention-guard/api/v1alpha1"
	"github.com/retentionguard/retention-guard/internal/proof"
)

// priorEmptyBound dates an Empty classic group's Empty clock from the
// policy's last proof when the observer cannot: a manager that restarted
// (an upgrade, a node drain) meets every batch group between its runs
// Empty since a time its memory never saw, which the proof must call
// Unknown (EmptyGroupOffsetsMayExpireBeforeWindow: the offsets may expire
// any moment). The status remembers what the last manager saw, and any
// lower bound on when an earlier Empty spell began, or a time the group was
// seen in another state, stays a lower bound on when the current spell
// began (a later spell begins later still):
//
//   - the last proof saw the group in another state (Stable, ...) at its
//     checkedAt, or Empty as another kind of group (another protocol or
//     protocol type: only a member joining changes it): Empty after then;
//   - the last proof saw it Empty with groupEmptySince (exact from
//     __consumer_offsets, or a bound): Empty after that.
//
// Only for the same cluster (the brokers' cluster ID, read by both proofs);
// the caller passes a prior proof only of the same generation of the policy
// (the same group and connection as written). The observation's own
// EmptySince, when it has one, wins.
func priorEmptyBound(obs proof.Observation, prior *rgv1.ProofStatus) proof.Observation {
	g := obs.Group
	if prior == nil || prior.ClusterID == "" || prior.ClusterID != obs.ClusterID ||
		g.State != proof.GroupStateEmpty || g.Protocol != proof.ProtocolClassic || g.ProtocolType == "" ||
		!g.EmptySince.IsZero() || !prior.CheckedAt.Time.Before(obs.ObservedAt) {
		return obs
	}
	var bound time.Time
	switch {
	case prior.GroupState == "":
		return obs // the state was not read
	case prior.GroupState != proof.GroupStateEmpty,
		prior.GroupProtocol != g.Protocol || prior.GroupProtocolType != g.ProtocolType:
		bound = prior.CheckedAt.Time
	case prior.GroupEmptySince != nil:
		bound = prior.GroupEmptySince.Time
	default:
		return obs // Empty then too, since a time nobody saw
	}
	obs.Group.EmptySince, obs.Group.EmptySinceExact, obs.Group.EmptyBy = bound, false, time.Time{}
	return obs
}
