// Package oracle checks the proof against the broker: reality is the
// oracle. internal/proof's fuzz test checks the proof against its own
// rules; this package generates scenarios on real Apache Kafka brokers
// with clocks in seconds (topic retention.ms and segment.ms, compaction,
// offsets.retention.minutes of one minute, classic, simple and KIP-848
// groups, commit ages, lag, the recovery window scaled down to match),
// takes the product's verdict through `retention-guard check`, keeps the
// consumer down for the window while records keep coming, restarts it with
// the Java consumer and compares what it read with what was produced.
//
// A Proven verdict whose consumer skipped a record is a false Proven: the
// test fails and prints the scenario and its seed. A verdict that is not
// Proven whose consumer lost nothing is a false alarm: counted, with its
// reasons (docs/benchmarks.md explains them).
//
// `make test` runs a few seeded trials (TestOracle); `make oracle
// ORACLE_TRIALS=200 ORACLE_SEED=7` runs as many as asked.
package oracle
