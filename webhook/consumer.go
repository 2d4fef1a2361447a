package webhook

import (
	"fmt"
	"strings"

	rgv1 "github.com/retentionguard/retention-guard/api/v1alpha1"
)

// checkConsumer is the policy's consumer clause: the client must fail
// loudly instead of skipping. Given the resolved settings of the consumer
// containers it returns one finding per container and variable that does
// not prove it: the offset-reset variable must be none or error
// (case-insensitive), and the auto-commit variable, when the policy names
// one, must be false.
func checkConsumer(spec *rgv1.ConsumerClientSpec, envs []containerEnv) []finding {
	var out []finding
	for i := range envs {
		ce := &envs[i]
		subject := "container " + ce.Container
		if ce.Missing {
			out = append(out, finding{Reason: ReasonConsumerContainerNotFound, Subject: subject,
				Message: "spec.consumer.container names it, but the pod template has no such container"})
			continue
		}
		name := spec.OffsetResetEnv
		switch v := ce.OffsetReset; {
		case v.Unresolvable != "":
			out = append(out, finding{Reason: ReasonOffsetResetUnresolvable, Subject: subject, Message: v.Unresolvable})
		case !v.Declared:
			out = append(out, finding{Reason: ReasonOffsetResetNotDeclared, Subject: subject, Message: fmt.Sprintf(
				"%s is not set, so the client's default (latest) skips silently; set it to none", name)})
		case !failsLoud(v.Value):
			out = append(out, finding{Reason: ReasonOffsetResetSilent, Subject: subject, Message: fmt.Sprintf(
				"%s=%q (%s): the client skips silently; set none", name, v.Value, v.From)})
		}
		if spec.AutoCommitEnv == "" {
			continue
		}
		name = spec.AutoCommitEnv
		switch v := ce.AutoCommit; {
		case v.Unresolvable != "":
			out = append(out, finding{Reason: ReasonAutoCommitUnresolvable, Subject: subject, Message: v.Unresolvable})
		case !v.Declared:
			out = append(out, finding{Reason: ReasonAutoCommitNotDeclared, Subject: subject, Message: fmt.Sprintf(
				"%s is not set, so the client's default auto commit applies; set it to false", name)})
		case !strings.EqualFold(strings.TrimSpace(v.Value), "false"):
			out = append(out, finding{Reason: ReasonAutoCommitEnabled, Subject: subject, Message: fmt.Sprintf(
				"%s=%q (%s): commits offsets of unprocessed records; set false", name, v.Value, v.From)})
		}
	}
	return out
}

// failsLoud: none (Java, franz-go) or error (librdkafka), any case.
func failsLoud(v string) bool {
	v = strings.TrimSpace(v)
	return strings.EqualFold(v, "none") || strings.EqualFold(v, "error")
}
