/*
 * Consumer is the official Java consumer (kafka-clients' KafkaConsumer) for
 * the tests that replay the seeds with a real client on a real broker. It
 * mirrors test/consumer (franz-go): configured from the environment the way
 * a team's consumer pod is, it logs — one JSON object per line on stdout —
 * where the client resumed, what it read and what it skipped, so a test
 * proves from its output that no record was lost, or exactly which were.
 *
 * Build: hack/build-kafka.sh (javac, no build plugins). Run:
 *
 *   java -cp "$RETENTION_GUARD_JAVA_CONSUMER/classes:$RETENTION_GUARD_JAVA_CONSUMER/libs/*" \
 *     io.retentionguard.test.Consumer
 *
 * Interface (fixed: other tests code against it).
 *
 * Environment:
 *
 *   KAFKA_BOOTSTRAP_SERVERS   host:port[,host:port]   (required) bootstrap.servers
 *   KAFKA_GROUP_ID            consumer group          (required) group.id
 *   KAFKA_TOPICS              topic[,topic]           (required) subscribe()
 *   KAFKA_AUTO_OFFSET_RESET   passed verbatim to auto.offset.reset, so the
 *                             client's own validation shows (NONE is a
 *                             ConfigException: exit 64); unset or empty: the
 *                             client's default (latest)
 *   KAFKA_GROUP_PROTOCOL      passed verbatim to group.protocol (classic |
 *                             consumer); unset or empty: the client's default
 *   KAFKA_ENABLE_AUTO_COMMIT  passed verbatim to enable.auto.commit (true, the
 *                             client's default | false); false: commitSync of
 *                             the positions after each poll that returned records
 *   KAFKA_AUTO_COMMIT_INTERVAL_MS   passed verbatim to auto.commit.interval.ms
 *   CONSUMER_EXIT_AFTER_IDLE  a duration (5s, 500ms, 1m30s): once no record
 *                             came for that long (counted from the last
 *                             assignment or record; it does not run before the
 *                             first assignment), commit (commitSync of the
 *                             positions) and exit 0 — a batch consumer (a Job)
 *   KAFKA_CLIENT_PROPERTIES   optional key=value;key=value, passed verbatim
 *                             after the above (it overrides them)
 *
 * stdout, one JSON object per line; every line has "time" and "msg":
 *
 *   "started"       brokers, group, topics, autoOffsetReset, groupProtocol,
 *                   enableAutoCommit (the values the client resolved)
 *   "assigned"      topic, partition, committed (the group's committed offset
 *                   read with committed() in onPartitionsAssigned; -1: none),
 *                   logStart, logEnd (the partition's offsets then)
 *   "position"      topic, partition, offset, committed: where the client
 *                   fetches from after the first poll that follows the
 *                   assignment (a reset for a missing committed offset is
 *                   done by then; an out-of-range one shows only on the
 *                   fetch, in "first record")
 *   "first record"  topic, partition, offset (the first offset consumed after
 *                   the assignment), committed, reset (true when the client did
 *                   not resume at the committed offset), resetCause
 *                   (NoCommittedOffset | OffsetOutOfRange, only when reset),
 *                   skipped (offset − committed when a committed offset was
 *                   jumped over; 0 otherwise)
 *   "skipped"       topic, partition, from, to, count: a gap between records
 *   "consumed"      topic, partition, first, last, count: one poll's records
 *   "committed"     offsets: {topic: {"partition": offset}} committed
 *   "stopping"      reason ("signal", or "no record for 5s")
 *   "fatal"         error (the message), exception (the Java class's simple
 *                   name, e.g. NoOffsetForPartitionException)
 *
 * Exit: 0 after "stopping" (idle or SIGTERM); 1 on a fatal Kafka error
 * (NoOffsetForPartitionException or OffsetOutOfRangeException with
 * auto.offset.reset=none, any other KafkaException from poll or commit); 64
 * on a configuration error (a missing variable, a ConfigException from the
 * client, e.g. auto.offset.reset=NONE).
 *
 * The client logs (SLF4J simple) go to stderr at WARN unless
 * -Dorg.slf4j.simpleLogger.defaultLogLevel says otherwise.
 */
