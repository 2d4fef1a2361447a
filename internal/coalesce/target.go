package coalesce

import (
	"slices"
	"strings"

	"github.com/retentionguard/retention-guard/internal/kafka"
)

// What a pass is asked for: targets keyed and normalized so that policies
// asking the same share one, and the discovery the connections want.

// targetKey identifies a target: its group, its sorted, deduplicated
// topics, whether it reads __consumer_offsets, and its business cursor
// (the cursor's own key: database, query and group, no secrets).
func targetKey(t kafka.Target) string {
	n := normalizeTarget(t)
	k := n.Group + "\x00" + strings.Join(n.Topics, "\x00")
	if n.ReadOffsetsTopic {
		k += "\x00\x01offsets-topic"
	}
	if n.Cursor != nil {
		k += "\x00\x02cursor\x00" + n.Cursor.Key()
	}
	if n.RecoveryWindow > 0 {
		k += "\x00\x03window\x00" + n.RecoveryWindow.String()
	}
	return k
}

func normalizeTarget(t kafka.Target) kafka.Target {
	topics := slices.Clone(t.Topics)
	slices.Sort(topics)
	return kafka.Target{Group: t.Group, Topics: slices.Compact(topics), ReadOffsetsTopic: t.ReadOffsetsTopic, Cursor: t.Cursor,
		RecoveryWindow: t.RecoveryWindow}
}

// mergeDiscovery merges what the watchers of a connection want: nil when
// none wants discovery, every group when one wants them all, else the
// groups any one's Match accepts.
func mergeDiscovery(watchers map[ConnectionOwner]*kafka.Discovery) *kafka.Discovery {
	var matches []func(string) bool
	wanted := false
	for _, d := range watchers {
		if d == nil {
			continue
		}
		if d.Match == nil {
			return &kafka.Discovery{}
		}
		wanted = true
		matches = append(matches, d.Match)
	}
	if !wanted {
		return nil
	}
	return &kafka.Discovery{Match: func(g string) bool {
		for _, m := range matches {
			if m(g) {
				return true
			}
		}
		return false
	}}
}
