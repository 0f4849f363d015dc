// Kafka's Java KafkaShareConsumer (KIP-932 share groups) against a broker.
// usage: ShareCheck MODE BOOTSTRAP TOPIC GROUP ARGS...
//
//   share COUNT        three consumers in one share group (two acknowledging explicitly, one
//                      implicitly) read COUNT records from a one-partition topic: every record
//                      must reach exactly one of them, once.
//   release COUNT LIMIT one consumer RELEASEs the even records every time and REJECTs the odd
//                      ones: an even record must be delivered LIMIT times (delivery counts 1 to
//                      LIMIT, share.delivery.count.limit) and then never again, an odd one once.
//   hold COUNT         a consumer (implicit acknowledgement) acquires records, prints
//                      "HELD offset,offset,..." and then blocks without acknowledging, to be
//                      killed.
//   take OFFSETS       a consumer must receive every offset in OFFSETS again with a delivery
//                      count of at least 2 (redelivered after the dead holder's locks timed out).
//   txn COUNT          a transactional producer commits COUNT transactions ("c-<i>") and aborts
//                      COUNT ("a-<i>"), interleaved, then commits "end"; one consumer of a group
//                      whose share.isolation.level is read_committed and share.auto.offset.reset
//                      earliest (set by the Go test) must receive every committed record once
//                      and no aborted one.
//
// The share partition starts at the latest offset when the group first fetches it
// (share.auto.offset.reset=latest), so each mode first produces marker records until a consumer
// has seen one; only the records produced after that count. Prints "OK ..." and exits 0, or
// prints FAIL lines and exits 1.

import java.time.Duration;
import java.util.*;
import java.util.concurrent.*;
import java.util.concurrent.atomic.*;

import org.apache.kafka.clients.consumer.*;
import org.apache.kafka.clients.producer.*;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

public class ShareCheck {
    static String bootstrap, topic, group;
    static final long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(90);
    static final List<String> failures = Collections.synchronizedList(new ArrayList<>());
    static final AtomicBoolean markerSeen = new AtomicBoolean();

    static void fail(String msg) {
        failures.add(msg);
        System.out.println("FAIL " + msg);
    }

    static boolean late() {
        return System.nanoTime() > deadline;
    }

    static KafkaProducer<String, String> producer() {
        Properties p = new Properties();
        p.put("bootstrap.servers", bootstrap);
        p.put("key.serializer", StringSerializer.class.getName());
        p.put("value.serializer", StringSerializer.class.getName());
        p.put("linger.ms", "0");
        return new KafkaProducer<>(p);
    }

    static KafkaShareConsumer<String, String> consumer(String name, String ackMode) {
        Properties p = new Properties();
        p.put("bootstrap.servers", bootstrap);
        p.put("group.id", group);
        p.put("client.id", name);
        p.put("share.acknowledgement.mode", ackMode);
        p.put("max.poll.records", "20");
        p.put("key.deserializer", StringDeserializer.class.getName());
        p.put("value.deserializer", StringDeserializer.class.getName());
        KafkaShareConsumer<String, String> c = new KafkaShareConsumer<>(p);
        c.subscribe(List.of(topic));
        return c;
    }

    // produceAfterMarker sends markers until a consumer has seen one, then the records.
    static void produceAfterMarker(List<String> values) throws Exception {
        try (KafkaProducer<String, String> prod = producer()) {
            while (!markerSeen.get()) {
                if (late()) {
                    fail("no consumer ever saw a marker record");
                    return;
                }
                prod.send(new ProducerRecord<>(topic, "marker")).get();
                Thread.sleep(200); // pacing of markers only; the wait is on markerSeen
            }
            for (String v : values) {
                prod.send(new ProducerRecord<>(topic, v));
            }
            prod.flush();
        }
    }

    static List<String> values(int count) {
        List<String> out = new ArrayList<>();
        for (int i = 0; i < count; i++) {
            out.add("r-" + i);
        }
        return out;
    }

    public static void main(String[] args) throws Exception {
        String mode = args[0];
        bootstrap = args[1];
        topic = args[2];
        group = args[3];
        switch (mode) {
            case "share" -> share(Integer.parseInt(args[4]));
            case "release" -> release(Integer.parseInt(args[4]), Integer.parseInt(args[5]));
            case "hold" -> hold(Integer.parseInt(args[4]));
            case "take" -> take(args[4]);
            case "txn" -> txn(Integer.parseInt(args[4]));
            default -> fail("unknown mode " + mode);
        }
        if (!failures.isEmpty()) {
            System.exit(1);
        }
        System.exit(0);
    }

