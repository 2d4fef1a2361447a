package kafka

import (
	"github.com/retentionguard/retention-guard/internal/proof"
)

// The brokers' transaction settings bound how long a transactional offset
// commit may stay hidden after the time it carries (internal/proof's
// txncommit.go): any broker may coordinate a transactional ID, so the
// loosest governs: the largest transaction.max.timeout.ms and abort check
// interval, and two-phase commit on when any broker has it on. A broker
// that did not report a key leaves it absent (the proof takes Kafka's
// default: 3.9 and 4.0 have no two-phase commit); a value that does not
// parse is passed on as is (the proof then dates nothing by a change it
// saw: fail closed).
var transactionConfigKeys = []string{
	proof.KeyTransactionMaxTimeoutMs, proof.KeyTransactionAbortCheckIntervalMs, proof.KeyTransactionTwoPhaseCommit,
}

// loosestTransactionConfig folds the brokers' transaction settings; empty
// when any broker's configs could not be read.
func loosestTransactionConfig(brokers []int32, defaults map[int32]map[string]proof.ConfigValue, anyFailed bool) proof.TransactionConfig {
	var out proof.TransactionConfig
	if anyFailed {
		return out
	}
	largest := func(cur *proof.ConfigValue, v proof.ConfigValue) {
		if !v.Present {
			return
		}
		n, ok := v.Int()
		if !ok {
			*cur = v // does not parse: wins, the proof reports it
			return
		}
		if !cur.Present {
			*cur = v
			return
		}
		m, ok := cur.Int()
		if !ok {
			return
		}
		if n > m {
			*cur = v
		}
	}
	for _, id := range brokers {
		values := defaults[id]
		largest(&out.MaxTimeoutMs, values[proof.KeyTransactionMaxTimeoutMs])
		largest(&out.AbortCheckIntervalMs, values[proof.KeyTransactionAbortCheckIntervalMs])
		if v := values[proof.KeyTransactionTwoPhaseCommit]; v.Present &&
			(!out.TwoPhaseCommitEnable.Present || out.TwoPhaseCommitEnable.Is("false")) {
			out.TwoPhaseCommitEnable = v // anything but false wins
		}
	}
	return out
}
