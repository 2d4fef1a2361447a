package webhook

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"
	"time"

	rgv1 "github.com/retentionguard/retention-guard/api/v1alpha1"
	"github.com/retentionguard/retention-guard/internal/freshness"
	"github.com/retentionguard/retention-guard/internal/proof"
)

// statusProofFreshness says whether the policy's status proof can be used
// as is at now, by the one freshness rule (internal/freshness: confirmed
// within 2 × checkInterval + 30s, at most 30s ahead); when it cannot,
// reason (ReasonProofMissing or ReasonProofStale) and detail say why. The
// proof was last confirmed at
// the later of its checkedAt and renewed, the renewTime of the heartbeat
// Lease its status names (zero when there is none): the manager writes a
// status only when the proof changes, and renews the Lease once it has
// re-proved every policy naming it.
func statusProofFreshness(p *rgv1.ConsumerRetentionPolicy, renewed, now time.Time) (fresh bool, reason, detail string) {
	ps := p.Status.Proof
	if ps == nil {
		return false, ReasonProofMissing, "no proof in status yet"
	}
	if p.Status.ObservedGeneration != p.Generation {
		return false, ReasonProofStale, fmt.Sprintf("status proof is for generation %d, policy at %d",
			p.Status.ObservedGeneration, p.Generation)
	}
	if ps.CheckedAt.IsZero() {
		return false, ReasonProofStale, "status proof has no checkedAt"
	}
	confirmed, how, field := ps.CheckedAt.Time, "status proof checked", "status proof checkedAt"
	if hb := p.Status.Heartbeat; hb != nil && renewed.After(confirmed) {
		lease := "heartbeat Lease " + hb.Namespace + "/" + hb.Name
		confirmed, how, field = renewed, "status proof last confirmed by "+lease, lease+" renewTime"
	}
	interval := p.Spec.CheckIntervalOrDefault()
	switch state, age := freshness.Of(confirmed, now, interval); state {
	case freshness.Stale:
		return false, ReasonProofStale, fmt.Sprintf("%s %s ago, limit 2 × checkInterval + 30s = %s",
			how, proof.FormatDurationShort(age), proof.FormatDurationShort(freshness.Window(interval)))
	case freshness.Future:
		return false, ReasonProofStale, fmt.Sprintf("%s is %s in the future", field, proof.FormatDurationShort(-age))
	}
	return true, "", ""
}

// webhookProofID identifies a verdict the webhook had to declare Unknown
// itself (no usable proof): a short hash of the policy UID, its generation,
// the reason, and the stale status proof's checkedAt and proofID. It stays
// the same while the situation does, so it can be used in the override
// annotation, and changes as soon as a newer proof is written.
func webhookProofID(p *rgv1.ConsumerRetentionPolicy, reason string) string {
	h := sha256.New()
	b := make([]byte, 0, 128)
	b = append(b, p.UID...)
	b = append(b, '\n')
	b = strconv.AppendInt(b, p.Generation, 10)
	b = append(b, '\n')
	b = append(b, reason...)
	if ps := p.Status.Proof; ps != nil {
		b = append(b, '\n')
		b = ps.CheckedAt.UTC().AppendFormat(b, time.RFC3339)
		b = append(b, '\n')
		b = append(b, ps.ProofID...)
	}
	h.Write(b)
	var sum [sha256.Size]byte
	return hex.EncodeToString(h.Sum(sum[:0])[:4])
}
