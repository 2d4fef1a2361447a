// Package kafka observes Kafka clusters for the proof: per consumer group
// and topic, the retention configs, the partitions' log start and end, the
// group's committed offsets and the timestamps of the records at them, the
// brokers' offsets.retention.minutes, and the group's state and protocol.
// It gathers; internal/proof decides.
//
// # One pass, batched
//
// Observer.Observe serves every target of a connection in one pass, each
// request sent once for the union of what the targets need, batched the way
// Kafka allows, so the number of requests depends on brokers and group
// coordinators, never on partitions:
//
//	Metadata               1                  brokers, topics, leaders, topic IDs
//	DescribeConfigs        brokers + 1        each broker's own offsets.retention.minutes; all topic configs
//	ListOffsets            2 per leader       log start, log end
//	OffsetFetch            1 per coordinator  all groups it coordinates (v8+), partitions named
//	DescribeGroups         1 per coordinator  classic groups
//	ConsumerGroupDescribe  1 per coordinator  KIP-848 groups
//	Fetch                  1 per leader       a few bytes per partition at the committed offset
//	OffsetsForLeaderEpoch  1 per leader       partitions whose committed offset carries a leader epoch, or (the manager) whose epoch-less one was first seen in an epoch the leader has left (epochs.go)
//
// (plus FindCoordinator and connection setup the first time). A target with
// a business cursor (Target.Cursor, read by internal/cursor) has it read
// once per pass, between the committed offsets and the log end, and the
// records at its cursors ride along in the same Fetch requests. The requests
// are raw kmsg requests sharded by the franz-go client, not kadm's helpers,
// because the raw answers keep an error code per topic, partition, group and
// config resource; see the Kafka facts below.
//
// # Failures, never guesses
//
// Whatever could not be read is a proof.Failure in the observations it
// concerns (a denied topic fails only the targets with that topic, a denied
// group only that group's targets, an unreachable cluster all of them), with
// a reason:
//
//   - BrokerUnreachable: dial errors, TLS errors (the message says which),
//     timeouts, the context's deadline, brokers that did not answer, and
//     other Kafka error codes;
//   - AuthenticationFailed: SASL rejected (or a broker closing the
//     connection during the SASL exchange), an unsupported mechanism;
//   - AuthorizationFailed: TOPIC/GROUP/CLUSTER_AUTHORIZATION_FAILED, naming
//     the API (Metadata, DescribeConfigs, ListOffsets, OffsetFetch,
//     DescribeGroups, ConsumerGroupDescribe), or a partition OffsetFetch
//     left out of its answer;
//   - TopicNotFound: UNKNOWN_TOPIC_OR_PARTITION or a topic missing from
//     metadata. Metadata never creates topics.
//
// A fact that was not read keeps its "unknown" value next to its failure:
// a ConfigValue with Present=false, LogStart/LogEnd -1, Committed NoOffset
// (read Committed only when no failure names the partition or its group),
// an empty group state. Messages never contain credentials: they are built
// from names and Kafka error codes, and the connection's password is
// redacted from every message and log line should anything ever echo it.
//
// Denied Fetch is the exception: the record timestamps only feed the
// recoveryHeadroom warning, so a principal without Read on a topic still
// gets a proof. Its CommittedTimestamp stays zero (unknown) and the denial
// is logged at V(1); no Failure.
//
// # Kafka facts the observer respects
//
//   - DescribeConfigs for the broker resource "" answers only dynamic
//     cluster-level values: each broker is asked by its ID for its
//     effective offsets.retention.minutes (static and default included), and
//     the smallest governs. A broker that cannot be read makes the value
//     unreadable.
//   - OffsetFetch answers only for partitions the principal may describe: a
//     partition missing from the answer is AuthorizationFailed, not "no
//     committed offset".
//   - A KIP-848 group is Dead or GROUP_ID_NOT_FOUND to DescribeGroups:
//     ConsumerGroupDescribe is asked too, and the protocol set from whichever
//     knows the group.
//   - Kafka 3.9 answers a ConsumerGroupDescribe of several groups with each
//     group once per __consumer_offsets partition of the request, all but
//     one GROUP_ID_NOT_FOUND: an entry that found the group wins.
//   - franz-go sends StreamsGroupDescribe to any broker: groups answered
//     NOT_COORDINATOR are asked again of their coordinators.
//   - Committed offsets are reported raw, below the log start when they
//     expired; kadm's lag helpers clamp and are not used.
//   - A failed shard of a sharded request is a failure of exactly the
//     partitions, groups or resources it carried.
//   - kadm.DescribeTopicConfigs fails the whole call on one topic's denial;
//     the raw DescribeConfigs keeps a code per topic.
//
// # What Kafka does not say
//
// Kafka does not say since when a group is Empty, nor when an offset was
// last committed. The Observer remembers, per cluster (bootstrap servers,
// not credentials) and group, and reports EmptySince and LastCommit only
// for transitions it witnessed between two of its own observations. A
// one-shot observation (the CLI, a fresh Observer) cannot know them and
// leaves them zero. The reasoning is internal/groupmemory's (Memory.Record).
package kafka