    // share: three consumers, one ledger of who got which record.
    static void share(int count) throws Exception {
        ConcurrentHashMap<String, String> ledger = new ConcurrentHashMap<>(); // value -> consumer
        ConcurrentHashMap<String, AtomicInteger> perConsumer = new ConcurrentHashMap<>();
        AtomicBoolean stop = new AtomicBoolean();
        String[][] members = {{"c1", "explicit"}, {"c2", "implicit"}, {"c3", "explicit"}};
        List<Thread> threads = new ArrayList<>();
        for (String[] m : members) {
            String name = m[0], ackMode = m[1];
            perConsumer.put(name, new AtomicInteger());
            Thread th = new Thread(() -> {
                try (KafkaShareConsumer<String, String> c = consumer(name, ackMode)) {
                    while (!stop.get() && !late()) {
                        ConsumerRecords<String, String> recs = c.poll(Duration.ofMillis(200));
                        for (ConsumerRecord<String, String> r : recs) {
                            if (r.value().equals("marker")) {
                                markerSeen.set(true);
                            } else {
                                String prev = ledger.putIfAbsent(r.value(), name);
                                if (prev != null) {
                                    fail(r.value() + " (offset " + r.offset() + ") delivered to " + prev + " and to " + name);
                                }
                                perConsumer.get(name).incrementAndGet();
                            }
                            if (ackMode.equals("explicit")) {
                                c.acknowledge(r, AcknowledgeType.ACCEPT);
                            }
                        }
                        if (ackMode.equals("explicit") && !recs.isEmpty()) {
                            c.commitSync().forEach((tp, err) -> err.ifPresent(e -> fail(name + " commit " + tp + ": " + e)));
                        }
                    }
                } catch (Exception e) {
                    fail(name + ": " + e);
                }
            });
            th.start();
            threads.add(th);
        }
        produceAfterMarker(values(count));
        while (ledger.size() < count && !late() && failures.isEmpty()) {
            Thread.sleep(50); // polling the ledger; the consumers have their own deadline
        }
        stop.set(true);
        for (Thread th : threads) {
            th.join(TimeUnit.SECONDS.toMillis(30));
        }
        if (ledger.size() != count) {
            fail("delivered " + ledger.size() + " of " + count + " records");
        }
        if (failures.isEmpty()) {
            System.out.println("OK delivered=" + ledger.size() + " c1=" + perConsumer.get("c1") + " c2=" + perConsumer.get("c2") + " c3=" + perConsumer.get("c3"));
        }
    }

    // release: even records released every time until archived, odd records rejected.
    static void release(int count, int limit) throws Exception {
        Map<String, List<Short>> deliveries = new HashMap<>();
        Thread producer = new Thread(() -> {
            try {
                produceAfterMarker(values(count));
            } catch (Exception e) {
                fail("producer: " + e);
            }
        });
        producer.start();
        try (KafkaShareConsumer<String, String> c = consumer("releaser", "explicit")) {
            int quietPolls = 0;
            while (!late() && failures.isEmpty()) {
                ConsumerRecords<String, String> recs = c.poll(Duration.ofMillis(300));
                for (ConsumerRecord<String, String> r : recs) {
                    if (r.value().equals("marker")) {
                        markerSeen.set(true);
                        c.acknowledge(r, AcknowledgeType.ACCEPT);
                        continue;
                    }
                    short n = r.deliveryCount().orElse((short) -1);
                    deliveries.computeIfAbsent(r.value(), k -> new ArrayList<>()).add(n);
                    int i = Integer.parseInt(r.value().substring(2));
                    c.acknowledge(r, i % 2 == 0 ? AcknowledgeType.RELEASE : AcknowledgeType.REJECT);
                }
                if (!recs.isEmpty()) {
                    c.commitSync().forEach((tp, err) -> err.ifPresent(e -> fail("commit " + tp + ": " + e)));
                }
                boolean complete = deliveries.size() == count;
                for (Map.Entry<String, List<Short>> e : deliveries.entrySet()) {
                    int i = Integer.parseInt(e.getKey().substring(2));
                    complete = complete && e.getValue().size() >= (i % 2 == 0 ? limit : 1);
                }
                // Once every record reached its last delivery, a few more polls must bring none
                // of them back.
                if (complete && recs.isEmpty() && ++quietPolls == 3) {
                    break;
                }
            }
        }
        producer.join();
        for (int i = 0; i < count; i++) {
            List<Short> got = deliveries.getOrDefault("r-" + i, List.of());
            List<Short> want = new ArrayList<>();
            for (int d = 1; d <= (i % 2 == 0 ? limit : 1); d++) {
                want.add((short) d);
            }
            if (!got.equals(want)) {
                fail("r-" + i + " delivery counts " + got + ", want " + want);
            }
        }
        if (failures.isEmpty()) {
            System.out.println("OK released=" + (count + 1) / 2 + "x" + limit + " rejected=" + count / 2);
        }
    }

