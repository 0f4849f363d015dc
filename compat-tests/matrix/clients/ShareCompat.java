// ShareCompat drives the share scenario (KIP-932) of sluice's compatibility matrix with Apache
// Kafka's KafkaShareConsumer. Usage: ShareCompat BOOTSTRAP TOPIC GROUP. Two consumers of GROUP
// (explicit acknowledgement) read the ten seeded records k0..k9=v0..v9: v3 is RELEASEd on its
// first delivery and ACCEPTed when it comes back, v7 REJECTed, the others ACCEPTed, each poll's
// acknowledgements committed with commitSync. Every delivery is printed as
// "SHARE <consumer> <offset> <value> <delivery count> <accept|release|reject>"; the harness
// (compat-tests/matrix/share.go) checks that ledger. Both stop once every record reached its
// final acknowledgement, or after 60 s. Exit 0 when both consumers ran without error.
import java.time.Duration;
import java.util.*;
import java.util.concurrent.*;
import java.util.concurrent.atomic.*;
import org.apache.kafka.clients.consumer.*;
import org.apache.kafka.common.serialization.StringDeserializer;

public class ShareCompat {
  static final int SEEDED = 10;
  static final long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
  static final Set<String> done = ConcurrentHashMap.newKeySet(); // values with a final ack
  static final List<String> failures = Collections.synchronizedList(new ArrayList<>());

  static String ack(String value, int delivery) {
    if (value.equals("v3") && delivery <= 1) return "release";
    if (value.equals("v7")) return "reject";
    return "accept";
  }

  public static void main(String[] a) throws Exception {
    String bootstrap = a[0], topic = a[1], group = a[2];
    List<Thread> threads = new ArrayList<>();
    for (String name : List.of("c1", "c2")) {
      Thread th = new Thread(() -> {
        Properties p = new Properties();
        p.put("bootstrap.servers", bootstrap);
        p.put("group.id", group);
        p.put("client.id", name);
        p.put("share.acknowledgement.mode", "explicit");
        p.put("key.deserializer", StringDeserializer.class.getName());
        p.put("value.deserializer", StringDeserializer.class.getName());
        try (KafkaShareConsumer<String, String> c = new KafkaShareConsumer<>(p)) {
          c.subscribe(List.of(topic));
          while (done.size() < SEEDED && System.nanoTime() < deadline && failures.isEmpty()) {
            ConsumerRecords<String, String> recs = c.poll(Duration.ofMillis(200));
            for (ConsumerRecord<String, String> r : recs) {
              int n = r.deliveryCount().orElse((short) -1);
              String how = ack(r.value(), n);
              c.acknowledge(r, switch (how) {
                case "release" -> AcknowledgeType.RELEASE;
                case "reject" -> AcknowledgeType.REJECT;
                default -> AcknowledgeType.ACCEPT;
              });
              synchronized (System.out) {
                System.out.println("SHARE " + name + " " + r.offset() + " " + r.value() + " " + n + " " + how);
              }
              if (!how.equals("release")) done.add(r.value());
            }
            if (!recs.isEmpty()) {
              c.commitSync().forEach((tp, err) -> err.ifPresent(e -> failures.add(name + " commitSync " + tp + ": " + e)));
            }
          }
        } catch (Exception e) {
          failures.add(name + ": " + e);
        }
      });
      th.start();
      threads.add(th);
    }
    for (Thread th : threads) th.join();
    if (done.size() < SEEDED) failures.add("final acknowledgements for " + done.size() + " of " + SEEDED + " records before the deadline");
    for (String f : failures) System.out.println("FAIL " + f);
    System.out.flush();
    System.exit(failures.isEmpty() ? 0 : 1);
  }
}
