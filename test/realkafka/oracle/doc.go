// Package oracle checks the proof against the broker: reality is the
// oracle. internal/proof's fuzz test checks the proof against its own
// rules; this package generates scenarios on real Apache Kafka brokers
// whose every clock is a production one scaled by one factor (topic
// retention.ms and segment.ms, compaction, offsets.retention.minutes,
// classic, simple and KIP-848 groups, commit ages, lag, the recovery
// window),
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
// committed offset. Fewer still draw the kinds that need a cluster of
// their own (clusters_test.go), started on the first trial that draws
// one, one per line, shared by the trials that draw it: a log diverged
// by an unclean leader election on a three-node cluster (the last records
// before the commit written while the follower was down, the leader
// crashed before the verdict, the stale follower elected, the log truncated
// below the commit and grown back past it; one such trial at a time per
// line, as its crashes would take the others' partitions down), its commit
// carrying the leader epoch of the records it points past (a KIP-320
// client) or none (kafka-consumer-groups --reset-offsets,
// Admin.alterConsumerGroupOffsets); and a tiered topic on a broker with a
// remote tier (LocalTieredStorage, local.retention.ms of a second), where
// remote expiry moves the log start and the record at a lagging group's
// offset is served from the remote tier, or its timestamp not at all. On
// a diverged log the consumer has to read every record from the
// truncation on when its commit was above it: the records it read there
// were replaced.
//
// Every clock scaled by one factor, as deployed (scale_test.go): the
// factor is 1/10080, which takes offsets.retention.minutes' default of 7
// days to one minute, Kafka's floor for it (GroupCoordinatorConfig,
// atLeast(1)): the only floor the scaling hits. Each line's broker runs
// its own defaults divided by it: offsets.retention.check.interval.ms
// 600 000 → 60 ms, log.retention.check.interval.ms 300 000 → 30 ms,
// log.retention.ms and log.roll.ms 7 days → 60 s,
// log.cleaner.delete.retention.ms 1 day → 8 571 ms, log.cleaner.backoff.ms
// 15 s → 1 ms, log.initial.task.delay.ms 30 s → 3 ms and, on 4.x,
// log.message.timestamp.after.max.ms 1 h → 357 ms (3.x's default,
// Long.MAX_VALUE, stays unbounded: as deployed). Every one of those
// accepts the value (atLeast(0) or atLeast(1), LogConfig, CleanerConfig,
// GroupCoordinatorConfig on both lines). The scenario draws
// production-shaped values, scaled: retention.ms 1–14 days (7, the
// default, then no override), segment.ms 1 h–7 days, delete.retention.ms
// 1 h–7 days, the window 6 h–3 days (2.1–25.7 s), the group down since its
// commit for 0–6 days. Membership clocks (session timeouts, rebalance
// delays) are not scaled: they set no retention.
//
// Bytes are scaled too, by 1/1024 (log.segment.bytes 1 GiB → 1 MiB), and
// each trial draws its topic's traffic besides the group's own records
// (drawTraffic): quiet, or enough to fill a segment every hour, 6 hours or
// day, the active segment at the window's start filled to a point drawn
// uniformly (the kinds with a cluster of their own as well). The group's own records, a few a second, never fill a
// segment: without the traffic every segment rolls on segment.ms alone,
// and the rules that count on a roll — a tombstone goes only from a
// cleaned segment, which was rolled first — could never be seen to hold,
// nor a Proven that a roll would break be caught. On a compacting topic
// the window starts with a delete (a tombstone of a key written nowhere
// after it): the tombstone those rules speak of. The summary counts false
// alarms per traffic.
//
// Each verdict is scored claim by claim (score_test.go): every violation
// reason claims something of the broker — the group's offsets expire, a
// record it needs is deleted, a tombstone it needs is dropped, a
// partition without an offset leaves the reset to decide — or of the
// client (a commit with its leader epoch past a diverged log: the consumer
// rewinds to the epoch's end), and the harness reads what the broker did
// (the committed offsets and log starts when the consumer was back, the
// needed tombstones still in the log) and where the consumer first read.
//
// The restart is timed to the window: the consumer's JVM starts before the
// window ends, connecting through a gate (a TCP proxy) that holds its
// connections until the window's end, when the harness reads the broker's
// state (the group's committed offsets, the log starts) and opens it. If
// that state changed in the moment between the window's end and the
// consumer's return, the trial is inconclusive, not judged; so is one
// whose consumer the harness stopped mid-poll (its last commit past what it
// logged: records fetched and never handed on to be logged).
//
// Outcomes: Proven and nothing lost (a true Proven); Proven and records
// lost (a FALSE PROVEN: the test fails and prints the scenario, its seed
// and the consumer's log), unless the proof's own numbers predicted the
// loss (every losing partition's recovery headroom, or the group's offsets'
// expiry, below the window: counted as "false Proven, warned", failed all
// the same); not Proven and records lost (a true alarm); not Proven,
// nothing lost, and every claim the oracle scores held (a true alarm too:
// the offsets did expire and earliest replayed); not Proven and a claim
// did not hold, or none was scored and nothing was lost (a false alarm:
// counted with its reasons, explained in docs/benchmarks.md). The summary
// counts, per reason, the judged trials whose claim held and did not.
//
// Some scenarios no sound proof could prove (unprovable, score_test.go),
// read from their settings alone: Kafka lets the broker lose what the
// group needs before it is back — a record or tombstone written once the
// group is down, under a retention.ms or delete.retention.ms shorter than
// the window, goes as soon as traffic rolls its segment; one written
// before the verdict, under a setting of at most the window (plus the
// commit's age), as soon as a replica's segment closes; a 4.x classic
// group's offsets expire per commit once consumers come back with
// group.protocol=consumer. A false alarm there is the price of soundness,
// not a flaw of the proof: the summary counts such false alarms apart, per
// rule, and the others as a share of the judged trials. A Proven there,
// true or not, fails the test (PROVEN WHERE NO SOUND PROOF COULD BE): the
// proof relied on what it cannot know and was right by chance.
//
// `make test` runs six seeded trials (TestOracle, seed 1), less those that
// draw a kind with a cluster of its own, and TestOracleKinds: the first
// trial of seed 1 that draws each of those kinds on each line, judged the
// same way. `make oracle ORACLE_TRIALS=200 ORACLE_SEED=7` runs as many as
// asked, every kind included, ORACLE_TRIAL=i (or i,j,...) only those
// trials of the seed.
package oracle
