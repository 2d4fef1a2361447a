package kafka

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/retentionguard/retention-guard/internal/proof"
)

// Discovery asks a pass to judge every consumer group on the cluster, not
// only the targets it was given: ListGroups on every broker, then each
// group's committed offsets on all its topics (one OffsetFetch per
// coordinator, all groups in it), and the groups join the pass as targets
// of the topics they committed on. The rest of the pass (metadata,
// configs, log start and end, committed offsets, group states, record
// timestamps) is shared with the other targets, so discovery adds
// ListGroups per broker and one OffsetFetch per coordinator, whatever the
// number of groups.
//
// Groups Kafka Connect workers form (protocol type connect: they commit no
// offsets) and share groups (KIP-932: no committed offsets in the
// consumer sense) are left out. ListGroups answers only the groups the
// principal may Describe.
type Discovery struct {
	// Match, when set, keeps only the groups whose id it accepts.
	Match func(group string) bool
	// ReadOffsetsTopic reads every discovered group's exact commit and
	// Empty times from __consumer_offsets, as Target.ReadOffsetsTopic
	// does for a target: scan's default, so that it judges as the manager
	// does. Off for the manager's discovery, which lists groups but does
	// not prove them.
	ReadOffsetsTopic bool
	// RecoveryWindow, as Target.RecoveryWindow, for every discovered group:
	// scan's window. Zero asks nothing.
	RecoveryWindow time.Duration
}

// DiscoveredGroup is one group discovery found.
type DiscoveredGroup struct {
	Group string
	// State and ProtocolType as ListGroups reported them; Type is the
	// group type (classic, consumer, streams) where the broker says it.
	State        string
	ProtocolType string
	Type         string
	// Topics the group has committed offsets on, sorted. Empty for a group
	// without committed offsets: nothing says what it reads or where it
	// would resume.
	Topics []string
	// Observation of the group on Topics, from the same pass as the
	// targets; set when Topics is not empty or Failure is set.
	Observation proof.Observation
	// Failure says why the group's topics could not be read (its
	// committed offsets were denied, its coordinator did not answer).
	Failure *proof.Failure
}

type discoveredGroup struct {
	group, state, protocolType, typ string
	topics                          []string
	failure                         *proof.Failure
}

// excludedGroup: Kafka Connect's worker groups and share groups.
func excludedGroup(protocolType, typ string) bool {
	return strings.EqualFold(protocolType, "connect") || strings.EqualFold(typ, "share") || strings.EqualFold(protocolType, "share")
}

// discoverGroups lists the cluster's groups and the topics each committed
// on, and adds them to the pass. It reports whether the pass goes on; a
// cluster that cannot be reached at all is reported by metadata, which
// follows, with its reasons (authentication, TLS).
func (p *pass) discoverGroups(ctx context.Context) bool {
	req := kmsg.NewPtrListGroupsRequest()
	found := make(map[string]*discoveredGroup)
	var order []string
	failedBrokers := 0
	shards := p.cl.RequestSharded(ctx, req)
	for _, shard := range shards {
		if shard.Err != nil {
			failedBrokers++
			p.fail(failure{discovery: true, Failure: proof.Failure{
				Reason:    reasonForError(shard.Err),
				API:       "ListGroups",
				Partition: -1,
				Message:   fmt.Sprintf("ListGroups on broker %d: %s; groups it coordinates are not discovered", shard.Meta.NodeID, describeError(shard.Err)),
			}})
			continue
		}
		resp := shard.Resp.(*kmsg.ListGroupsResponse)
		if resp.ErrorCode != 0 {
			failedBrokers++
			err := kerr.ErrorForCode(resp.ErrorCode)
			msg := fmt.Sprintf("ListGroups on broker %d: %s; groups it coordinates are not discovered", shard.Meta.NodeID, describeError(err))
			if isAuthorization(err) {
				msg = fmt.Sprintf("ListGroups on broker %d denied (%s): the principal needs Describe on the groups (or the cluster) to discover them", shard.Meta.NodeID, kerrName(err))
			}
			p.fail(failure{discovery: true, Failure: proof.Failure{Reason: reasonForError(err), API: "ListGroups", Partition: -1, Message: msg}})
			continue
		}
		for _, g := range resp.Groups {
			if excludedGroup(g.ProtocolType, g.GroupType) || found[g.Group] != nil {
				continue
			}
			if p.discover.Match != nil && !p.discover.Match(g.Group) {
				continue
			}
			found[g.Group] = &discoveredGroup{group: g.Group, state: canonicalState(g.GroupState), protocolType: g.ProtocolType, typ: g.GroupType}
			order = append(order, g.Group)
		}
	}
	if len(shards) > 0 && failedBrokers == len(shards) {
		// Nothing answered: let metadata say why (it knows SASL and TLS).
		return true
	}
	slices.Sort(order)
	p.discoveredTopics(ctx, order, found)
	for _, g := range order {
		d := found[g]
		p.discovered = append(p.discovered, *d)
		if len(d.topics) > 0 {
			p.addTarget(Target{Group: g, Topics: d.topics})
		}
	}
	p.sortGroups()
	return true
}

