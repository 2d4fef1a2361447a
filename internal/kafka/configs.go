package kafka

import (
	"context"
	"fmt"
	"slices"
	"strconv"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/retentionguard/retention-guard/internal/proof"
)

// Config keys the proof needs.
const (
	configRetentionMs             = "retention.ms"
	configRetentionBytes          = "retention.bytes"
	configCleanupPolicy           = "cleanup.policy"
	configDeleteRetentionMs       = "delete.retention.ms"
	configTimestampType           = "message.timestamp.type"
	configTimestampBeforeMaxMs    = "message.timestamp.before.max.ms"
	configTimestampAfterMaxMs     = "message.timestamp.after.max.ms"
	configTimestampDifferenceMax  = "message.timestamp.difference.max.ms"
	configRemoteStorageEnable     = "remote.storage.enable"
	configOffsetsRetentionMinutes = "offsets.retention.minutes"
)

// topicConfigKeys are asked of every topic.
var topicConfigKeys = []string{
	configRetentionMs, configRetentionBytes, configCleanupPolicy,
	configDeleteRetentionMs, configTimestampType, configTimestampBeforeMaxMs,
	configTimestampAfterMaxMs, configTimestampDifferenceMax, configRemoteStorageEnable,
}

// brokerConfigKeys are asked of every broker: offsets.retention.minutes,
// and the broker defaults a topic without its own override inherits (see
// brokerdefaults.go).
var brokerConfigKeys = append(append([]string{configOffsetsRetentionMinutes, configRebalanceProtocols}, brokerDefaultKeys...),
	transactionConfigKeys...)

// The broker setting that, beside the group.version feature (features.go),
// decides whether a classic group can be converted to a consumer group.
const configRebalanceProtocols = "group.coordinator.rebalance.protocols"

// describeConfigs reads the topics' retention configs and every broker's
// offsets.retention.minutes and log defaults in one raw DescribeConfigs
// request, which the client splits into one request per broker (the broker
// resources must be asked of the broker they name) plus one for the topics.
//
// A topic config that is not the topic's own override (its source is a
// broker's default) is what the answering broker derives from its own
// log.retention.* settings; each partition leader deletes by its own. It is
// replaced by the strictest value across the brokers (brokerdefaults.go).
//
// Raw, not kadm.DescribeTopicConfigs: kadm turns one topic's authorization
// failure into an error for the whole call and drops the other topics'
// answers, while the raw answer keeps an error code per resource, so one
// denied topic fails alone and the rest is still proven.
//
// Brokers are asked by ID: DescribeConfigs for the broker resource "" (the
// cluster default) answers only dynamic cluster-level values, so a value
// from server.properties or Kafka's default would look absent. Each broker
// answers with its effective value (static and default included). When
// brokers disagree the smallest value governs: offsets are expired by the
// coordinator of their group, which can be any broker.
func (p *pass) describeConfigs(ctx context.Context) {
	req := p.describeConfigsRequest()
	ans := newConfigsAnswer()
	for _, shard := range p.cl.RequestSharded(ctx, req) {
		if shard.Err != nil {
			for _, r := range shard.Req.(*kmsg.DescribeConfigsRequest).Resources {
				ans.failed(configResource{r.ResourceType, r.ResourceName}, shard.Err)
			}
			continue
		}
		ans.fold(shard.Resp.(*kmsg.DescribeConfigsResponse))
	}
	for _, r := range req.Resources {
		if k := (configResource{r.ResourceType, r.ResourceName}); !ans.answered[k] {
			ans.failed(k, fmt.Errorf("the broker's answer left it out"))
		}
	}
	for _, f := range ans.failures {
		p.fail(f)
	}
	inherited := make(map[string]map[string]bool) // topic → keys from a broker default
	for name, values := range ans.topics {
		if ts := p.topics[name]; ts != nil {
			ts.setConfigs(values)
			inherited[ts.name] = ans.inherited[name]
		}
	}
	brokerValues := make(map[int32]proof.ConfigValue)
	for id, values := range ans.brokers {
		brokerValues[id] = values[configOffsetsRetentionMinutes]
	}
	p.brokerRetention = brokerValues
	p.migrationPossible = migrationPossible(p.brokers, ans.brokers, p.apiVersions(ctx))
	p.offsetsRetention = p.smallestOffsetsRetention(brokerValues, ans.brokerFailed)
	p.transactions = loosestTransactionConfig(p.brokers, ans.brokers, ans.brokerFailed)
	p.applyBrokerDefaults(inherited, ans.brokers)
}

// describeConfigsRequest asks the configs of every topic metadata
// answered, and of every broker, with their synonyms: each config's
// source, the topic's own or a broker default.
func (p *pass) describeConfigsRequest() *kmsg.DescribeConfigsRequest {
	req := kmsg.NewPtrDescribeConfigsRequest()
	req.IncludeSynonyms = true
	topicNames := make([]string, 0, len(p.topics))
	for name, ts := range p.topics {
		if ts.answered {
			topicNames = append(topicNames, name)
		}
	}
	slices.Sort(topicNames)
	for _, name := range topicNames {
		r := kmsg.NewDescribeConfigsRequestResource()
		r.ResourceType = kmsg.ConfigResourceTypeTopic
		r.ResourceName = name
		r.ConfigNames = topicConfigKeys
		req.Resources = append(req.Resources, r)
	}
	for _, id := range p.brokers {
		r := kmsg.NewDescribeConfigsRequestResource()
		r.ResourceType = kmsg.ConfigResourceTypeBroker
		r.ResourceName = strconv.Itoa(int(id))
		r.ConfigNames = brokerConfigKeys
		req.Resources = append(req.Resources, r)
	}
	return req
}

