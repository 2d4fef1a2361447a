// Package records pins, against real Apache Kafka brokers (every line
// hack/build-kafka.sh assembles: 3.9 and the newest 4.x), the rows of
// docs/kafka-semantics.md sections "Records: retention, compaction,
// timestamps", "Configurations" and "Discovery and authentication": time
// and size retention deleting whole segments (seed 000: the product says
// the committed offset expired, and how many records), DeleteRecords,
// compaction keeping the log start, tombstones dropped after
// delete.retention.ms, an empty cleanup.policy, back-dated and future
// CreateTime records; tiered topics on Kafka's own LocalTieredStorage
// (EARLIEST against EARLIEST_LOCAL, the remote tier's expiry, an empty
// cleanup.policy there, ListOffsets by timestamp and a throttled remote
// Fetch); topics inheriting log.retention.ms/minutes/hours,
// the strictest broker, DescribeConfigs of "" and of a broker ID,
// offsets.retention.minutes per broker; ListGroups per broker and under
// ACLs, group types, OffsetFetch of all topics, Connect and share groups
// left out, SASL PLAIN and SCRAM-SHA-512 with the StandardAuthorizer and
// the missing ACL named, OAUTHBEARER with Kafka's unsecured validator.
//
// Each test asserts what the product reads (internal/kafka's observer, the
// proof's verdict, `check` and `scan`) beside what the broker itself
// answers, so a test fails when the product misreads the broker. Everything
// runs on the broker's own clocks (retention checks every second, the
// cleaner every half second: see apachekafka); brokers are shared between
// tests where a test's topics and groups are its own.
package records
