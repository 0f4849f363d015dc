// Two Java KafkaConsumers in one group, each on its own thread, with synchronous commits after
// every poll. usage: GroupCheck BOOTSTRAP TOPIC GROUP PROTOCOL PARTITIONS COUNT [static]
// PROTOCOL is "classic" (with the CooperativeStickyAssignor) or "consumer" (KIP-848, the
// broker assigns). Phases: A alone reads COUNT records; B joins and COUNT more are read by
// both; A leaves and COUNT more are read by B. With "static" the members have a
// group.instance.id and A instead restarts under the same instance id: the new A must get
// exactly A's partitions back while B keeps its own without a revocation. Every record must be
// read exactly once, and no partition may be owned by two members at once (tracked in the
// rebalance listeners). Prints "OK ..." and exits 0, or prints FAIL lines and exits 1.

import java.time.Duration;
import java.util.*;
import java.util.concurrent.*;
import java.util.concurrent.atomic.*;

import org.apache.kafka.clients.consumer.*;
import org.apache.kafka.clients.producer.*;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.RebalanceInProgressException;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

public class GroupCheck {
    static String bootstrap, topic, group, protocol;
    static int partitions, count;
    static final List<String> failures = Collections.synchronizedList(new ArrayList<>());
    static final Map<Integer, String> owner = new HashMap<>(); // guarded by owner
    static final List<String> events = Collections.synchronizedList(new ArrayList<>());
    static final ConcurrentHashMap<String, AtomicInteger> reads = new ConcurrentHashMap<>();
    static final long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(100);

    static void fail(String msg) {
        failures.add(msg);
        System.out.println("FAIL " + msg);
    }

    static class Member implements Runnable {
        final String name;
        final Set<Integer> owned = ConcurrentHashMap.newKeySet();
        final AtomicInteger read = new AtomicInteger();
        final AtomicInteger commitRetries = new AtomicInteger();
        boolean dirty; // records read whose commit was refused; only touched on this member's thread
        volatile boolean stop;
        final CountDownLatch done = new CountDownLatch(1);

        final String instanceId; // group.instance.id, or null for a dynamic member

        Member(String name, String instanceId) {
            this.name = name;
            this.instanceId = instanceId;
        }

        public void run() {
            Properties p = new Properties();
            p.put("bootstrap.servers", bootstrap);
            p.put("group.id", group);
            p.put("group.protocol", protocol);
            p.put("client.id", name);
            if (instanceId != null) {
                p.put("group.instance.id", instanceId);
            }
            p.put("enable.auto.commit", "false");
            p.put("auto.offset.reset", "earliest");
            p.put("key.deserializer", StringDeserializer.class.getName());
            p.put("value.deserializer", StringDeserializer.class.getName());
            if (protocol.equals("classic")) {
                p.put("partition.assignment.strategy", CooperativeStickyAssignor.class.getName());
                p.put("heartbeat.interval.ms", "300");
                p.put("session.timeout.ms", "10000");
            }
            try (KafkaConsumer<String, String> c = new KafkaConsumer<>(p)) {
                c.subscribe(List.of(topic), new ConsumerRebalanceListener() {
                    public void onPartitionsAssigned(Collection<TopicPartition> tps) {
                        synchronized (owner) {
                            events.add(name + " +" + parts(tps));
                            for (TopicPartition tp : tps) {
                                String prev = owner.get(tp.partition());
                                if (prev != null && !prev.equals(name)) {
                                    fail("partition " + tp.partition() + " assigned to " + name + " while " + prev + " owns it");
                                }
                                owner.put(tp.partition(), name);
                                owned.add(tp.partition());
                            }
                        }
                    }
                    public void onPartitionsRevoked(Collection<TopicPartition> tps) {
                        // A commit refused mid-rebalance is made before the partitions go.
                        if (dirty) {
                            c.commitSync();
                            dirty = false;
                        }
                        release(tps, "-");
                    }
                    public void onPartitionsLost(Collection<TopicPartition> tps) {
                        if (!tps.isEmpty()) fail(name + " lost " + parts(tps));
                        release(tps, "lost");
                    }
                    void release(Collection<TopicPartition> tps, String how) {
                        synchronized (owner) {
                            if (!tps.isEmpty()) events.add(name + " " + how + parts(tps));
                            for (TopicPartition tp : tps) {
                                if (name.equals(owner.get(tp.partition()))) owner.remove(tp.partition());
                                else fail(name + " released partition " + tp.partition() + " owned by " + owner.get(tp.partition()));
                                owned.remove(tp.partition());
                            }
                        }
                    }
                });
                while (!stop) {
                    ConsumerRecords<String, String> recs = c.poll(Duration.ofMillis(100));
                    for (ConsumerRecord<String, String> r : recs) {
                        synchronized (owner) {
                            if (!name.equals(owner.get(r.partition()))) {
                                fail(name + " got partition " + r.partition() + " offset " + r.offset() + " owned by " + owner.get(r.partition()));
                            }
                        }
                        reads.computeIfAbsent(r.value(), k -> new AtomicInteger()).incrementAndGet();
                        read.incrementAndGet();
                    }
                    if (!recs.isEmpty() || dirty) {
                        try {
                            c.commitSync();
                            dirty = false;
                        } catch (RebalanceInProgressException e) {
                            // Kafka refuses commits while the group completes a rebalance; the
                            // next poll or onPartitionsRevoked commits these records.
                            dirty = true;
                            commitRetries.incrementAndGet();
                        }
                    }
                }
            } catch (Exception e) {
                fail(name + " consumer: " + e);
            } finally {
                done.countDown();
            }
        }
    }