// setConfigs keeps a topic's configs as DescribeConfigs answered them.
func (ts *topicState) setConfigs(values map[string]proof.ConfigValue) {
	ts.retentionMs = values[configRetentionMs]
	ts.retentionBytes = values[configRetentionBytes]
	ts.cleanupPolicy = values[configCleanupPolicy]
	ts.deleteRetentionMs = values[configDeleteRetentionMs]
	ts.timestampType = values[configTimestampType]
	ts.timestampBeforeMaxMs = values[configTimestampBeforeMaxMs]
	ts.timestampAfterMaxMs = values[configTimestampAfterMaxMs]
	ts.timestampDifferenceMaxMs = values[configTimestampDifferenceMax]
	ts.remoteStorageEnable = values[configRemoteStorageEnable]
}

// configResource is a topic or a broker DescribeConfigs was asked of.
type configResource struct {
	typ  kmsg.ConfigResourceType
	name string
}

// configsAnswer folds DescribeConfigs answers. No I/O.
type configsAnswer struct {
	answered  map[configResource]bool
	topics    map[string]map[string]proof.ConfigValue // topic → key → value
	inherited map[string]map[string]bool              // topic → keys from a broker default
	brokers   map[int32]map[string]proof.ConfigValue  // broker → key → value
	// brokerFailed: some broker's configs could not be read; the
	// cluster-wide settings folded from all of them are then unknown.
	brokerFailed bool
	failures     []failure
}

func newConfigsAnswer() *configsAnswer {
	return &configsAnswer{
		answered:  make(map[configResource]bool),
		topics:    make(map[string]map[string]proof.ConfigValue),
		inherited: make(map[string]map[string]bool),
		brokers:   make(map[int32]map[string]proof.ConfigValue),
	}
}

// fold reads one DescribeConfigs answer: a config answered null is Null,
// one left out is not Present; a resource's error fails it. A broker
// named other than by its numeric ID is passed over.
func (a *configsAnswer) fold(resp *kmsg.DescribeConfigsResponse) {
	for _, rr := range resp.Resources {
		k := configResource{rr.ResourceType, rr.ResourceName}
		if rr.ErrorCode != 0 {
			a.failed(k, errorWithMessage(rr.ErrorCode, rr.ErrorMessage))
			continue
		}
		a.answered[k] = true
		values := make(map[string]proof.ConfigValue)
		fromBroker := make(map[string]bool)
		for _, c := range rr.Configs {
			v := proof.ConfigValue{Present: true}
			if c.Value == nil {
				v.Null = true
			} else {
				v.Value = *c.Value
			}
			values[c.Name] = v
			fromBroker[c.Name] = brokerDefaultSource(c.Source)
		}
		switch rr.ResourceType {
		case kmsg.ConfigResourceTypeTopic:
			a.topics[rr.ResourceName] = values
			a.inherited[rr.ResourceName] = fromBroker
		case kmsg.ConfigResourceTypeBroker:
			if id, err := strconv.Atoi(rr.ResourceName); err == nil {
				a.brokers[int32(id)] = values
			}
		}
	}
}

// failed fails resource r with err: a topic's configs, or a broker's
// (then the cluster-wide settings are unknown).
func (a *configsAnswer) failed(r configResource, err error) {
	a.answered[r] = true
	what := "configs of topic " + r.name
	if r.typ != kmsg.ConfigResourceTypeTopic {
		what = fmt.Sprintf("%s of broker %s", configOffsetsRetentionMinutes, r.name)
	}
	msg := fmt.Sprintf("%s: %s", what, describeError(err))
	if isAuthorization(err) {
		switch r.typ {
		case kmsg.ConfigResourceTypeTopic:
			msg = fmt.Sprintf("DescribeConfigs on topic %s denied (%s): the principal needs DescribeConfigs on the topic", r.name, kerrName(err))
		default:
			msg = fmt.Sprintf("DescribeConfigs on broker %s denied (%s): the principal needs DescribeConfigs on the cluster to read %s", r.name, kerrName(err), configOffsetsRetentionMinutes)
		}
	}
	f := failure{Failure: proof.Failure{
		Reason:    reasonForError(err),
		API:       apiDescribeConfigs,
		Partition: -1,
		Message:   msg,
	}}
	if r.typ == kmsg.ConfigResourceTypeTopic {
		f.Topic = r.name
	} else {
		f.global = true
		a.brokerFailed = true
	}
	a.failures = append(a.failures, f)
}

// smallestOffsetsRetention folds the brokers' offsets.retention.minutes:
// unreadable on any broker (failed, absent) makes it unreadable; a value
// that does not parse is reported as is (the proof calls it unreadable,
// failing closed); otherwise the smallest governs.
func (p *pass) smallestOffsetsRetention(values map[int32]proof.ConfigValue, anyFailed bool) proof.ConfigValue {
	if anyFailed || len(p.brokers) == 0 {
		return proof.ConfigValue{}
	}
	var (
		best     proof.ConfigValue
		bestN    int64
		distinct = make(map[string]bool)
	)
	for _, id := range p.brokers {
		v, ok := values[id]
		if !ok || !v.Present {
			p.o.opts.logger.V(1).Info("a broker did not report offsets.retention.minutes",
				"connection", p.conn.String(), "broker", id)
			return proof.ConfigValue{}
		}
		distinct[v.Value] = true
		n, ok := v.Int()
		if !ok {
			return v
		}
		if !best.Present || n < bestN {
			best, bestN = v, n
		}
	}
	if len(distinct) > 1 {
		p.o.opts.logger.V(1).Info("brokers disagree on offsets.retention.minutes; the smallest governs",
			"connection", p.conn.String(), "values", values, "governing", best.Value)
	}
	return best
}

func kerrName(err error) string {
	if ke, ok := asKerr(err); ok {
		return ke.Message
	}
	return err.Error()
}