// discoveredTopics reads which topics each group committed on, with one
// OffsetFetch naming no topics (all of them) per coordinator. Brokers
// answering OffsetFetch v10+ name topics by ID only; those are resolved
// with one Metadata request for every topic, only when needed.
func (p *pass) discoveredTopics(ctx context.Context, groups []string, found map[string]*discoveredGroup) {
	if len(groups) == 0 {
		return
	}
	req := kmsg.NewPtrOffsetFetchRequest()
	for _, g := range groups {
		rg := kmsg.NewOffsetFetchRequestGroup()
		rg.Group = g
		rg.Topics = nil // all topics
		req.Groups = append(req.Groups, rg)
	}
	groupFailed := func(g string, err error) {
		msg := fmt.Sprintf("committed offsets of group %s: %s", g, describeError(err))
		if isAuthorization(err) {
			msg = fmt.Sprintf("OffsetFetch for group %s denied (%s): the principal needs Describe on the group; its topics are unknown", g, kerrName(err))
		}
		found[g].failure = &proof.Failure{Reason: reasonForError(err), API: apiOffsetFetch, Partition: -1, Message: msg}
	}
	byID := make(map[string][][16]byte)
	answered := make(map[string]bool)
	for _, shard := range p.cl.RequestSharded(ctx, req) {
		sreq := shard.Req.(*kmsg.OffsetFetchRequest)
		if shard.Err != nil {
			for _, rg := range sreq.Groups {
				answered[rg.Group] = true
				groupFailed(rg.Group, shard.Err)
			}
			continue
		}
		for _, rg := range shard.Resp.(*kmsg.OffsetFetchResponse).Groups {
			d := found[rg.Group]
			if d == nil {
				continue
			}
			answered[rg.Group] = true
			switch rg.ErrorCode {
			case 0:
			case kerr.GroupIDNotFound.Code:
				continue // deleted since ListGroups: no offsets
			default:
				groupFailed(rg.Group, kerr.ErrorForCode(rg.ErrorCode))
				continue
			}
			for _, rt := range rg.Topics {
				committed := false
				for _, rp := range rt.Partitions {
					if rp.ErrorCode == 0 && rp.Offset >= 0 {
						committed = true
					}
				}
				switch {
				case !committed:
				case rt.Topic != "":
					d.topics = append(d.topics, rt.Topic)
				default:
					byID[rg.Group] = append(byID[rg.Group], rt.TopicID)
				}
			}
		}
	}
	for _, g := range groups {
		if !answered[g] {
			groupFailed(g, fmt.Errorf("the broker's answer left the group out"))
		}
	}
	if len(byID) > 0 {
		names := p.topicNames(ctx)
		for g, ids := range byID {
			for _, id := range ids {
				if name, ok := names[id]; ok {
					found[g].topics = append(found[g].topics, name)
				}
			}
		}
	}
	for _, g := range groups {
		d := found[g]
		slices.Sort(d.topics)
		d.topics = slices.Compact(d.topics)
	}
}

// topicNames maps every topic's ID to its name, with one Metadata request.
func (p *pass) topicNames(ctx context.Context) map[[16]byte]string {
	req := kmsg.NewPtrMetadataRequest()
	req.Topics = nil // all
	out := make(map[[16]byte]string)
	resp, err := req.RequestWith(ctx, p.cl)
	if err != nil {
		return out
	}
	for _, t := range resp.Topics {
		if t.Topic != nil {
			out[t.TopicID] = *t.Topic
		}
	}
	return out
}
