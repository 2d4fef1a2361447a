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
// Some trials draw issue 33's kinds that one broker per line can show,
// each with a modest probability: a partition added after the commit and
// written to while the consumer is down (the group has no offset on it;
// the consumer must read it from 0, and `latest` skips it); the group's
// commit held a few seconds in a transaction (TxnOffsetCommit, stamped
// when sent, shown when the transaction ends); records written by a
// transactional producer (markers between them and after the last); on a
// compacting topic, tombstones of keys never written again behind the
// committed offset. A diverged log (three nodes, an unclean leader), an
// epoch-less reset on it and a tiered topic need a cluster or a remote
// store the oracle does not start: they are not drawn.
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
// (or i,j,...) only those trials of the seed.
package oracle
