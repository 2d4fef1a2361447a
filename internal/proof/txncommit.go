package proof

import (
	"time"
)

// Transactions and the commit clock (docs/kafka-semantics.md, "Transactional
// commits"):
//
//   - A transactional offset commit (TxnOffsetCommit, a producer's
//     sendOffsetsToTransaction) carries the group coordinator's time when it
//     was sent (Kafka 3.9 GroupCoordinatorAdapter.commitTransactionalOffsets,
//     4.x OffsetMetadataManager.commitTransactionalOffset: currentTimeMs),
//     keeps it when the transaction commits (3.9
//     GroupMetadata.completePendingTxnOffsetCommit, 4.x
//     OffsetMetadataManager.replayEndTransactionMarker), and expires
//     offsets.retention.minutes after it. It becomes visible only when the
//     transaction ends: at most the producer's transaction timeout after the
//     transaction began (capped by the broker's transaction.max.timeout.ms at
//     InitProducerId, TransactionStateManager.validateTransactionTimeoutMs),
//     plus the period of the check that aborts timed-out transactions
//     (transaction.abort.timed.out.transaction.cleanup.interval.ms;
//     TransactionStateManager.timedOutTransactions: EndTxn itself does not
//     look at the timeout). So an offset the observer saw change after t0
//     was committed no earlier than t0 less that allowance, not t0. Nothing
//     the observer reads tells a transactional commit from a plain one once
//     it is visible, so the allowance applies to every witnessed change.
//     With transaction.two.phase.commit.enable (Kafka 4.1+, KIP-939) a
//     two-phase transaction has no timeout at all (Int.MaxValue, never
//     aborted by the check): a witnessed change dates nothing.
//   - A transaction marker (the control record ending a transaction on a
//     data partition) is stamped by the partition leader's clock when it
//     handles WriteTxnMarkers (KafkaApis.handleWriteTxnMarkersRequest,
//     MemoryRecords.withEndTransactionMarker: System.currentTimeMillis();
//     with LogAppendTime the append overwrites it by the leader's clock
//     again, LogValidator). A consumer passes it only once it is written,
//     so a committed offset past it was committed after its timestamp: a
//     broker's clock, no producer skew.

// TransactionConfig is what the brokers say about how long a transaction
// may stay open, the largest over brokers (any broker may coordinate a
// transactional ID). A key a broker did not report is Kafka's default (a
// broker older than the key, or no Kafka broker at all); a value that does
// not parse keeps witnessed changes from dating commits.
type TransactionConfig struct {
	// MaxTimeoutMs is transaction.max.timeout.ms (900000 by default).
	MaxTimeoutMs ConfigValue
	// AbortCheckIntervalMs is
	// transaction.abort.timed.out.transaction.cleanup.interval.ms (10000
	// by default).
	AbortCheckIntervalMs ConfigValue
	// TwoPhaseCommitEnable is transaction.two.phase.commit.enable (Kafka
	// 4.1+, false by default): "true" when any broker has it on.
	TwoPhaseCommitEnable ConfigValue
}

// Broker config keys, and Kafka's defaults
// (TransactionStateManagerConfig).
const (
	KeyTransactionMaxTimeoutMs         = "transaction.max.timeout.ms"
	KeyTransactionAbortCheckIntervalMs = "transaction.abort.timed.out.transaction.cleanup.interval.ms"
	KeyTransactionTwoPhaseCommit       = "transaction.two.phase.commit.enable"
	DefaultTransactionMaxTimeoutMs     = 900_000
	DefaultTransactionAbortCheckMs     = 10_000
)

// transactionAllowance is how long before it became visible a
// transactional commit may have been stamped: transaction.max.timeout.ms
// plus the abort check's period. problem says why no allowance bounds it.
func transactionAllowance(t TransactionConfig) (time.Duration, string) {
	if v := t.TwoPhaseCommitEnable; v.Present && !v.Is("false") {
		return 0, KeyTransactionTwoPhaseCommit + " is " + quoteNullable(v) + " on a broker: a two-phase transaction (KIP-939) has no " +
			"timeout, so an offset committed in one carries a time any while before the guard saw it change"
	}
	var total time.Duration
	for _, c := range []struct {
		key string
		v   ConfigValue
		def int64
	}{{KeyTransactionMaxTimeoutMs, t.MaxTimeoutMs, DefaultTransactionMaxTimeoutMs}, {KeyTransactionAbortCheckIntervalMs, t.AbortCheckIntervalMs, DefaultTransactionAbortCheckMs}} {
		d := millisToDuration(c.def)
		if c.v.Present {
			var ok bool
			if d, ok = c.v.Millis(); !ok {
				return 0, c.key + " is " + quoteNullable(c.v) + ": how long a transactional offset commit may stay hidden after the time " +
					"it carries is unknown, so a change the guard saw does not date it"
			}
		}
		total = saturatingAdd(total, d)
	}
	return total, ""
}

func quoteNullable(v ConfigValue) string {
	if v.Null {
		return "null"
	}
	return quoteValue(v.Value)
}

func saturatingAdd(a, b time.Duration) time.Duration {
	if s := a + b; s >= a {
		return s
	}
	return time.Duration(1<<63 - 1)
}
