// SecureCompat is the matrix's security cell for Apache Kafka's Java clients.
// Usage: SecureCompat ROLE BOOTSTRAP TOPIC GROUP CLIENT_PROPERTIES, ROLE one of producer (idempotent;
// produces ck<i>=c<i>, i < 5, then reads them back with a consumer), consumer-classic and
// consumer-848 (read the five records, which the harness produced, in a group of that
// protocol, group GROUP, and commit), admin (creates TOPIC-admin with 2 partitions, lists topics, describes
// the cluster). Every client gets the security settings from CLIENT_PROPERTIES. Prints the
// records read as "key:value" lines. Exit 0: pass; anything else: fail.
import java.io.FileReader;
import java.time.Duration;
import java.util.*;
import org.apache.kafka.clients.admin.*;
import org.apache.kafka.clients.consumer.*;
import org.apache.kafka.clients.producer.*;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.*;

public class SecureCompat {
  static final int N = 5;
  static String group;

  public static void main(String[] a) throws Exception {
    String role = a[0], bootstrap = a[1], topic = a[2];
    group = a[3];
    Properties base = new Properties();
    try (FileReader r = new FileReader(a[4])) { base.load(r); }
    base.put("bootstrap.servers", bootstrap);
    switch (role) {
      case "producer": {
        Properties p = new Properties();
        p.putAll(base);
        p.put("enable.idempotence", "true");
        p.put("acks", "all");
        p.put("delivery.timeout.ms", "30000");
        p.put("request.timeout.ms", "20000");
        p.put("max.block.ms", "20000");
        try (KafkaProducer<String, String> pr = new KafkaProducer<>(p, new StringSerializer(), new StringSerializer())) {
          for (int i = 0; i < N; i++) pr.send(new ProducerRecord<>(topic, 0, "ck" + i, "c" + i)).get();
        }
        try (KafkaConsumer<String, String> c = consumer(base, null)) {
          c.assign(List.of(new TopicPartition(topic, 0)));
          c.seekToBeginning(List.of(new TopicPartition(topic, 0)));
          print(poll(c));
        }
        break;
      }
      case "consumer-classic": case "consumer-848": {
        String protocol = role.equals("consumer-classic") ? "classic" : "consumer";
        try (KafkaConsumer<String, String> c = consumer(base, protocol)) {
          c.subscribe(List.of(topic));
          List<ConsumerRecord<String, String>> got = poll(c);
          c.commitSync();
          print(got);
        }
        break;
      }
      case "admin": {
        try (Admin ad = Admin.create(base)) {
          ad.createTopics(List.of(new NewTopic(topic + "-admin", 2, (short) -1))).all().get();
          Set<String> names = ad.listTopics().names().get();
          if (!names.contains(topic + "-admin")) throw new IllegalStateException("listTopics lacks " + topic + "-admin: " + names);
          System.out.println("cluster " + ad.describeCluster().clusterId().get() + ", nodes " + ad.describeCluster().nodes().get().size());
        }
        break;
      }
      default: throw new IllegalArgumentException(role);
    }
    System.exit(0);
  }

  static KafkaConsumer<String, String> consumer(Properties base, String protocol) {
    Properties p = new Properties();
    p.putAll(base);
    if (protocol != null) {
      p.put("group.id", group);
      p.put("group.protocol", protocol);
    }
    p.put("enable.auto.commit", "false");
    p.put("auto.offset.reset", "earliest");
    return new KafkaConsumer<>(p, new StringDeserializer(), new StringDeserializer());
  }

  static List<ConsumerRecord<String, String>> poll(KafkaConsumer<String, String> c) {
    List<ConsumerRecord<String, String>> out = new ArrayList<>();
    long deadline = System.currentTimeMillis() + 30000;
    while (out.size() < N) {
      if (System.currentTimeMillis() > deadline) throw new IllegalStateException("got " + out.size() + " of " + N + " records");
      for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(200))) out.add(r);
    }
    return out;
  }

  static void print(List<ConsumerRecord<String, String>> rs) {
    for (ConsumerRecord<String, String> r : rs) System.out.println(r.key() + ":" + r.value());
  }
}
