// Compat drives one scenario of sluice's compatibility matrix with Apache Kafka's Java clients.
// Usage: Compat ROLE SCENARIO BOOTSTRAP TOPIC GROUP TS_BASE CODEC, ROLE one of producer,
// consumer-classic, consumer-848, admin. Exit 0: pass; 3: n/a (reason on the last stdout line);
// anything else: fail. Data conventions are in compat-tests/matrix/doc.go.
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.*;
import java.util.concurrent.ExecutionException;
import org.apache.kafka.clients.admin.*;
import org.apache.kafka.clients.consumer.*;
import org.apache.kafka.clients.producer.*;
import org.apache.kafka.common.*;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.serialization.*;

public class Compat {
  static String role, scenario, bootstrap, topic, group, codec;
  static long tsBase;

  public static void main(String[] a) throws Exception {
    role = a[0]; scenario = a[1]; bootstrap = a[2]; topic = a[3]; group = a[4]; tsBase = Long.parseLong(a[5]);
    codec = a.length > 6 ? a[6] : "";
    try {
      switch (role) {
        case "producer": producer(); break;
        case "consumer-classic": consumer("classic"); break;
        case "consumer-848": consumer("consumer"); break;
        case "admin": admin(); break;
        default: throw new IllegalArgumentException(role);
      }
    } catch (NA e) {
      System.out.println(e.getMessage());
      System.exit(3);
    }
    System.exit(0);
  }

  static class NA extends Exception { NA(String m) { super(m); } }

  static void check(boolean ok, String msg) {
    if (!ok) throw new IllegalStateException(msg);
  }

  static String payload(int i) { return "v" + i + "-" + "x".repeat(100); }

  static Properties base() {
    Properties p = new Properties();
    p.put("bootstrap.servers", bootstrap);
    return p;
  }

  static KafkaProducer<String, String> newProducer(Properties extra) {
    Properties p = base();
    p.put("enable.idempotence", "true");
    p.put("acks", "all");
    p.put("linger.ms", "50");
    p.put("delivery.timeout.ms", "30000");
    p.put("request.timeout.ms", "20000");
    p.put("max.block.ms", "20000");
    p.putAll(extra);
    return new KafkaProducer<>(p, new StringSerializer(), new StringSerializer());
  }

  static KafkaConsumer<String, String> newConsumer(String protocol, String groupId, Properties extra) {
    Properties p = base();
    if (groupId != null) {
      p.put("group.id", groupId);
      p.put("group.protocol", protocol);
    }
    p.put("enable.auto.commit", "false");
    p.put("auto.offset.reset", "earliest");
    p.putAll(extra);
    return new KafkaConsumer<>(p, new StringDeserializer(), new StringDeserializer());
  }

