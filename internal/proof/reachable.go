package proof

import "cmp"

// kafkaReachable holds when every request the proof needs was answered.
// Each failure becomes a violation; the condition shows the most
// fundamental reason (see failurePriority). A failure never proves data
// loss, so it makes the verdict Unknown, not Violated.
func kafkaReachable(f *facts) (Condition, []Violation) {
	if len(f.obs.Failures) == 0 {
		return Condition{
			Type: ClauseKafkaReachable, Status: ConditionTrue, Reason: ReasonReachable,
			Message: "every request the proof needs was answered",
		}, nil
	}
	vs := make([]Violation, 0, len(f.obs.Failures))
	first := -1
	for i, fl := range f.obs.Failures {
		v := failureViolation(fl)
		vs = append(vs, v)
		if first < 0 || cmp.Or(cmp.Compare(reasonRank(v.Reason), reasonRank(vs[first].Reason)), compareViolations(v, vs[first])) < 0 {
			first = i
		}
	}
	c := Condition{Type: ClauseKafkaReachable, Status: ConditionFalse, Reason: vs[first].Reason, Message: vs[first].Message}
	if more := len(vs) - 1; more > 0 {
		c.Message += " (and " + plural(int64(more), "more failure") + ")"
	}
	sortViolations(vs)
	return c, vs
}

func failureViolation(fl Failure) Violation {
	v := topicViolation(ClauseKafkaReachable, failureReason(fl), fl.Topic, "")
	if fl.Topic != "" && fl.Partition >= 0 {
		v.Partition = fl.Partition
	}
	var subject string
	switch {
	case fl.Topic == "":
		subject = ""
	case v.Partition >= 0:
		subject = partitionName(fl.Topic, v.Partition)
	default:
		subject = fl.Topic
	}
	msg := fl.Message
	if msg == "" {
		msg = v.Reason
	}
	if fl.API != "" {
		msg = fl.API + ": " + msg
	}
	if subject != "" {
		msg = subject + ": " + msg
	}
	v.Message = msg
	return v
}