    static String parts(Collection<TopicPartition> tps) {
        List<Integer> ps = new ArrayList<>();
        for (TopicPartition tp : tps) ps.add(tp.partition());
        Collections.sort(ps);
        return ps.toString();
    }

    static void produce(String prefix) throws Exception {
        Properties p = new Properties();
        p.put("bootstrap.servers", bootstrap);
        p.put("key.serializer", StringSerializer.class.getName());
        p.put("value.serializer", StringSerializer.class.getName());
        p.put("linger.ms", "5");
        try (KafkaProducer<String, String> prod = new KafkaProducer<>(p)) {
            List<java.util.concurrent.Future<RecordMetadata>> fs = new ArrayList<>();
            for (int i = 0; i < count; i++) {
                String v = String.format("%s-%04d", prefix, i);
                // Explicit partitions spread the records evenly.
                fs.add(prod.send(new ProducerRecord<>(topic, i % partitions, v, v)));
            }
            for (java.util.concurrent.Future<RecordMetadata> f : fs) f.get(30, TimeUnit.SECONDS);
        }
    }

    interface Cond { boolean ok(); }

    static void await(String what, Cond cond) throws InterruptedException {
        while (!cond.ok()) {
            if (System.nanoTime() > deadline || !failures.isEmpty()) {
                synchronized (owner) {
                    System.out.println("FAIL timed out or failed while waiting for: " + what + "; owners " + owner + "; events " + events);
                }
                System.exit(1);
            }
            Thread.sleep(20); // polling a condition under the deadline above
        }
    }

    static boolean owns(Member m, Set<Integer> want) { return m.owned.equals(want); }

    public static void main(String[] args) throws Exception {
        bootstrap = args[0]; topic = args[1]; group = args[2]; protocol = args[3];
        partitions = Integer.parseInt(args[4]); count = Integer.parseInt(args[5]);
        Set<Integer> all = new HashSet<>();
        for (int i = 0; i < partitions; i++) all.add(i);

        boolean isStatic = args.length > 6 && args[6].equals("static");
        Member a = new Member("A", isStatic ? "instance-a" : null), b = new Member("B", isStatic ? "instance-b" : null);
        produce("one");
        new Thread(a).start();
        await("A reads phase one", () -> reads.size() >= count && owns(a, all));

        new Thread(b).start();
        await("B gets partitions from A", () -> !b.owned.isEmpty() && !a.owned.isEmpty()
                && a.owned.size() + b.owned.size() == partitions);
        produce("two");
        await("A and B read phase two", () -> reads.size() >= 2 * count);
        if (a.read.get() == 0 || b.read.get() == 0) fail("phase two not shared: A read " + a.read + ", B read " + b.read);

        Member last = b;
        if (isStatic) {
            Set<Integer> aOwned = new HashSet<>(a.owned), bOwned = new HashSet<>(b.owned);
            int mark = events.size();
            a.stop = true;
            a.done.await(60, TimeUnit.SECONDS);
            Member a2 = new Member("A2", "instance-a");
            new Thread(a2).start();
            await("A2 (instance-a again) gets A's partitions " + aOwned, () -> owns(a2, aOwned) && owns(b, bOwned));
            synchronized (owner) {
                for (String e : events.subList(mark, events.size())) {
                    if (e.startsWith("B ")) fail("B's partitions changed when the static member A restarted: " + e);
                }
            }
            produce("three");
            await("A2 and B read phase three", () -> reads.size() >= 3 * count);
            a2.stop = true;
            a2.done.await(60, TimeUnit.SECONDS);
        } else {
            a.stop = true;
            a.done.await(60, TimeUnit.SECONDS);
            await("B takes over A's partitions", () -> owns(b, all));
            produce("three");
            await("B reads phase three", () -> reads.size() >= 3 * count);
        }
        last.stop = true;
        last.done.await(60, TimeUnit.SECONDS);

        int dups = 0;
        for (Map.Entry<String, AtomicInteger> e : reads.entrySet()) {
            if (e.getValue().get() != 1) {
                dups++;
                if (dups <= 10) fail(e.getKey() + " read " + e.getValue() + " times");
            }
        }
        if (reads.size() != 3 * count) fail("read " + reads.size() + " distinct records, want " + (3 * count));
        if (!failures.isEmpty()) {
            System.out.println("events " + events);
            System.exit(1);
        }
        System.out.println("OK " + protocol + (isStatic ? " static" : "") + ": A read " + a.read + ", B read " + b.read + "; commits retried after a rebalance: A "
                + a.commitRetries + ", B " + b.commitRetries + "; events " + events);
        System.exit(0);
    }
}
