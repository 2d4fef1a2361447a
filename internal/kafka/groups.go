package kafka

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"sync"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/retentionguard/retention-guard/internal/proof"
)

// groupAnswer is what one of the describe calls said about a group.
type groupAnswer struct {
	err   error  // the request or the group failed
	found bool   // the group exists as a group of this call's kind
	state string // Kafka's state name, canonical capitalization
	// Classic groups: the protocol type ("consumer", "connect"; "" for a
	// simple group) and, for a Stable consumer group, the union of its
	// members' subscriptions when every member's metadata decoded.
	protocolType      string
	subscribed        []string
	subscriptionKnown bool
	// members: the live members (classic and KIP-848 groups).
	members []proof.GroupMember
}

// describeGroups reads every group's state with DescribeGroups (classic
// groups), ConsumerGroupDescribe (KIP-848 "consumer" protocol groups) and
// StreamsGroupDescribe (KIP-1071 streams groups, Kafka 4.1+), each one raw
// request split per group coordinator, sent side by side. Each call answers
// not-found (GROUP_ID_NOT_FOUND, or Dead for the classic call) for a group
// of another kind, so:
//
//   - ConsumerGroupDescribe found it: protocol "consumer", its state;
//   - else StreamsGroupDescribe found it: protocol "streams", its state;
//   - else DescribeGroups found it alive: protocol "classic", its state, its
//     protocol type (none: a simple group) and its members' subscriptions;
//   - else every call says not found: state Dead, protocol unknown (no
//     group, or one whose offsets all expired; the proof refuses to read a
//     group with committed offsets that way);
//   - a call that failed only matters when no other call found the group;
//     then it is a failure naming that call. A broker too old for
//     ConsumerGroupDescribe or StreamsGroupDescribe has no group of that
//     kind: not a failure.
func (p *pass) describeGroups(ctx context.Context) {
	if len(p.groups) == 0 {
		return
	}
	var (
		wg                              sync.WaitGroup
		classic, kip848, streams, share map[string]groupAnswer
	)
	wg.Add(3)
	go func() { defer wg.Done(); classic = p.describeClassic(ctx) }()
	go func() { defer wg.Done(); kip848 = p.describeConsumer(ctx) }()
	go func() { defer wg.Done(); streams = p.describeStreams(ctx) }()
	wg.Wait()
	// A share group is not found by the three calls: only such groups are
	// asked ShareGroupDescribe, so a pass over known groups costs nothing
	// more.
	var unfound []string
	for _, g := range p.groups {
		if c, k, s := classic[g], kip848[g], streams[g]; !(c.err == nil && c.found) && !(k.err == nil && k.found) && !(s.err == nil && s.found) {
			unfound = append(unfound, g)
		}
	}
	share = p.describeShare(ctx, unfound)

	for _, g := range p.groups {
		c, k, s, sh := classic[g], kip848[g], streams[g], share[g]
		gs := p.groupInfo[g]
		p.mu.Lock()
		switch {
		case k.err == nil && k.found:
			gs.stateKnown, gs.state, gs.protocol = true, k.state, proof.ProtocolConsumer
			gs.members = k.members
		case s.err == nil && s.found:
			gs.stateKnown, gs.state, gs.protocol = true, s.state, proof.ProtocolStreams
		case sh.err == nil && sh.found:
			gs.stateKnown, gs.state, gs.protocol = true, sh.state, proof.ProtocolShare
		case c.err == nil && c.found:
			gs.stateKnown, gs.state, gs.protocol = true, c.state, proof.ProtocolClassic
			gs.protocolType, gs.subscribed, gs.subscriptionKnown = c.protocolType, c.subscribed, c.subscriptionKnown
			gs.members = c.members
		case c.err == nil && k.err == nil && s.err == nil && sh.err == nil:
			gs.stateKnown, gs.state = true, proof.GroupStateDead
		}
		p.mu.Unlock()
		if gs.stateKnown {
			continue
		}
		if c.err != nil {
			p.groupDescribeFailed(apiDescribeGroups, g, c.err)
		}
		if k.err != nil {
			p.groupDescribeFailed(apiConsumerGroupDescribe, g, k.err)
		}
		if s.err != nil {
			p.groupDescribeFailed(apiStreamsGroupDescribe, g, s.err)
		}
		if sh.err != nil {
			p.groupDescribeFailed(apiShareGroupDescribe, g, sh.err)
		}
	}
}

