package kafka

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/retentionguard/retention-guard/internal/proof"
)

// groupAnswer is what one of the two describe calls said about a group.
type groupAnswer struct {
	err   error  // the request or the group failed
	found bool   // the group exists as a group of this call's kind
	state string // Kafka's state name, canonical capitalization
}

// describeGroups reads every group's state with both DescribeGroups
// (classic groups) and ConsumerGroupDescribe (KIP-848 "consumer" protocol
// groups), each one raw request split per group coordinator, sent side by
// side. A KIP-848 group shows as Dead or GROUP_ID_NOT_FOUND to the classic
// call, and a classic group as GROUP_ID_NOT_FOUND to the KIP-848 one, so:
//
//   - ConsumerGroupDescribe found it: protocol "consumer", its state;
//   - else DescribeGroups found it alive: protocol "classic", its state;
//   - else neither knows it: state Dead, protocol unknown (no group, or one
//     whose offsets all expired);
//   - a call that failed only matters when the other did not find the
//     group; then it is a failure naming that call. A broker too old for
//     ConsumerGroupDescribe has no KIP-848 groups: not a failure.
func (p *pass) describeGroups(ctx context.Context) {
	if len(p.groups) == 0 {
		return
	}
	var (
		wg              sync.WaitGroup
		classic, kip848 map[string]groupAnswer
	)
	wg.Add(2)
	go func() { defer wg.Done(); classic = p.describeClassic(ctx) }()
	go func() { defer wg.Done(); kip848 = p.describeConsumer(ctx) }()
	wg.Wait()

	for _, g := range p.groups {
		c, k := classic[g], kip848[g]
		gs := p.groupInfo[g]
		p.mu.Lock()
		switch {
		case k.err == nil && k.found:
			gs.stateKnown, gs.state, gs.protocol = true, k.state, proof.ProtocolConsumer
		case c.err == nil && c.found:
			gs.stateKnown, gs.state, gs.protocol = true, c.state, proof.ProtocolClassic
		case c.err == nil && k.err == nil:
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
	}
}

func (p *pass) groupDescribeFailed(api, g string, err error) {
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
	for _, shard := range p.cl.RequestSharded(ctx, req) {
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
				out[rg.Group] = groupAnswer{found: state != proof.GroupStateDead && state != "", state: state}
			}
		}
	}
	fillMissing(out, p.groups)
	return out
}

func (p *pass) describeConsumer(ctx context.Context) map[string]groupAnswer {
	out := make(map[string]groupAnswer, len(p.groups))
	req := kmsg.NewPtrConsumerGroupDescribeRequest()
	req.Groups = slices.Clone(p.groups)
	for _, shard := range p.cl.RequestSharded(ctx, req) {
		sreq := shard.Req.(*kmsg.ConsumerGroupDescribeRequest)
		if shard.Err != nil {
			a := groupAnswer{err: shard.Err}
			if brokerTooOld(shard.Err) {
				a = groupAnswer{} // no KIP-848 on this broker: not found
			}
			for _, g := range sreq.Groups {
				out[g] = a
			}
			continue
		}
		for _, rg := range shard.Resp.(*kmsg.ConsumerGroupDescribeResponse).Groups {
			switch rg.ErrorCode {
			case 0:
				state := canonicalState(rg.State)
				out[rg.Group] = groupAnswer{found: state != proof.GroupStateDead && state != "", state: state}
			case kerr.GroupIDNotFound.Code, kerr.UnsupportedVersion.Code:
				out[rg.Group] = groupAnswer{}
			default:
				out[rg.Group] = groupAnswer{err: errorWithMessage(rg.ErrorCode, rg.ErrorMessage)}
			}
		}
	}
	fillMissing(out, p.groups)
	return out
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
