/*
 * ShareConsumer is the official Java share consumer (KafkaShareConsumer,
 * KIP-932) for the test that pins what a share group does with
 * auto.offset.reset (test/realkafka/clients). Same output and exit codes as
 * Consumer, fewer settings:
 *
 *   KAFKA_BOOTSTRAP_SERVERS, KAFKA_GROUP_ID, KAFKA_TOPICS   (required)
 *   KAFKA_AUTO_OFFSET_RESET   passed verbatim to auto.offset.reset when set
 *                             (a share consumer refuses it: ConfigException)
 *   CONSUMER_EXIT_AFTER_IDLE  a duration: exit 0 once no record came for that
 *                             long (counted from the start or the last record)
 *   KAFKA_CLIENT_PROPERTIES   optional key=value;key=value
 *
 * stdout: "started", "consumed" {topic, partition, first, last, count} per
 * poll's records of a partition (acknowledged by the next poll, the
 * implicit mode), "committed" {count} once the acknowledgements are
 * committed, "stopping" {reason}, "fatal" {error, exception}. Exit 0, 1 on a
 * Kafka error, 64 on a configuration error.
 *
 * Run: java -cp "$RETENTION_GUARD_JAVA_CONSUMER/classes:$RETENTION_GUARD_JAVA_CONSUMER/libs/*" \
 *        io.retentionguard.test.ShareConsumer
 */
package io.retentionguard.test;

import java.time.Duration;
import java.util.List;

import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaShareConsumer;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.config.ConfigException;

public final class ShareConsumer {
  private ShareConsumer() {}

  public static void main(String[] args) {
    if (System.getProperty("org.slf4j.simpleLogger.defaultLogLevel") == null) {
      System.setProperty("org.slf4j.simpleLogger.defaultLogLevel", "warn");
    }
    Consumer.Config cfg;
    try {
      cfg = Consumer.configFromEnv();
    } catch (IllegalArgumentException e) {
      Consumer.fatal(e, Consumer.EXIT_CONFIG);
      return;
    }
    // The plain consumer's settings a share consumer has no use for; only
    // what the environment set explicitly is passed on.
    if (Consumer.env("KAFKA_GROUP_PROTOCOL") == null) cfg.props.remove("group.protocol");
    if (Consumer.env("KAFKA_ENABLE_AUTO_COMMIT") == null) cfg.props.remove("enable.auto.commit");
    KafkaShareConsumer<byte[], byte[]> consumer;
    try {
      consumer = new KafkaShareConsumer<>(cfg.props);
    } catch (KafkaException e) {
      Throwable cause = e;
      while (cause != null && !(cause instanceof ConfigException)) cause = cause.getCause();
      if (cause != null) Consumer.fatal(cause, Consumer.EXIT_CONFIG);
      else Consumer.fatal(e, Consumer.EXIT_FATAL);
      return;
    }
    Consumer.log("started", "brokers", cfg.brokers, "group", cfg.group, "topics", cfg.topics);
    String reason = "signal";
    try {
      consumer.subscribe(cfg.topics);
      long last = System.nanoTime();
      while (true) {
        ConsumerRecords<byte[], byte[]> recs = consumer.poll(Duration.ofSeconds(1));
        if (!recs.isEmpty()) {
          last = System.nanoTime();
          for (TopicPartition tp : Consumer.sorted(recs.partitions())) {
            List<ConsumerRecord<byte[], byte[]>> l = recs.records(tp);
            Consumer.log("consumed", "topic", tp.topic(), "partition", tp.partition(), "first", l.get(0).offset(),
                "last", l.get(l.size() - 1).offset(), "count", l.size());
          }
        } else if (cfg.exitAfterIdle != null && System.nanoTime() - last >= cfg.exitAfterIdle.toNanos()) {
          reason = "no record for " + Consumer.env("CONSUMER_EXIT_AFTER_IDLE");
          break;
        }
      }
      Consumer.log("stopping", "reason", reason);
      consumer.commitSync(Duration.ofSeconds(30));
      Consumer.log("committed");
      consumer.close(Duration.ofSeconds(10));
    } catch (KafkaException e) {
      Consumer.fatal(e, Consumer.EXIT_FATAL);
      return;
    }
    Consumer.exit(0);
  }
}