package io.retentionguard.test;

import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import org.apache.kafka.clients.consumer.CloseOptions;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.config.ConfigException;
import org.apache.kafka.common.errors.WakeupException;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

public final class Consumer {
  static final int EXIT_FATAL = 1;
  static final int EXIT_CONFIG = 64;

  private Consumer() {}

  // ---- output ----

  static synchronized void log(String msg, Object... kv) {
    Map<String, Object> m = new LinkedHashMap<>();
    m.put("time", Instant.now().toString());
    m.put("msg", msg);
    for (int i = 0; i + 1 < kv.length; i += 2) {
      m.put(String.valueOf(kv[i]), kv[i + 1]);
    }
    StringBuilder b = new StringBuilder();
    json(b, m);
    System.out.println(b);
    System.out.flush();
  }

  static void json(StringBuilder b, Object v) {
    if (v == null) {
      b.append("null");
    } else if (v instanceof Number || v instanceof Boolean) {
      b.append(v);
    } else if (v instanceof Map<?, ?> m) {
      b.append('{');
      boolean first = true;
      for (Map.Entry<?, ?> e : m.entrySet()) {
        if (!first) b.append(',');
        first = false;
        json(b, String.valueOf(e.getKey()));
        b.append(':');
        json(b, e.getValue());
      }
      b.append('}');
    } else if (v instanceof Collection<?> c) {
      b.append('[');
      boolean first = true;
      for (Object o : c) {
        if (!first) b.append(',');
        first = false;
        json(b, o);
      }
      b.append(']');
    } else {
      String s = v.toString();
      b.append('"');
      for (int i = 0; i < s.length(); i++) {
        char ch = s.charAt(i);
        switch (ch) {
          case '"' -> b.append("\\\"");
          case '\\' -> b.append("\\\\");
          case '\n' -> b.append("\\n");
          case '\r' -> b.append("\\r");
          case '\t' -> b.append("\\t");
          default -> {
            if (ch < 0x20) b.append(String.format("\\u%04x", (int) ch));
            else b.append(ch);
          }
        }
      }
      b.append('"');
    }
  }

  static void fatal(Throwable e, int code) {
    log("fatal", "error", String.valueOf(e.getMessage()), "exception", e.getClass().getSimpleName());
    exit(code);
  }

  // ---- configuration ----

  static final class Config {
    List<String> brokers;
    String group;
    List<String> topics;
    Duration exitAfterIdle; // null: run until SIGTERM
    Properties props = new Properties();
  }

  static List<String> splitList(String s) {
    List<String> out = new ArrayList<>();
    if (s == null) return out;
    for (String p : s.split(",")) {
      p = p.strip();
      if (!p.isEmpty()) out.add(p);
    }
    return out;
  }

  static String env(String name) {
    String v = System.getenv(name);
    return v == null || v.isEmpty() ? null : v;
  }

  private static final Pattern DURATION_PART = Pattern.compile("(\\d+(?:\\.\\d+)?)(ns|us|µs|ms|s|m|h)");

  /** parseDuration reads a Go duration (5s, 500ms, 1m30s). */
  static Duration parseDuration(String s) {
    Matcher m = DURATION_PART.matcher(s.strip());
    double nanos = 0;
    int end = 0;
    while (m.find() && m.start() == end) {
      double n = Double.parseDouble(m.group(1));
      nanos += n * switch (m.group(2)) {
        case "ns" -> 1d;
        case "us", "µs" -> 1e3;
        case "ms" -> 1e6;
        case "s" -> 1e9;
        case "m" -> 60e9;
        default -> 3600e9;
      };
      end = m.end();
    }
    if (end == 0 || end != s.strip().length() || nanos <= 0) {
      throw new IllegalArgumentException(
          "CONSUMER_EXIT_AFTER_IDLE=\"" + s + "\": use a positive duration such as 5s or 500ms");
    }
    return Duration.ofNanos((long) nanos);
  }

