package sluice.compat;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

import org.apache.kafka.clients.consumer.ConsumerGroupMetadata;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.header.Header;
import org.springframework.boot.SpringApplication;
import org.springframework.boot.autoconfigure.SpringBootApplication;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.kafka.annotation.KafkaListener;
import org.springframework.kafka.config.TopicBuilder;
import org.springframework.kafka.config.KafkaListenerEndpointRegistry;
import org.springframework.kafka.core.KafkaAdmin;
import org.springframework.kafka.core.KafkaTemplate;
import org.springframework.kafka.listener.ConsumerSeekAware;
import org.springframework.kafka.listener.MessageListenerContainer;
import org.springframework.kafka.support.Acknowledgment;
import org.springframework.stereotype.Component;

/**
 * One scenario of sluice's compatibility matrix with Spring for Apache Kafka: a Spring Boot app
 * whose KafkaTemplate produces and whose @KafkaListener (started on demand) consumes, configured
 * by Boot's spring.kafka.* properties.
 *
 * <p>Usage: SpringCompat SCENARIO BOOTSTRAP TOPIC GROUP TS_BASE CODEC. Exit 0: pass; 3: n/a with
 * the reason on the last stdout line; anything else: fail. Conventions: compat-tests/matrix/doc.go.
 */
@SpringBootApplication
public class SpringCompat {
    static String scenario, topic, group, codec;
    static long tsBase;

    public static void main(String[] args) throws Exception {
        scenario = args[0];
        topic = args[2];
        group = args[3];
        tsBase = Long.parseLong(args[4]);
        codec = args[5];
        if (scenario.equals("delete-records")) {
            na("Spring's KafkaAdmin has no delete-records operation (an app would use Kafka's Admin client directly)");
        }
        List<String> props = new ArrayList<>(List.of(
                "--spring.main.banner-mode=off",
                "--spring.main.web-application-type=none",
                "--logging.level.root=WARN",
                "--spring.kafka.bootstrap-servers=" + args[1],
                "--spring.kafka.consumer.group-id=" + group,
                "--spring.kafka.consumer.auto-offset-reset=earliest",
                "--spring.kafka.consumer.enable-auto-commit=false",
                "--compat.topic=" + topic,
                "--compat.group=" + group));
        if (scenario.startsWith("produce-")) {
            props.add("--spring.kafka.producer.compression-type=" + codec);
            props.add("--spring.kafka.producer.properties.linger.ms=50");
        }
        // The listener acknowledges (commits) in group only after its fifth record; in
        // exactly-once it acknowledges each record, which sends the offset to the container's
        // transaction.
        props.add("--spring.kafka.listener.ack-mode=manual_immediate");
        if (scenario.equals("transactions") || scenario.equals("exactly-once")) {
            // Boot then makes the template transactional and gives the listener container a
            // KafkaTransactionManager: consumed offsets are committed in the producer's transaction.
            props.add("--spring.kafka.producer.transaction-id-prefix=" + topic + "-txn");
            props.add("--spring.kafka.consumer.isolation-level=read_committed");
        }
        ConfigurableApplicationContext ctx = SpringApplication.run(SpringCompat.class, props.toArray(new String[0]));
        int code = 0;
        try {
            ctx.getBean(Scenarios.class).run();
        } catch (Throwable t) {
            t.printStackTrace();
            code = 1;
        }
        SpringApplication.exit(ctx);
        System.exit(code);
    }

    static void na(String reason) {
        System.out.println(reason);
        System.exit(3);
    }

    static void check(boolean cond, String msg) {
        if (!cond) {
            throw new AssertionError(msg);
        }
    }

    static String payload(int i) {
        return "v" + i + "-" + "x".repeat(100);
    }

    /** The listener: queues what it receives; in exactly-once it transforms inside the container's transaction. */
    @Component
    public static class Listener implements ConsumerSeekAware {
        final BlockingQueue<ConsumerRecord<String, String>> got = new LinkedBlockingQueue<>();
        final KafkaTemplate<String, String> template;

        public Listener(KafkaTemplate<String, String> template) {
            this.template = template;
        }

        @KafkaListener(id = "compat", topics = "${compat.topic}", groupId = "${compat.group}", autoStartup = "false")
        public void listen(ConsumerRecord<String, String> r, Acknowledgment ack) {
            if (scenario.equals("exactly-once")) {
                template.send(topic + "-out", 0, r.key(), "out-" + r.value());
                ack.acknowledge();
            }
            if (scenario.equals("group") && r.offset() == 4) {
                ack.acknowledge(); // commits offset 5
            }
            got.add(r);
        }

        @Override
        public void onPartitionsAssigned(Map<TopicPartition, Long> assignments, ConsumerSeekCallback callback) {
            switch (scenario) {
                case "consume-begin", "keys-headers" -> callback.seekToBeginning(assignments.keySet());
                case "consume-end" -> callback.seekToEnd(assignments.keySet());
                case "consume-ts" -> callback.seekToTimestamp(assignments.keySet(), tsBase + 5000);
                default -> { }
            }
        }

        List<ConsumerRecord<String, String>> take(int n) throws InterruptedException {
            List<ConsumerRecord<String, String>> out = new ArrayList<>();
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
            while (out.size() < n) {
                long left = deadline - System.nanoTime();
                check(left > 0, "got " + out.size() + " of " + n + " records");
                ConsumerRecord<String, String> r = got.poll(left, TimeUnit.NANOSECONDS);
                if (r != null) {
                    out.add(r);
                }
            }
            return out;
        }
    }

    @Component
    public static class Scenarios {
        final KafkaTemplate<String, String> template;
        final KafkaAdmin admin;
        final Listener listener;
        final KafkaListenerEndpointRegistry registry;

