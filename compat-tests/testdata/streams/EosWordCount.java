// EosWordCount is the Kafka Streams application of compat-tests/streams_test.go. Usage:
// EosWordCount BOOTSTRAP INPUT OUTPUT APP_ID GROUP_PROTOCOL STATE_DIR.
//
// It counts the words of INPUT's values with processing.guarantee=exactly_once_v2: the
// groupBy re-keys by word (a repartition topic), count() keeps a persistent state store (a
// compacted changelog topic) and every count update goes to OUTPUT, key the word, value the
// count as a decimal string. Record caches are off, so each input word yields exactly one
// output record: a word seen N times appears in OUTPUT with the values 1..N, each once.
//
// GROUP_PROTOCOL is "classic" or "streams" (KIP-1071). It prints "STATE RUNNING" (and every
// other state change) to stdout and runs until it is killed or its stdin closes, then closes
// the application cleanly.
import java.io.InputStream;
import java.time.Duration;
import java.util.Arrays;
import java.util.Properties;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.errors.StreamsUncaughtExceptionHandler.StreamThreadExceptionResponse;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;

public class EosWordCount {
  public static void main(String[] a) throws Exception {
    String bootstrap = a[0], input = a[1], output = a[2], appId = a[3], protocol = a[4], stateDir = a[5];
    Properties p = new Properties();
    p.put(StreamsConfig.APPLICATION_ID_CONFIG, appId);
    p.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
    p.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, StreamsConfig.EXACTLY_ONCE_V2);
    p.put(StreamsConfig.REPLICATION_FACTOR_CONFIG, 1);
    p.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, 100);
    p.put(StreamsConfig.STATESTORE_CACHE_MAX_BYTES_CONFIG, 0);
    p.put(StreamsConfig.NUM_STREAM_THREADS_CONFIG, 2);
    p.put(StreamsConfig.STATE_DIR_CONFIG, stateDir);
    p.put("group.protocol", protocol);
    p.put(StreamsConfig.DEFAULT_KEY_SERDE_CLASS_CONFIG, Serdes.String().getClass());
    p.put(StreamsConfig.DEFAULT_VALUE_SERDE_CLASS_CONFIG, Serdes.String().getClass());
    p.put(StreamsConfig.consumerPrefix("auto.offset.reset"), "earliest");
    // A killed broker comes back within seconds; keep retrying rather than failing the task.
    p.put(StreamsConfig.producerPrefix("delivery.timeout.ms"), 120000);
    p.put(StreamsConfig.producerPrefix("transaction.timeout.ms"), 20000);

    StreamsBuilder b = new StreamsBuilder();
    b.<String, String>stream(input)
        .flatMapValues(v -> Arrays.asList(v.trim().split("\\s+")))
        .groupBy((k, w) -> w, Grouped.with("words", Serdes.String(), Serdes.String()))
        .count(Materialized.as("counts"))
        .toStream()
        .mapValues(n -> Long.toString(n))
        .to(output, Produced.with(Serdes.String(), Serdes.String()));

    KafkaStreams streams = new KafkaStreams(b.build(), p);
    streams.setStateListener((now, before) -> {
      System.out.println("STATE " + now);
      System.out.flush();
    });
    streams.setUncaughtExceptionHandler(e -> {
      e.printStackTrace();
      // A thread that died is replaced: exactly-once must hold across that too.
      return StreamThreadExceptionResponse.REPLACE_THREAD;
    });
    streams.start();
    InputStream in = System.in;
    while (in.read() >= 0) {
      // The test closes stdin to ask for a clean shutdown.
    }
    streams.close(Duration.ofSeconds(30));
    System.out.println("CLOSED");
    System.exit(0);
  }
}