  static Config configFromEnv() {
    Config c = new Config();
    c.brokers = splitList(System.getenv("KAFKA_BOOTSTRAP_SERVERS"));
    c.group = env("KAFKA_GROUP_ID");
    c.topics = splitList(System.getenv("KAFKA_TOPICS"));
    List<String> errs = new ArrayList<>();
    if (c.brokers.isEmpty()) errs.add("KAFKA_BOOTSTRAP_SERVERS is empty: set host:port[,host:port]");
    if (c.group == null || c.group.isBlank()) errs.add("KAFKA_GROUP_ID is empty: set the consumer group");
    if (c.topics.isEmpty()) errs.add("KAFKA_TOPICS is empty: set topic[,topic]");
    if (!errs.isEmpty()) throw new IllegalArgumentException(String.join("; ", errs));

    Properties p = c.props;
    p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, String.join(",", c.brokers));
    p.put(ConsumerConfig.GROUP_ID_CONFIG, c.group);
    p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
    p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
    String v;
    if ((v = env("KAFKA_AUTO_OFFSET_RESET")) != null) p.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, v);
    if ((v = env("KAFKA_GROUP_PROTOCOL")) != null) p.put(ConsumerConfig.GROUP_PROTOCOL_CONFIG, v);
    if ((v = env("KAFKA_ENABLE_AUTO_COMMIT")) != null) p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, v);
    if ((v = env("KAFKA_AUTO_COMMIT_INTERVAL_MS")) != null) p.put(ConsumerConfig.AUTO_COMMIT_INTERVAL_MS_CONFIG, v);
    if ((v = env("CONSUMER_EXIT_AFTER_IDLE")) != null) c.exitAfterIdle = parseDuration(v);
    if ((v = env("KAFKA_CLIENT_PROPERTIES")) != null) {
      for (String kv : v.split(";")) {
        if (kv.isBlank()) continue;
        int eq = kv.indexOf('=');
        if (eq <= 0) {
          throw new IllegalArgumentException("KAFKA_CLIENT_PROPERTIES: \"" + kv + "\" is not key=value");
        }
        p.put(kv.substring(0, eq).strip(), kv.substring(eq + 1));
      }
    }
    return c;
  }

  // ---- tracking resets and gaps ----

  static final Map<TopicPartition, Long> committedAtAssign = new HashMap<>(); // -1: none
  static final Set<TopicPartition> started = new HashSet<>();
  static final Set<TopicPartition> unpositioned = new HashSet<>();
  static volatile long lastActivity; // 0: never assigned
  static final Map<TopicPartition, Long> last = new HashMap<>();

  static final class Listener implements ConsumerRebalanceListener {
    final KafkaConsumer<byte[], byte[]> consumer;

    Listener(KafkaConsumer<byte[], byte[]> consumer) {
      this.consumer = consumer;
    }

    @Override
    public void onPartitionsRevoked(Collection<TopicPartition> partitions) {}

    @Override
    public void onPartitionsAssigned(Collection<TopicPartition> partitions) {
      if (partitions.isEmpty()) return;
      Set<TopicPartition> set = new HashSet<>(partitions);
      // What the group holds (OffsetFetch), read before the client fetches:
      // the offset it resumes at unless it resets.
      Map<TopicPartition, OffsetAndMetadata> committed = consumer.committed(set, Duration.ofSeconds(30));
      Map<TopicPartition, Long> start = consumer.beginningOffsets(set, Duration.ofSeconds(30));
      Map<TopicPartition, Long> end = consumer.endOffsets(set, Duration.ofSeconds(30));
      for (TopicPartition tp : sorted(set)) {
        OffsetAndMetadata om = committed.get(tp);
        long c = om == null ? -1 : om.offset();
        committedAtAssign.put(tp, c);
        started.remove(tp);
        unpositioned.add(tp);
        last.remove(tp);
        log("assigned", "topic", tp.topic(), "partition", tp.partition(), "committed", c,
            "logStart", start.getOrDefault(tp, -1L), "logEnd", end.getOrDefault(tp, -1L));
      }
      lastActivity = System.nanoTime();
    }

    @Override
    public void onPartitionsLost(Collection<TopicPartition> partitions) {
      unpositioned.removeAll(partitions);
    }
  }

  static List<TopicPartition> sorted(Collection<TopicPartition> tps) {
    List<TopicPartition> l = new ArrayList<>(tps);
    l.sort((a, b) -> a.topic().equals(b.topic())
        ? Integer.compare(a.partition(), b.partition())
        : a.topic().compareTo(b.topic()));
    return l;
  }

  static void record(TopicPartition tp, List<ConsumerRecord<byte[], byte[]>> recs) {
    long first = recs.get(0).offset();
    if (started.add(tp)) {
      long committed = committedAtAssign.getOrDefault(tp, -1L);
      List<Object> kv = new ArrayList<>(List.of("topic", tp.topic(), "partition", tp.partition(),
          "offset", first, "committed", committed));
      if (committed < 0) {
        kv.addAll(List.of("reset", true, "resetCause", "NoCommittedOffset", "skipped", 0L));
      } else if (first != committed) {
        kv.addAll(List.of("reset", true, "resetCause", "OffsetOutOfRange", "skipped", first - committed));
      } else {
        kv.addAll(List.of("reset", false, "skipped", 0L));
      }
      log("first record", kv.toArray());
    } else {
      Long l = last.get(tp);
      if (l != null && first > l + 1) {
        log("skipped", "topic", tp.topic(), "partition", tp.partition(), "from", l + 1, "to", first - 1,
            "count", first - l - 1);
      }
    }
    for (int i = 1; i < recs.size(); i++) {
      long prev = recs.get(i - 1).offset(), cur = recs.get(i).offset();
      if (cur > prev + 1) {
        log("skipped", "topic", tp.topic(), "partition", tp.partition(), "from", prev + 1, "to", cur - 1,
            "count", cur - prev - 1);
      }
    }
    long lastOffset = recs.get(recs.size() - 1).offset();
    last.put(tp, lastOffset);
    log("consumed", "topic", tp.topic(), "partition", tp.partition(), "first", first, "last", lastOffset,
        "count", recs.size());
  }

  /** logPositions logs where newly assigned partitions fetch from. */
  static void logPositions(KafkaConsumer<byte[], byte[]> consumer) {
    if (unpositioned.isEmpty()) return;
    Set<TopicPartition> assigned = consumer.assignment();
    for (TopicPartition tp : sorted(unpositioned)) {
      if (!assigned.contains(tp)) continue;
      long pos = consumer.position(tp, Duration.ofSeconds(30));
      log("position", "topic", tp.topic(), "partition", tp.partition(), "offset", pos,
          "committed", committedAtAssign.getOrDefault(tp, -1L));
    }
    unpositioned.clear();
  }

  /** commit commits the positions of the partitions (what commitSync() commits) and logs them. */
  static void commit(KafkaConsumer<byte[], byte[]> consumer, Collection<TopicPartition> partitions) {
    Map<TopicPartition, OffsetAndMetadata> offsets = new HashMap<>();
    for (TopicPartition tp : partitions) {
      offsets.put(tp, new OffsetAndMetadata(consumer.position(tp, Duration.ofSeconds(30))));
    }
    if (offsets.isEmpty()) return;
    consumer.commitSync(offsets, Duration.ofSeconds(30));
    Map<String, Map<String, Long>> view = new TreeMap<>();
    for (TopicPartition tp : sorted(offsets.keySet())) {
      view.computeIfAbsent(tp.topic(), k -> new LinkedHashMap<>())
          .put(Integer.toString(tp.partition()), offsets.get(tp).offset());
    }
    log("committed", "offsets", view);
  }

  // ---- main ----

  static final CountDownLatch done = new CountDownLatch(1);
  static volatile boolean stopping;

  static void exit(int code) {
    done.countDown();
    System.exit(code);
  }

  public static void main(String[] args) {
    if (System.getProperty("org.slf4j.simpleLogger.defaultLogLevel") == null) {
      System.setProperty("org.slf4j.simpleLogger.defaultLogLevel", "warn");
    }
    Config cfg;
    ConsumerConfig resolved;
    try {
      cfg = configFromEnv();
      resolved = new ConsumerConfig(ConsumerConfig.appendDeserializerToConfig(propsMap(cfg.props), null, null));
    } catch (IllegalArgumentException | ConfigException e) {
      fatal(e, EXIT_CONFIG);
      return;
    }
    KafkaConsumer<byte[], byte[]> consumer;
    try {
      consumer = new KafkaConsumer<>(cfg.props);
    } catch (KafkaException e) {
      Throwable cause = e;
      while (cause != null && !(cause instanceof ConfigException)) cause = cause.getCause();
      if (cause != null) fatal(cause, EXIT_CONFIG);
      else fatal(e, EXIT_FATAL);
      return;
    }
    boolean autoCommit = resolved.getBoolean(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG);
    log("started", "brokers", cfg.brokers, "group", cfg.group, "topics", cfg.topics,
        "autoOffsetReset", resolved.getString(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG),
        "groupProtocol", resolved.getString(ConsumerConfig.GROUP_PROTOCOL_CONFIG),
        "enableAutoCommit", autoCommit);

    Thread mainThread = Thread.currentThread();
    Runtime.getRuntime().addShutdownHook(new Thread(() -> {
      if (done.getCount() == 0) return;
      stopping = true;
      consumer.wakeup();
      try {
        done.await(20, TimeUnit.SECONDS);
      } catch (InterruptedException ignored) {
        Thread.currentThread().interrupt();
      }
    }));

    String reason = "signal";
    try {
      consumer.subscribe(cfg.topics, new Listener(consumer));
      Duration pollTimeout = Duration.ofSeconds(1);
      if (cfg.exitAfterIdle != null && cfg.exitAfterIdle.compareTo(pollTimeout) < 0) {
        pollTimeout = cfg.exitAfterIdle;
      }
      while (!stopping) {
        ConsumerRecords<byte[], byte[]> recs = consumer.poll(pollTimeout);
        logPositions(consumer);
        if (!recs.isEmpty()) {
          lastActivity = System.nanoTime();
          for (TopicPartition tp : sorted(recs.partitions())) {
            record(tp, recs.records(tp));
          }
          if (!autoCommit) commit(consumer, recs.partitions());
        } else if (cfg.exitAfterIdle != null && lastActivity != 0
            && System.nanoTime() - lastActivity >= cfg.exitAfterIdle.toNanos()) {
          reason = "no record for " + env("CONSUMER_EXIT_AFTER_IDLE");
          break;
        }
      }
    } catch (WakeupException e) {
      // SIGTERM: stop as below.
    } catch (KafkaException e) {
      // NoOffsetForPartitionException, OffsetOutOfRangeException (none), and
      // every other error the client raises to the application.
      log("fatal", "error", String.valueOf(e.getMessage()), "exception", e.getClass().getSimpleName());
      try {
        consumer.close(CloseOptions.timeout(Duration.ofSeconds(5)));
      } catch (RuntimeException ignored) {
        // exiting anyway
      }
      exit(EXIT_FATAL);
      return;
    }
    log("stopping", "reason", reason);
    int code = 0;
    try {
      // A last commit of the positions, as close() does with auto commit
      // and as a manual committer does on shutdown.
      commit(consumer, consumer.assignment());
      consumer.close(CloseOptions.timeout(Duration.ofSeconds(10)));
    } catch (KafkaException e) {
      log("fatal", "error", String.valueOf(e.getMessage()), "exception", e.getClass().getSimpleName());
      code = EXIT_FATAL;
    }
    if (Thread.currentThread() == mainThread) exit(code);
  }

  static Map<String, Object> propsMap(Properties p) {
    Map<String, Object> m = new HashMap<>();
    for (String k : p.stringPropertyNames()) m.put(k, p.getProperty(k));
    return m;
  }
}