    // hold: acquire records and die holding them.
    static void hold(int count) throws Exception {
        Thread producer = new Thread(() -> {
            try {
                produceAfterMarker(values(count));
            } catch (Exception e) {
                fail("producer: " + e);
            }
        });
        producer.start();
        KafkaShareConsumer<String, String> c = consumer("holder", "implicit");
        while (!late()) {
            ConsumerRecords<String, String> recs = c.poll(Duration.ofMillis(200));
            List<Long> held = new ArrayList<>();
            for (ConsumerRecord<String, String> r : recs) {
                if (r.value().equals("marker")) {
                    markerSeen.set(true);
                } else {
                    held.add(r.offset());
                }
            }
            if (!held.isEmpty()) {
                producer.join();
                StringBuilder sb = new StringBuilder();
                for (long o : held) {
                    sb.append(sb.length() == 0 ? "" : ",").append(o);
                }
                System.out.println("HELD " + sb);
                System.out.flush();
                new CountDownLatch(1).await(); // until killed: the records stay acquired
            }
        }
        fail("no records acquired");
    }

    // take: the dead holder's records come back.
    static void take(String offsets) throws Exception {
        Set<Long> want = new TreeSet<>();
        for (String o : offsets.split(",")) {
            want.add(Long.parseLong(o));
        }
        Map<Long, Short> got = new TreeMap<>();
        try (KafkaShareConsumer<String, String> c = consumer("taker", "explicit")) {
            while (!late() && !got.keySet().containsAll(want)) {
                ConsumerRecords<String, String> recs = c.poll(Duration.ofMillis(200));
                for (ConsumerRecord<String, String> r : recs) {
                    if (want.contains(r.offset())) {
                        got.put(r.offset(), r.deliveryCount().orElse((short) -1));
                    }
                    c.acknowledge(r, AcknowledgeType.ACCEPT);
                }
                if (!recs.isEmpty()) {
                    c.commitSync().forEach((tp, err) -> err.ifPresent(e -> fail("commit " + tp + ": " + e)));
                }
            }
        }
        if (!got.keySet().containsAll(want)) {
            fail("redelivered " + got.keySet() + ", want " + want);
        }
        got.forEach((o, n) -> {
            if (n < 2) {
                fail("offset " + o + " delivery count " + n + ", want at least 2");
            }
        });
        if (failures.isEmpty()) {
            System.out.println("OK redelivered=" + got);
        }
    }

    // txn: committed and aborted transactions, one read_committed share consumer.
    static void txn(int count) throws Exception {
        Properties p = new Properties();
        p.put("bootstrap.servers", bootstrap);
        p.put("key.serializer", StringSerializer.class.getName());
        p.put("value.serializer", StringSerializer.class.getName());
        p.put("transactional.id", "share-check-txn");
        try (KafkaProducer<String, String> prod = new KafkaProducer<>(p)) {
            prod.initTransactions();
            for (int i = 0; i < count; i++) {
                prod.beginTransaction();
                prod.send(new ProducerRecord<>(topic, "c-" + i));
                prod.commitTransaction();
                prod.beginTransaction();
                prod.send(new ProducerRecord<>(topic, "a-" + i));
                prod.flush();
                prod.abortTransaction();
            }
            prod.beginTransaction();
            prod.send(new ProducerRecord<>(topic, "end"));
            prod.commitTransaction();
        }
        Set<String> seen = new HashSet<>();
        boolean end = false;
        try (KafkaShareConsumer<String, String> c = consumer("t1", "implicit")) {
            while (!end && !late()) {
                for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(200))) {
                    if (r.value().equals("end")) {
                        end = true;
                    } else if (r.value().startsWith("a-")) {
                        fail("aborted record " + r.value() + " (offset " + r.offset() + ") delivered");
                    } else if (!seen.add(r.value())) {
                        fail(r.value() + " (offset " + r.offset() + ") delivered twice");
                    }
                }
            }
        }
        if (!end) {
            fail("the last committed record never arrived; got " + seen.size() + " committed records");
        }
        if (seen.size() != count) {
            fail("got " + seen.size() + " committed records, want " + count);
        }
        if (failures.isEmpty()) {
            System.out.println("OK committed=" + seen.size() + " aborted=0");
        }
    }
}