func (p *pass) groupDescribeFailed(api, g string, err error) {
	if ke, ok := asKerr(err); ok && ke == kerr.TopicAuthorizationFailed {
		// Kafka 4.0+ (KAFKA-18813) refuses to describe a KIP-848 or
		// streams group unless the principal may Describe every topic its
		// members subscribe to: the missing ACL is on a topic, not on the
		// group.
		p.fail(failure{group: g, Failure: proof.Failure{
			Reason:    proof.ReasonAuthorizationFailed,
			API:       api,
			Partition: -1,
			Message: fmt.Sprintf("%s for group %s denied (%s): the broker describes the group only to a principal that may "+
				"Describe every topic its members subscribe to; grant Describe on those topics (the policy names %s; "+
				"the group may subscribe to others); its state is unknown",
				api, g, kerrName(err), strings.Join(p.groupTopics[g], ", ")),
		}})
		return
	}
	if isAuthorization(err) {
		p.fail(failure{group: g, Failure: proof.Failure{
			Reason:    proof.ReasonAuthorizationFailed,
			API:       api,
			Partition: -1,
			Message: fmt.Sprintf("%s for group %s denied (%s): the principal needs Describe on the group; its state is unknown",
				api, g, kerrName(err)),
		}})
		return
	}
	p.failErr(api, g, "", -1, fmt.Sprintf("state of group %s", g), err)
}

func (p *pass) describeClassic(ctx context.Context) map[string]groupAnswer {
	out := make(map[string]groupAnswer, len(p.groups))
	req := kmsg.NewPtrDescribeGroupsRequest()
	req.Groups = slices.Clone(p.groups)
	for _, shard := range p.requestCoordinated(ctx, req) {
		sreq := shard.Req.(*kmsg.DescribeGroupsRequest)
		if shard.Err != nil {
			for _, g := range sreq.Groups {
				out[g] = groupAnswer{err: shard.Err}
			}
			continue
		}
		for _, rg := range shard.Resp.(*kmsg.DescribeGroupsResponse).Groups {
			switch {
			case rg.ErrorCode == kerr.GroupIDNotFound.Code:
				out[rg.Group] = groupAnswer{}
			case rg.ErrorCode != 0:
				out[rg.Group] = groupAnswer{err: errorWithMessage(rg.ErrorCode, rg.ErrorMessage)}
			default:
				state := canonicalState(rg.State)
				a := groupAnswer{found: state != proof.GroupStateDead && state != "", state: state, protocolType: rg.ProtocolType}
				if state == proof.GroupStateStable && rg.ProtocolType == proof.ProtocolTypeConsumer {
					a.subscribed, a.subscriptionKnown = subscriptions(rg.Members)
				}
				for _, m := range rg.Members {
					a.members = append(a.members, member(m.MemberID, m.ClientID, m.ClientHost))
				}
				sortMembers(a.members)
				out[rg.Group] = a
			}
		}
	}
	fillMissing(out, p.groups)
	return out
}

// subscriptions is the union of the topics a classic consumer group's
// members subscribe to, decoded from their protocol metadata (Kafka's
// ClassicGroup.subscribedTopics, which decides KIP-496 expiry). Unknown
// when a member's metadata does not decode.
func subscriptions(members []kmsg.DescribeGroupsResponseGroupMember) ([]string, bool) {
	var topics []string
	for _, m := range members {
		var meta kmsg.ConsumerMemberMetadata
		if err := meta.ReadFrom(m.ProtocolMetadata); err != nil {
			return nil, false
		}
		for _, t := range meta.Topics {
			if !slices.Contains(topics, t) {
				topics = append(topics, t)
			}
		}
	}
	slices.Sort(topics)
	return topics, len(members) > 0
}

// member is one live member as a describe call reported it, its client
// host read as an address.
func member(id, clientID, clientHost string) proof.GroupMember {
	return proof.GroupMember{MemberID: id, ClientID: clientID, ClientHost: clientHost, Host: hostAddr(clientHost)}
}

func sortMembers(ms []proof.GroupMember) {
	slices.SortFunc(ms, func(a, b proof.GroupMember) int { return cmp.Compare(a.MemberID, b.MemberID) })
}

