package webhook

import (
	"fmt"
	"strings"

	rgv1 "github.com/retentionguard/retention-guard/api/v1alpha1"
)

// checkConsumer is the policy's consumer clause: the client must fail
// loudly instead of skipping. Given the resolved settings of the consumer
// containers it returns one finding per container and variable that does
// not prove it: the offset-reset variable must be a value that makes a
// client fail loudly, in a spelling that client accepts (see
// judgeOffsetReset), and the auto-commit variable, when the policy names
// one, must be false.
func checkConsumer(spec *rgv1.ConsumerClientSpec, envs []containerEnv) []finding {
	var out []finding
	for i := range envs {
		ce := &envs[i]
		// Built only when there is a finding (issue 34: nothing is
		// allocated for a consumer that passes).
		subject := func() string { return "container " + ce.Container }
		if ce.Missing {
			out = append(out, finding{Reason: ReasonConsumerContainerNotFound, Subject: subject(),
				Message: "spec.consumer.container names it, but the pod template has no such container"})
			continue
		}
		name := spec.OffsetResetEnv
		switch v := ce.OffsetReset; {
		case v.Unresolvable != "":
			out = append(out, finding{Reason: ReasonOffsetResetUnresolvable, Subject: subject(), Message: v.Unresolvable})
		case !v.Declared:
			out = append(out, finding{Reason: ReasonOffsetResetNotDeclared, Subject: subject(), Message: fmt.Sprintf(
				"%s is not set, so the client's default (latest) skips silently; set it to none", name)})
		default:
			if reason, why := judgeOffsetReset(v.Value); reason != "" {
				out = append(out, finding{Reason: reason, Subject: subject(), Message: fmt.Sprintf(
					"%s=%q (%s): %s", name, v.Value, v.From, why)})
			}
		}
		if spec.AutoCommitEnv == "" {
			continue
		}
		name = spec.AutoCommitEnv
		switch v := ce.AutoCommit; {
		case v.Unresolvable != "":
			out = append(out, finding{Reason: ReasonAutoCommitUnresolvable, Subject: subject(), Message: v.Unresolvable})
		case !v.Declared:
			out = append(out, finding{Reason: ReasonAutoCommitNotDeclared, Subject: subject(), Message: fmt.Sprintf(
				"%s is not set, so the client's default auto commit applies; set it to false", name)})
		case !strings.EqualFold(strings.TrimSpace(v.Value), "false"):
			out = append(out, finding{Reason: ReasonAutoCommitEnabled, Subject: subject(), Message: fmt.Sprintf(
				"%s=%q (%s): commits offsets of unprocessed records; set false", name, v.Value, v.From)})
		}
	}
	return out
}

// checkStreamsGroup is the consumer clause's finding for a Kafka Streams
// group (KIP-1071, groupProtocol streams in the proof): a Streams
// application's per-topic reset policies (Consumed.with(...) with an
// AutoOffsetReset, in its topology) beat its auto.offset.reset, and with
// any of them Streams sets its consumer's auto.offset.reset to none and
// resets by the topology itself (StreamThread.resetOffsets). The webhook
// cannot see the topology, so the variable proves nothing: fail closed.
// A Streams application on the classic protocol looks like any consumer
// group (protocol type consumer); docs/concepts.md says to leave the
// consumer clause out for it.
func checkStreamsGroup(p *rgv1.ConsumerRetentionPolicy, proof *rgv1.ProofStatus) []finding {
	if proof == nil || proof.GroupProtocol != "streams" {
		return nil
	}
	return []finding{{Reason: ReasonOffsetResetNotProvable, Subject: "group " + p.Spec.GroupID, Message: "a Kafka Streams group: " +
		"per-topic reset policies in its topology beat " + p.Spec.Consumer.OffsetResetEnv + " and cannot be read from the pod template, " +
		"so the variable proves nothing; remove spec.consumer from this policy (the Kafka-side proof still holds) or make the app a plain consumer"}}
}

// judgeOffsetReset judges an auto.offset.reset value as the clients read
// it (docs/concepts.md, "What each client does with auto.offset.reset",
// each row pinned by test/realkafka/clients on real clients): empty reason
// when a client fails loudly with it. Only two values do:
//
//   - none, in lower case: the Java client (kafka-clients; ConfigDef trims
//     the value, then matches it exactly) throws NoOffsetForPartitionException
//     or OffsetOutOfRangeException; franz-go's NoResetOffset is the same.
//     NONE or None is a ConfigException: the consumer never starts, and
//     librdkafka has no none at all.
//   - error, in any case (librdkafka matches case-insensitively), unpadded:
//     librdkafka raises the consumer error ERR__AUTO_OFFSET_RESET. The Java
//     client rejects it (ConfigException).
//
// The client's own values that reset silently are OffsetResetSilent;
// anything else no client accepts (OffsetResetRejected): the consumer does
// not start, which is loud, but it is not the setting the clause proves.
func judgeOffsetReset(v string) (reason, why string) {
	trimmed := strings.TrimSpace(v)
	lower := strings.ToLower(trimmed)
	switch {
	case trimmed == "none":
		return "", ""
	case lower == "error" && trimmed == v:
		return "", ""
	case lower == "none":
		return ReasonOffsetResetRejected, "the Java client accepts only lower-case none (any other case is a ConfigException: " +
			"the consumer never starts) and librdkafka has no none; set none (error for librdkafka)"
	case lower == "error":
		return ReasonOffsetResetRejected, "librdkafka rejects error with surrounding spaces (Invalid value); set error"
	case silentResets[lower] || strings.HasPrefix(lower, "by_duration:"):
		return ReasonOffsetResetSilent, "the client skips silently; set none (error for librdkafka)"
	}
	return ReasonOffsetResetRejected, "no client accepts this value (the Java client's ConfigException, librdkafka's Invalid value: " +
		"the consumer never starts); set none (error for librdkafka)"
}

// silentResets are the values with which some client resets silently:
// Java's earliest and latest (by_duration:<ISO-8601 duration> from 4.0,
// KIP-1106), librdkafka's smallest, earliest, beginning, largest, latest
// and end. An empty value is the client's default: latest.
var silentResets = map[string]bool{
	"": true, "earliest": true, "latest": true,
	"smallest": true, "beginning": true, "largest": true, "end": true,
}
