package kafka

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/retentionguard/retention-guard/internal/proof"
)

// configShareAutoOffsetReset is where a share group starts a partition it
// has no share state for (SharePartition.startOffsetDuringInitialization):
// latest by default (GroupConfig.SHARE_AUTO_OFFSET_RESET_DEFAULT), set per
// group with IncrementalAlterConfigs on the GROUP resource.
const configShareAutoOffsetReset = "share.auto.offset.reset"

// readShareReset reads share.auto.offset.reset of every share group with
// DescribeConfigs on the GROUP resource (type 32, Kafka 4.0+; the broker
// answers a group's effective value, its default included,
// ConfigHelper.describeConfigs). Only share groups are asked: a 3.9 broker
// refuses the resource type for the whole request, and has no share
// groups. The principal needs DescribeConfigs on the group
// (ConfigHelper.handleDescribeConfigsRequest; Describe or Read do not
// imply it). What is not read is no failure of the observation: the proof
// needs it only for a partition without share state that holds records,
// and says there that it is unknown and why
// (GroupObservation.ShareAutoOffsetResetProblem).
func (p *pass) readShareReset(ctx context.Context) {
	req := kmsg.NewPtrDescribeConfigsRequest()
	for _, g := range p.groups {
		gs := p.groupInfo[g]
		if !gs.stateKnown || gs.protocol != proof.ProtocolShare {
			continue
		}
		r := kmsg.NewDescribeConfigsRequestResource()
		r.ResourceType = kmsg.ConfigResourceTypeGroupConfig
		r.ResourceName = g
		r.ConfigNames = []string{configShareAutoOffsetReset}
		req.Resources = append(req.Resources, r)
	}
	if len(req.Resources) == 0 {
		return
	}
	if p.newSharePartitionsStartAtZero(ctx) {
		p.mu.Lock()
		for _, r := range req.Resources {
			p.groupInfo[r.ResourceName].shareNewAtZero = true
		}
		p.mu.Unlock()
	}
	set := func(g string, v proof.ConfigValue, problem string) {
		p.mu.Lock()
		defer p.mu.Unlock()
		if gs := p.groupInfo[g]; gs != nil {
			gs.shareReset, gs.shareResetProblem = v, p.conn.redact(problem)
		}
	}
	notRead := func(g string, err error) string {
		if isAuthorization(err) {
			return fmt.Sprintf("DescribeConfigs on group %s denied (%s): grant the principal DescribeConfigs on the group", g, kerrName(err))
		}
		return "DescribeConfigs on group " + g + ": " + describeError(err)
	}
	answered := make(map[string]bool)
	resp, err := req.RequestWith(ctx, p.cl)
	if err == nil {
		for _, rr := range resp.Resources {
			if rr.ResourceType != kmsg.ConfigResourceTypeGroupConfig {
				continue
			}
			answered[rr.ResourceName] = true
			if rr.ErrorCode != 0 {
				set(rr.ResourceName, proof.ConfigValue{}, notRead(rr.ResourceName, errorWithMessage(rr.ErrorCode, rr.ErrorMessage)))
				continue
			}
			v, problem := proof.ConfigValue{}, "the broker's answer left "+configShareAutoOffsetReset+" out"
			for _, c := range rr.Configs {
				if c.Name != configShareAutoOffsetReset {
					continue
				}
				v, problem = proof.ConfigValue{Present: true}, ""
				if c.Value == nil {
					v.Null = true
				} else {
					v.Value = *c.Value
				}
			}
			set(rr.ResourceName, v, problem)
		}
	}
	for _, r := range req.Resources {
		if answered[r.ResourceName] {
			continue
		}
		if err == nil {
			err = fmt.Errorf("the broker's answer left the group out")
		}
		set(r.ResourceName, proof.ConfigValue{}, notRead(r.ResourceName, err))
	}
}

// newSharePartitionsStartAtZero reports whether every broker starts a share
// group's new partitions of a topic the group already knows at offset 0
// (KAFKA-20742, Kafka 4.4: GroupMetadataManager
// .buildInitializeShareGroupStateRequest sends start offset 0 for them,
// -1 — share.auto.offset.reset — only for topics new to the group). Any
// broker can coordinate the group, so all must; the release is told from
// ApiVersions: DeleteGroups v3 (KIP-1331) is new in 4.4. A broker that does
// not answer counts as older (fail closed: its reset decides).
func (p *pass) newSharePartitionsStartAtZero(ctx context.Context) bool {
	if len(p.brokers) == 0 {
		return false
	}
	features := p.apiVersions(ctx)
	for _, id := range p.brokers {
		if f, ok := features[id]; !ok || !f.deleteGroupsV3 {
			return false
		}
	}
	return true
}