// hostAddr reads the address a broker reports as a member's client host.
// Kafka writes Java's InetAddress.toString(): "/10.1.2.3", or
// "name/10.1.2.3" when the name was resolved; a dual-stack JVM may write
// an IPv4 address as ::ffff:10.1.2.3; kfake writes "10.1.2.3:54321".
// Invalid when no address is there.
func hostAddr(clientHost string) netip.Addr {
	s := clientHost
	if i := strings.LastIndexByte(s, '/'); i >= 0 {
		s = s[i+1:]
	}
	if ap, err := netip.ParseAddrPort(s); err == nil {
		return ap.Addr().Unmap().WithZone("")
	}
	s = strings.TrimSuffix(strings.TrimPrefix(s, "["), "]")
	if a, err := netip.ParseAddr(s); err == nil {
		return a.Unmap().WithZone("")
	}
	return netip.Addr{}
}

func (p *pass) describeConsumer(ctx context.Context) map[string]groupAnswer {
	out := make(map[string]groupAnswer, len(p.groups))
	req := kmsg.NewPtrConsumerGroupDescribeRequest()
	req.Groups = slices.Clone(p.groups)
	for _, shard := range p.requestCoordinated(ctx, req) {
		sreq := shard.Req.(*kmsg.ConsumerGroupDescribeRequest)
		if shard.Err != nil {
			for _, g := range sreq.Groups {
				out[g] = notFoundIfTooOld(shard.Err)
			}
			continue
		}
		for _, rg := range shard.Resp.(*kmsg.ConsumerGroupDescribeResponse).Groups {
			a := modernAnswer(rg.ErrorCode, rg.ErrorMessage, rg.State)
			if a.found {
				for _, m := range rg.Members {
					a.members = append(a.members, member(m.MemberID, m.ClientID, m.ClientHost))
				}
				sortMembers(a.members)
			}
			mergeAnswer(out, rg.Group, a)
		}
	}
	fillMissing(out, p.groups)
	return out
}

// describeStreams asks StreamsGroupDescribe (Kafka 4.1+): streams groups
// answer not-found to both other calls, and their offsets expire per
// commit. A broker without the API has no streams group.
//
// franz-go does not route StreamsGroupDescribe to group coordinators (it
// sends it to any broker), so the request goes out once as the client
// sends it and the groups answered NOT_COORDINATOR are asked again of
// their coordinators (FindCoordinator), one request per coordinator: on a
// single broker, or when the first broker coordinates them all, nothing
// more is sent.
func (p *pass) describeStreams(ctx context.Context) map[string]groupAnswer {
	out := make(map[string]groupAnswer, len(p.groups))
	req := kmsg.NewPtrStreamsGroupDescribeRequest()
	req.Groups = slices.Clone(p.groups)
	var elsewhere []string
	for _, shard := range p.requestCoordinated(ctx, req) {
		sreq := shard.Req.(*kmsg.StreamsGroupDescribeRequest)
		if shard.Err != nil {
			for _, g := range sreq.Groups {
				out[g] = notFoundIfTooOld(shard.Err)
			}
			continue
		}
		for _, rg := range shard.Resp.(*kmsg.StreamsGroupDescribeResponse).Groups {
			if rg.ErrorCode == kerr.NotCoordinator.Code {
				if !slices.Contains(elsewhere, rg.Group) {
					elsewhere = append(elsewhere, rg.Group)
				}
				continue
			}
			mergeAnswer(out, rg.Group, modernAnswer(rg.ErrorCode, rg.ErrorMessage, rg.State))
		}
	}
	for _, g := range elsewhere {
		if a, ok := out[g]; ok && a.err == nil && a.found {
			continue
		}
		delete(out, g)
	}
	if len(elsewhere) > 0 {
		p.describeStreamsAtCoordinators(ctx, elsewhere, out)
	}
	fillMissing(out, p.groups)
	return out
}

