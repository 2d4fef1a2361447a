// Package groups pins, on real Apache Kafka brokers (each assembled line:
// 3.9 and the newest 4.x), the group coordinator's behaviour that
// docs/kafka-semantics.md lists under "Offset expiry: the coordinator's
// clocks", "__consumer_offsets" and "Reading offsets and groups": each test
// drives the broker as applications do, lets the broker's own clocks run
// (offsets.retention.minutes=1, Kafka's floor, the cleanup every second;
// no control hook anywhere), reads what the broker did from the broker
// itself (raw kmsg answers, the records of __consumer_offsets), and checks
// that the product's observer (internal/kafka) and proof (internal/proof)
// read it the same way.
//
// 3.9 runs twice: with the Java group coordinator (the harness turns
// KIP-848 groups on, and with them the new coordinator for every group) and
// with the Scala one (classic groups only, what 3.x brokers ran by
// default). The tests of a setup share one broker and run side by side, so
// the minute-long expiries overlap: the package takes a few minutes.
//
// The tests only compile into the test binary; this file is the package.
package groups