        public Scenarios(KafkaTemplate<String, String> template, KafkaAdmin admin, Listener listener, KafkaListenerEndpointRegistry registry) {
            this.template = template;
            this.admin = admin;
            this.listener = listener;
            this.registry = registry;
        }

        MessageListenerContainer container() {
            return registry.getListenerContainer("compat");
        }

        List<String> values(List<ConsumerRecord<String, String>> rs) {
            return rs.stream().map(ConsumerRecord::value).toList();
        }

        List<String> seeded(int from, int to) {
            List<String> out = new ArrayList<>();
            for (int i = from; i < to; i++) {
                out.add("v" + i);
            }
            return out;
        }

        void run() throws Exception {
            switch (scenario) {
                case "admin" -> {
                    admin.createOrModifyTopics(TopicBuilder.name(topic).partitions(3).replicas(1).config("retention.ms", "86400000").build());
                    check(admin.describeTopics(topic).get(topic).partitions().size() == 3, "not 3 partitions");
                    admin.createOrModifyTopics(TopicBuilder.name(topic).partitions(5).replicas(1).build());
                    check(admin.describeTopics(topic).get(topic).partitions().size() == 5, "not 5 partitions after increase");
                    admin.deleteTopics(topic);
                }
                case "produce-none", "produce-gzip", "produce-snappy", "produce-lz4", "produce-zstd" -> {
                    List<java.util.concurrent.CompletableFuture<?>> sent = new ArrayList<>();
                    for (int i = 0; i < 10; i++) {
                        sent.add(template.send(topic, 0, "k" + i, payload(i)));
                    }
                    template.flush();
                    for (var f : sent) {
                        f.get(30, TimeUnit.SECONDS);
                    }
                }
                case "consume-begin" -> {
                    container().start();
                    check(values(listener.take(10)).equals(seeded(0, 10)), "records are not v0..v9");
                }
                case "consume-end" -> {
                    container().start();
                    String v = listener.take(1).get(0).value();
                    check(v.startsWith("tail-"), "first record from end is " + v);
                }
                case "consume-ts" -> {
                    container().start();
                    check(values(listener.take(5)).equals(seeded(5, 10)), "records are not v5..v9");
                }
                case "keys-headers" -> {
                    for (int i = 0; i < 3; i++) {
                        ProducerRecord<String, String> r = new ProducerRecord<>(topic, 0, "ck" + i, "c" + i);
                        r.headers().add("h", ("y" + i).getBytes(StandardCharsets.UTF_8));
                        r.headers().add("trace", ("t" + i).getBytes(StandardCharsets.UTF_8));
                        template.send(r).get(30, TimeUnit.SECONDS);
                    }
                    container().start();
                    List<ConsumerRecord<String, String>> rs = listener.take(3);
                    for (int i = 0; i < 3; i++) {
                        StringBuilder got = new StringBuilder(rs.get(i).key());
                        for (Header h : rs.get(i).headers()) {
                            got.append(' ').append(h.key()).append('=').append(new String(h.value(), StandardCharsets.UTF_8));
                        }
                        String want = "k" + i + " h=x" + i + " trace=s" + i;
                        check(got.toString().equals(want), "record " + i + " is " + got + ", want " + want);
                    }
                }
                case "group" -> {
                    container().start();
                    List<ConsumerRecord<String, String>> rs = listener.take(5);
                    check(rs.get(0).value().equals("v0"), "first record " + rs.get(0).value());
                    container().stop();
                    listener.got.clear();
                    container().start();
                    String v = listener.take(1).get(0).value();
                    check(v.equals("v5"), "resumed at " + v + ", want v5");
                    container().stop();
                }
                case "configs" -> {
                    // KafkaAdmin describes the existing topic's configs and alters the ones that differ.
                    admin.setModifyTopicConfigs(true);
                    admin.createOrModifyTopics(TopicBuilder.name(topic).partitions(1).config("retention.ms", "3600000").build());
                }
                case "transactions" -> {
                    // Commit c0..c2, abort a0..a2, commit c3..c5 (VerifyTxn in scenarios.go).
                    template.executeInTransaction(t -> {
                        for (int i = 0; i < 3; i++) {
                            t.send(topic, 0, "ck" + i, "c" + i);
                        }
                        return null;
                    });
                    try {
                        template.executeInTransaction(t -> {
                            for (int i = 0; i < 3; i++) {
                                t.send(topic, 0, "ak" + i, "a" + i);
                            }
                            t.flush();
                            throw new Abort();
                        });
                        check(false, "the aborting transaction did not throw");
                    } catch (Abort expected) {
                    }
                    template.executeInTransaction(t -> {
                        for (int i = 3; i < 6; i++) {
                            t.send(topic, 0, "ck" + i, "c" + i);
                        }
                        return null;
                    });
                }
                case "exactly-once" -> {
                    // Abort a transaction holding an "aborted" record and the group's offset 3, then
                    // let the transactional listener container transform the input from there.
                    try {
                        template.executeInTransaction(t -> {
                            t.send(topic + "-out", 0, "k", "aborted");
                            t.sendOffsetsToTransaction(Map.of(new TopicPartition(topic, 0), new OffsetAndMetadata(3)), new ConsumerGroupMetadata(group));
                            t.flush();
                            throw new Abort();
                        });
                    } catch (Abort expected) {
                    }
                    container().start();
                    check(values(listener.take(10)).equals(seeded(0, 10)), "records are not v0..v9");
                    container().stop(); // returns once the last transaction is committed
                }
                default -> na("not mapped");
            }
        }
    }

    static class Abort extends RuntimeException {
    }
}