// describeStreamsAtCoordinators asks each group's coordinator for the
// groups another broker did not coordinate.
func (p *pass) describeStreamsAtCoordinators(ctx context.Context, groups []string, out map[string]groupAnswer) {
	fc := kmsg.NewPtrFindCoordinatorRequest()
	fc.CoordinatorType = 0 // group
	fc.CoordinatorKeys = groups
	byNode := make(map[int32][]string)
	for _, shard := range p.cl.RequestSharded(ctx, fc) {
		sreq := shard.Req.(*kmsg.FindCoordinatorRequest)
		if shard.Err != nil {
			for _, g := range sreq.CoordinatorKeys {
				out[g] = groupAnswer{err: shard.Err}
			}
			continue
		}
		for _, c := range shard.Resp.(*kmsg.FindCoordinatorResponse).Coordinators {
			if c.ErrorCode != 0 {
				out[c.Key] = groupAnswer{err: errorWithMessage(c.ErrorCode, c.ErrorMessage)}
				continue
			}
			byNode[c.NodeID] = append(byNode[c.NodeID], c.Key)
		}
	}
	var (
		mu sync.Mutex
		wg sync.WaitGroup
	)
	for node, gs := range byNode {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req := kmsg.NewPtrStreamsGroupDescribeRequest()
			req.Groups = gs
			resp, err := p.cl.Broker(int(node)).Request(ctx, req)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				for _, g := range gs {
					out[g] = groupAnswer{err: err}
				}
				return
			}
			for _, rg := range resp.(*kmsg.StreamsGroupDescribeResponse).Groups {
				if slices.Contains(gs, rg.Group) {
					mergeAnswer(out, rg.Group, modernAnswer(rg.ErrorCode, rg.ErrorMessage, rg.State))
				}
			}
		}()
	}
	wg.Wait()
}

// mergeAnswer records a's answer for group g, keeping of several answers
// for one group the one that found it, else a failure, else not-found.
// Kafka 3.9's ConsumerGroupDescribe, asked for groups of several
// __consumer_offsets partitions, answers each group once per partition
// (GroupCoordinatorService.consumerGroupDescribe hands each partition's
// shard every group of the request, not its own): only the owning shard's
// answer is true, the others say GROUP_ID_NOT_FOUND, in no fixed order.
func mergeAnswer(out map[string]groupAnswer, g string, a groupAnswer) {
	rank := func(a groupAnswer) int {
		switch {
		case a.err == nil && a.found:
			return 2
		case a.err != nil:
			return 1
		}
		return 0
	}
	if prev, ok := out[g]; !ok || rank(a) > rank(prev) {
		out[g] = a
	}
}

// notFoundIfTooOld: a shard that failed because the broker does not know
// the API says "no such group here"; any other failure stays one.
func notFoundIfTooOld(err error) groupAnswer {
	if brokerTooOld(err) {
		return groupAnswer{}
	}
	return groupAnswer{err: err}
}

// modernAnswer reads one group of a ConsumerGroupDescribe or
// StreamsGroupDescribe answer.
func modernAnswer(code int16, msg *string, state string) groupAnswer {
	switch code {
	case 0:
		state = canonicalState(state)
		return groupAnswer{found: state != proof.GroupStateDead && state != "", state: state}
	case kerr.GroupIDNotFound.Code, kerr.UnsupportedVersion.Code:
		return groupAnswer{}
	}
	return groupAnswer{err: errorWithMessage(code, msg)}
}

func fillMissing(out map[string]groupAnswer, groups []string) {
	for _, g := range groups {
		if _, ok := out[g]; !ok {
			out[g] = groupAnswer{err: errors.New("the broker's answer left the group out")}
		}
	}
}

// brokerTooOld recognizes franz-go's refusal to send a request the broker
// does not support (its error value is not exported).
func brokerTooOld(err error) bool {
	return errors.Is(err, kerr.UnsupportedVersion) || strings.Contains(err.Error(), "broker is too old")
}

func errorWithMessage(code int16, msg *string) error {
	err := kerr.ErrorForCode(code)
	if msg != nil && *msg != "" {
		return fmt.Errorf("%w (%s)", err, *msg)
	}
	return err
}

// canonicalState spells a group state as Kafka's classic groups do
// (Empty, Stable, ...), whatever the case the broker used.
func canonicalState(s string) string {
	known := []string{
		"Empty", "Stable", "Dead", "PreparingRebalance", "CompletingRebalance",
		"Assigning", "Reconciling", "NotReady", "Unknown",
	}
	for _, k := range known {
		if strings.EqualFold(strings.ReplaceAll(s, "_", ""), k) {
			return k
		}
	}
	return s
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func sortInt32s(s []int32) { slices.SortFunc(s, cmp.Compare[int32]) }
