// WordCount is a Kafka Streams word count for sluice's compatibility matrix. Usage: WordCount
// BOOTSTRAP TOPIC APP_ID GUARANTEE. It counts the words of TOPIC's values (the harness seeds
// "v0".."v9") into TOPIC-counts, reads that topic until every word has count 1, and exits 0;
// it checks that the application's group committed offset 10.
import java.time.Duration;
import java.util.*;
import org.apache.kafka.clients.admin.*;
import org.apache.kafka.clients.consumer.*;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.*;
import org.apache.kafka.streams.*;
import org.apache.kafka.streams.kstream.*;

public class WordCount {
  public static void main(String[] a) throws Exception {
    String bootstrap = a[0], topic = a[1], appId = a[2], guarantee = a[3];
    String out = topic + "-counts";
    Properties ap = new Properties();
    ap.put("bootstrap.servers", bootstrap);
    // Replication factor 3 on the matrix's three-node cluster (min.insync.replicas 2 there would
    // refuse acks=all writes to a single replica with NOT_ENOUGH_REPLICAS, as Kafka does).
    short rf = (short) Math.min(3, Integer.parseInt(System.getenv().getOrDefault("MATRIX_NODES", "1")));
    try (Admin ad = Admin.create(ap)) {
      ad.createTopics(List.of(new NewTopic(out, 1, rf))).all().get();
    }
    Properties p = new Properties();
    p.put(StreamsConfig.APPLICATION_ID_CONFIG, appId);
    p.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
    p.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, guarantee);
    p.put(StreamsConfig.REPLICATION_FACTOR_CONFIG, (int) rf);
    p.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, 200);
    p.put(StreamsConfig.STATE_DIR_CONFIG, System.getProperty("user.dir") + "/state");
    p.put(StreamsConfig.DEFAULT_KEY_SERDE_CLASS_CONFIG, Serdes.String().getClass());
    p.put(StreamsConfig.DEFAULT_VALUE_SERDE_CLASS_CONFIG, Serdes.String().getClass());
    p.put(StreamsConfig.consumerPrefix(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG), "earliest");
    StreamsBuilder b = new StreamsBuilder();
    b.<String, String>stream(topic)
        .flatMapValues(v -> Arrays.asList(v.toLowerCase().split("\\W+")))
        .groupBy((k, w) -> w)
        .count()
        .toStream()
        .to(out, Produced.with(Serdes.String(), Serdes.Long()));
    KafkaStreams streams = new KafkaStreams(b.build(), p);
    streams.setUncaughtExceptionHandler(e -> {
      e.printStackTrace();
      return org.apache.kafka.streams.errors.StreamsUncaughtExceptionHandler.StreamThreadExceptionResponse.SHUTDOWN_CLIENT;
    });
    streams.start();
    Properties cp = new Properties();
    cp.put("bootstrap.servers", bootstrap);
    cp.put("isolation.level", "read_committed");
    Map<String, Long> counts = new HashMap<>();
    try (KafkaConsumer<String, Long> c = new KafkaConsumer<>(cp, new StringDeserializer(), new LongDeserializer())) {
      TopicPartition tp = new TopicPartition(out, 0);
      c.assign(List.of(tp));
      c.seekToBeginning(List.of(tp));
      long deadline = System.currentTimeMillis() + 90000;
      while (counts.size() < 10) {
        if (System.currentTimeMillis() > deadline || streams.state() == KafkaStreams.State.ERROR || streams.state() == KafkaStreams.State.NOT_RUNNING) {
          throw new IllegalStateException("counts after deadline or stream failure (" + streams.state() + "): " + counts);
        }
        for (ConsumerRecord<String, Long> r : c.poll(Duration.ofMillis(200))) counts.put(r.key(), r.value());
      }
    }
    for (int i = 0; i < 10; i++) {
      if (!Long.valueOf(1).equals(counts.get("v" + i))) throw new IllegalStateException("count of v" + i + " is " + counts.get("v" + i));
    }
    System.out.println("counts: " + counts);
    try (Admin ad = Admin.create(ap)) {
      long deadline = System.currentTimeMillis() + 30000;
      while (true) {
        OffsetAndMetadata o = ad.listConsumerGroupOffsets(appId).partitionsToOffsetAndMetadata().get().get(new TopicPartition(topic, 0));
        if (o != null && o.offset() == 10) break;
        if (System.currentTimeMillis() > deadline) throw new IllegalStateException("group " + appId + " committed " + o);
        Thread.sleep(200);
      }
    }
    streams.close(Duration.ofSeconds(20));
    System.exit(0);
  }
}
