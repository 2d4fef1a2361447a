// Package oracle checks the proof against the broker: reality is the
// oracle. internal/proof's fuzz test checks the proof against its own
// rules; this package generates scenarios on real Apache Kafka brokers
// with clocks in seconds (topic retention.ms and segment.ms, compaction,
// offsets.retention.minutes of one minute, classic, simple and KIP-848
// groups, commit ages, lag, the recovery window scaled down to match),
// takes the product's verdict through `retention-guard check` (in process:
// the command's own assembly of observer and proof), keeps the consumer
// down for the window while records keep coming, restarts it with the Java
// consumer (kafka-clients) and compares what it read with what was
// produced: every record from the committed offset on, or on a compacting
// topic the last record of each key.
//
// The restart is timed to the window: the consumer's JVM starts before the
// window ends, connecting through a gate (a TCP proxy) that holds its
// connections until the window's end, when the harness reads the broker's
// state (the group's committed offsets, the log starts) and opens it. If
// that state changed in the moment between the window's end and the
// consumer's return, the trial is inconclusive, not judged.
//
// Outcomes: Proven and nothing lost (a true Proven); Proven and records
// lost (a FALSE PROVEN: the test fails and prints the scenario, its seed
// and the consumer's log), unless the proof's own numbers predicted the
// loss (every losing partition's recovery headroom, or the group's offsets'
// expiry, below the window: warnings in the product's design, counted as
// "false Proven, warned"); not Proven and records lost (a true alarm); not
// Proven and nothing lost (a false alarm: counted with its reasons,
// explained in docs/benchmarks.md).
//
// `make test` runs six seeded trials (TestOracle, seed 1); `make oracle
// ORACLE_TRIALS=200 ORACLE_SEED=7` runs as many as asked, ORACLE_TRIAL=i
// only trial i of the seed.
package oracle