  static List<ConsumerRecord<String, String>> poll(KafkaConsumer<String, String> c, int n) {
    List<ConsumerRecord<String, String>> out = new ArrayList<>();
    long deadline = System.currentTimeMillis() + 30000;
    while (out.size() < n) {
      check(System.currentTimeMillis() < deadline, "got " + out.size() + " of " + n + " records");
      for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(200))) out.add(r);
    }
    return out;
  }

  static String header(ConsumerRecord<String, String> r, String k) {
    Header h = r.headers().lastHeader(k);
    return h == null ? null : new String(h.value(), StandardCharsets.UTF_8);
  }

  static void producer() throws Exception {
    Properties extra = new Properties();
    switch (scenario) {
      case "produce-none": case "produce-gzip": case "produce-snappy": case "produce-lz4": case "produce-zstd": {
        extra.put("compression.type", codec);
        try (KafkaProducer<String, String> p = newProducer(extra)) {
          List<java.util.concurrent.Future<RecordMetadata>> fs = new ArrayList<>();
          for (int i = 0; i < 10; i++) fs.add(p.send(new ProducerRecord<>(topic, 0, "k" + i, payload(i))));
          for (var f : fs) f.get();
        }
        return;
      }
      case "keys-headers": {
        try (KafkaProducer<String, String> p = newProducer(extra)) {
          for (int i = 0; i < 3; i++) {
            ProducerRecord<String, String> r = new ProducerRecord<>(topic, 0, "ck" + i, "c" + i);
            r.headers().add("h", ("y" + i).getBytes(StandardCharsets.UTF_8));
            r.headers().add("trace", ("t" + i).getBytes(StandardCharsets.UTF_8));
            p.send(r).get();
          }
        }
        return;
      }
      case "transactions": {
        // Commit c0..c2, abort a0..a2, commit c3..c5 (VerifyTxn in scenarios.go).
        extra.put("transactional.id", topic + "-txn");
        try (KafkaProducer<String, String> p = newProducer(extra)) {
          p.initTransactions();
          String[] prefixes = {"c", "a", "c"};
          int[] from = {0, 0, 3};
          for (int t = 0; t < 3; t++) {
            p.beginTransaction();
            for (int i = from[t]; i < from[t] + 3; i++) p.send(new ProducerRecord<>(topic, 0, prefixes[t] + "k" + i, prefixes[t] + i));
            if (t == 1) {
              p.flush(); // abortTransaction drops what was not sent yet
              p.abortTransaction();
            } else {
              p.commitTransaction();
            }
          }
        }
        return;
      }
      case "exactly-once": {
        // Abort a transaction holding an "aborted" record and the group's offset 3, then read the
        // input in the group from its committed offset and write out-v<i> with the offsets.
        extra.put("transactional.id", topic + "-txn");
        Properties cx = new Properties();
        cx.put("isolation.level", "read_committed");
        try (KafkaProducer<String, String> p = newProducer(extra);
             KafkaConsumer<String, String> c = newConsumer("classic", group, cx)) {
          p.initTransactions();
          p.beginTransaction();
          p.send(new ProducerRecord<>(topic + "-out", 0, "k", "aborted"));
          p.sendOffsetsToTransaction(Map.of(new TopicPartition(topic, 0), new OffsetAndMetadata(3)), c.groupMetadata());
          p.flush();
          p.abortTransaction();
          c.subscribe(List.of(topic));
          int done = 0;
          long deadline = System.currentTimeMillis() + 30000;
          while (done < 10) {
            check(System.currentTimeMillis() < deadline, "transformed " + done + " of 10");
            ConsumerRecords<String, String> rs = c.poll(Duration.ofMillis(200));
            if (rs.isEmpty()) continue;
            p.beginTransaction();
            Map<TopicPartition, OffsetAndMetadata> offs = new HashMap<>();
            for (ConsumerRecord<String, String> r : rs) {
              p.send(new ProducerRecord<>(topic + "-out", 0, r.key(), "out-" + r.value()));
              offs.put(new TopicPartition(r.topic(), r.partition()), new OffsetAndMetadata(r.offset() + 1));
              done++;
            }
            p.sendOffsetsToTransaction(offs, c.groupMetadata());
            p.commitTransaction();
          }
        }
        return;
      }
      default:
        throw new NA("the producer only produces; scenario " + scenario + " is covered by the consumer and admin rows");
    }
  }

  static void consumer(String protocol) throws Exception {
    TopicPartition tp = new TopicPartition(topic, 0);
    switch (scenario) {
      case "consume-begin": case "consume-end": case "consume-ts": case "keys-headers": {
        try (KafkaConsumer<String, String> c = newConsumer(protocol, null, new Properties())) {
          c.assign(List.of(tp));
          if (scenario.equals("consume-end")) {
            c.seekToEnd(List.of(tp));
            ConsumerRecord<String, String> r = poll(c, 1).get(0);
            check(r.value().startsWith("tail-"), "first record from end is " + r.value());
            return;
          }
          int from = 0, n = scenario.equals("keys-headers") ? 3 : 10;
          if (scenario.equals("consume-ts")) {
            OffsetAndTimestamp ot = c.offsetsForTimes(Map.of(tp, tsBase + 5000)).get(tp);
            check(ot != null && ot.offset() == 5, "offsetsForTimes gave " + ot);
            c.seek(tp, ot.offset());
            from = 5;
            n = 5;
          } else {
            c.seekToBeginning(List.of(tp));
          }
          List<ConsumerRecord<String, String>> rs = poll(c, n);
          for (int i = 0; i < n; i++) {
            ConsumerRecord<String, String> r = rs.get(i);
            check(r.value().equals("v" + (from + i)), "record " + i + " is " + r.value());
            check(r.timestamp() == tsBase + (from + i) * 1000L, "record " + i + " timestamp " + r.timestamp());
            if (scenario.equals("keys-headers")) {
              check(r.key().equals("k" + i) && ("x" + i).equals(header(r, "h")) && ("s" + i).equals(header(r, "trace")),
                  "record " + i + " key " + r.key() + " headers " + r.headers());
            }
          }
        }
        return;
      }
      case "group": {
        try (KafkaConsumer<String, String> c = newConsumer(protocol, group, new Properties())) {
          c.subscribe(List.of(topic));
          List<ConsumerRecord<String, String>> rs = poll(c, 5);
          check(rs.get(0).value().equals("v0"), "first record " + rs.get(0).value());
          c.commitSync(Map.of(tp, new OffsetAndMetadata(5)));
        }
        try (KafkaConsumer<String, String> c = newConsumer(protocol, group, new Properties())) {
          c.subscribe(List.of(topic));
          ConsumerRecord<String, String> r = poll(c, 1).get(0);
          check(r.value().equals("v5"), "resumed at " + r.value() + ", want v5");
          c.commitSync();
        }
        return;
      }
      case "transactions": case "exactly-once":
        throw new NA("covered by the producer row (read_committed consume is part of it)");
      default:
        throw new NA("the consumer only consumes");
    }
  }

  static void admin() throws Exception {
    try (Admin ad = Admin.create(base())) {
      ConfigResource res = new ConfigResource(ConfigResource.Type.TOPIC, topic);
      switch (scenario) {
        case "admin": {
          ad.createTopics(List.of(new NewTopic(topic, 3, (short) 1).configs(Map.of("retention.ms", "86400000")))).all().get();
          check(ad.listTopics().names().get().contains(topic), "listTopics lacks " + topic);
          TopicDescription d = ad.describeTopics(List.of(topic)).allTopicNames().get().get(topic);
          check(d.partitions().size() == 3, "partitions " + d.partitions().size());
          ad.createPartitions(Map.of(topic, NewPartitions.increaseTo(5))).all().get();
          int nodes = Integer.parseInt(System.getenv().getOrDefault("MATRIX_NODES", "1"));
          check(ad.describeCluster().nodes().get().size() == nodes, "cluster nodes " + ad.describeCluster().nodes().get() + ", want " + nodes);
          ad.deleteTopics(List.of(topic)).all().get();
          return;
        }
        case "configs": {
          Config before = ad.describeConfigs(List.of(res)).all().get().get(res);
          check(before.get("retention.ms") != null, "retention.ms not described");
          ad.incrementalAlterConfigs(Map.of(res, List.of(new AlterConfigOp(new ConfigEntry("retention.ms", "3600000"), AlterConfigOp.OpType.SET)))).all().get();
          Config after = ad.describeConfigs(List.of(res)).all().get().get(res);
          check("3600000".equals(after.get("retention.ms").value()), "retention.ms after alter " + after.get("retention.ms"));
          ConfigResource broker = new ConfigResource(ConfigResource.Type.BROKER, ad.describeCluster().nodes().get().iterator().next().idString());
          ad.describeConfigs(List.of(broker)).all().get();
          return;
        }
        case "delete-records": {
          DeletedRecords dr = ad.deleteRecords(Map.of(new TopicPartition(topic, 0), RecordsToDelete.beforeOffset(5))).lowWatermarks().get(new TopicPartition(topic, 0)).get();
          check(dr.lowWatermark() == 5, "low watermark " + (dr == null ? -1 : dr.lowWatermark()));
          return;
        }
        case "group": {
          // The group row of the Admin client: commit offsets for a group, read them back, list it.
          TopicPartition tp = new TopicPartition(topic, 0);
          ad.alterConsumerGroupOffsets(group, Map.of(tp, new OffsetAndMetadata(5))).all().get();
          Map<TopicPartition, OffsetAndMetadata> o = ad.listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata().get();
          check(o.get(tp) != null && o.get(tp).offset() == 5, "committed " + o);
          boolean listed = ad.listGroups().all().get().stream().anyMatch(g -> g.groupId().equals(group));
          check(listed, "listGroups lacks " + group);
          return;
        }
        case "consume-ts": {
          TopicPartition tp = new TopicPartition(topic, 0);
          ListOffsetsResult.ListOffsetsResultInfo r = ad.listOffsets(Map.of(tp, OffsetSpec.forTimestamp(tsBase + 5000))).all().get().get(tp);
          check(r.offset() == 5, "listOffsets(ts) gave " + r.offset());
          ListOffsetsResult.ListOffsetsResultInfo m = ad.listOffsets(Map.of(tp, OffsetSpec.maxTimestamp())).all().get().get(tp);
          check(m.offset() == 9, "listOffsets(max timestamp) gave " + m.offset());
          return;
        }
        default:
          throw new NA("the Admin client does not produce or consume");
      }
    }
  }
}
