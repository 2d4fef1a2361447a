package kafka

import (
	"context"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/retentionguard/retention-guard/internal/proof"
)

// featureGroupVersion is the finalized feature that turns on the consumer
// rebalance protocol (KIP-848) on 4.0+ brokers: level 1 (GroupVersion.GV_1)
// enables it, level 0 or absent does not
// (server-common GroupVersion.isConsumerRebalanceProtocolSupported; checked
// by KafkaApis.isConsumerGroupProtocolEnabled for every
// ConsumerGroupHeartbeat, the only way a classic group gets converted).
// 3.x brokers do not know the feature (3.9's Features enum has no
// group.version): there the broker config group.coordinator.rebalance
// .protocols alone decides. That config still gates the protocol on 4.0–4.x
// (both must allow it) but is deprecated from 4.3 (KIP-1237) and gone in
// 5.0, where the feature alone decides.
const featureGroupVersion = "group.version"

// brokerFeatures is what one broker's ApiVersions answer says of
// group.version.
type brokerFeatures struct {
	// answered: the broker answered ApiVersions v3+ (with features).
	answered bool
	// knowsGroupVersion: the broker lists group.version among its
	// supported features (4.0+).
	knowsGroupVersion bool
	// finalizedKnown: the broker knows the cluster's finalized features
	// (FinalizedFeaturesEpoch ≥ 0).
	finalizedKnown bool
	// groupVersion: the finalized level (0 when not finalized).
	groupVersion int16
	// deleteGroupsV3: DeleteGroups v3 (KIP-1331, new in 4.4).
	deleteGroupsV3 bool
}

// apiVersions asks every broker ApiVersions once per pass (the features and
// API versions several phases need); a broker that does not answer is left
// out of the map.
func (p *pass) apiVersions(ctx context.Context) map[int32]brokerFeatures {
	p.apiVersionsOnce.Do(func() {
		out := make(map[int32]brokerFeatures, len(p.brokers))
		for _, id := range p.brokers {
			req := kmsg.NewPtrApiVersionsRequest()
			// v3+ requires the client's software name and version: a broker
			// answers INVALID_REQUEST without them (kgo fills them in only on
			// Client.Request, which asks one broker).
			req.ClientSoftwareName, req.ClientSoftwareVersion = "retention-guard", "1"
			resp, err := p.cl.Broker(int(id)).Request(ctx, req)
			if err != nil {
				continue
			}
			r, ok := resp.(*kmsg.ApiVersionsResponse)
			if !ok || r.ErrorCode != 0 {
				continue
			}
			out[id] = featuresOf(r)
		}
		p.features = out
	})
	return p.features
}

// featuresOf reads one broker's ApiVersions answer.
func featuresOf(r *kmsg.ApiVersionsResponse) brokerFeatures {
	f := brokerFeatures{answered: r.Version >= 3, finalizedKnown: r.FinalizedFeaturesEpoch >= 0}
	for _, k := range r.ApiKeys {
		if k.ApiKey == kmsg.DeleteGroups.Int16() && k.MaxVersion >= 3 {
			f.deleteGroupsV3 = true
		}
	}
	for _, s := range r.SupportedFeatures {
		if s.Name == featureGroupVersion {
			f.knowsGroupVersion = true
		}
	}
	for _, ff := range r.FinalizedFeatures {
		if ff.Name == featureGroupVersion {
			f.groupVersion = ff.MaxVersionLevel
		}
	}
	return f
}

// consumerProtocolOn reports whether one broker may serve the consumer
// protocol, and so convert a classic group to a consumer group (KIP-848
// online migration: an Empty classic group as soon as a member joins with
// group.protocol=consumer, whatever group.consumer.migration.policy says —
// that internal config governs only non-empty groups). Fail closed: what
// is not known counts as "may".
//
//   - group.coordinator.rebalance.protocols read and without consumer: no
//     (3.x: the config alone decides; 4.0–4.x: KafkaApis
//     .isConsumerGroupProtocolEnabled needs it too).
//   - the broker knows group.version (4.0+): the finalized level decides
//     (≥ 1); not known (finalized epoch unknown): may.
//   - otherwise (3.x, or the broker did not answer): the config, when read
//     and naming consumer; not read: may.
func consumerProtocolOn(config proof.ConfigValue, f brokerFeatures, featuresRead bool) bool {
	if config.Present && !config.Null && !listsConsumer(config.Value) {
		return false
	}
	if featuresRead && f.answered && f.knowsGroupVersion {
		return !f.finalizedKnown || f.groupVersion >= 1
	}
	return true
}

func listsConsumer(protocols string) bool {
	for _, p := range strings.Split(protocols, ",") {
		if strings.EqualFold(strings.TrimSpace(p), "consumer") {
			return true
		}
	}
	return false
}

// migrationPossible reports whether any broker may serve the consumer
// protocol: any broker can coordinate the group.
func migrationPossible(brokers []int32, defaults map[int32]map[string]proof.ConfigValue, features map[int32]brokerFeatures) bool {
	for _, id := range brokers {
		f, read := features[id]
		if consumerProtocolOn(defaults[id][configRebalanceProtocols], f, read) {
			return true
		}
	}
	return false
}
