package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// Clients is the row order of COMPAT.md.
func Clients() []*Client {
	return []*Client{
		{ID: "franz-go", Name: "franz-go v1.22 (kgo + kadm)", Family: "franz-go", Run: runFranz, Share: runFranzShare, Quick: "group"},
		{ID: "kcat", Name: "kcat (librdkafka, Debian)", Family: "librdkafka", Prepare: needCommand("kcat"), Run: runKcat, Quick: "keys-headers", NoShare: debianKcatNoShare},
		{ID: "kcat-0.9", Name: "kcat (librdkafka) with api.version.request=false, broker.version.fallback=0.9.0", Family: "librdkafka", Prepare: needCommand("kcat"), Run: runKcatOld, Timeout: oldClientTimeout, NoShare: debianKcatNoShare},
		withShare(scriptClient("confluent-python", "confluent-kafka-python (librdkafka, Debian)", "librdkafka", "confluent_kafka", "confluent.py", "produce-zstd"), nil,
			"no share consumer in Debian's confluent-kafka-python 1.7.0 (librdkafka 2.0.2); the PyPI row's 2.16.1 has one"),
		withShare(scriptClient("kafka-python", "kafka-python (Debian)", "kafka-python", "kafka", "kafkapython.py", "consume-begin"), nil, "no share consumer in kafka-python 2.0.2 (Debian)"),
		withShare(venvScript("confluent-pypi", "confluent-kafka-python "+pypiConfluentKafka+" (PyPI, bundled librdkafka "+pypiConfluentLibrdkf+")", "librdkafka-pypi", "confluent.py", "transactions"), runConfluentShare, ""),
		venvScript("kafka-python-2", "kafka-python "+pypiKafkaPython+" (PyPI)", "kafka-python-2", "kafkapython.py", "transactions"),
		venvScript("aiokafka", "aiokafka "+pypiAiokafka+" (PyPI)", "aiokafka", "aiokafka_compat.py", "exactly-once"),
		{ID: "kafkajs", Name: "kafkajs " + kafkajsVersion + " (npm)", Family: "kafkajs", Prepare: prepareNode, Run: runKafkajs, Quick: "produce-gzip"},
		{ID: "platformatic", Name: "@platformatic/kafka " + platformaticVersion + " (npm)", Family: "platformatic", Prepare: func(ctx context.Context, t *Tools) error { _, err := t.PlatformaticKafka(ctx); return err }, Run: runPlatformatic, Quick: "group"},
		programClient("confluent-go", "confluent-kafka-go "+ckgoVersion+" (bundled librdkafka "+ckgoLibrdkafkaV+")", "confluent-go", (*Tools).CkgoProgram),
		programClient("rust-rdkafka", "Rust rdkafka "+rustRdkafka+" (crates.io, bundled librdkafka "+rustRdkafkaLibrd+" built with cmake)", "rust-rdkafka", (*Tools).RustProgram),
		{ID: "sarama", Name: "sarama v1.61.1", Family: "sarama", Run: runSarama, Quick: "group"},
		{ID: "sarama-0.10", Name: "sarama v1.61.1 with Version V0_10_2_0 (old protocol versions)", Family: "sarama", Run: runSaramaOld, Timeout: oldClientTimeout},
		{ID: "sarama-0.8", Name: "sarama v1.61.1 with Version V0_8_2_0 (magic 0, v0 requests)", Family: "sarama", Run: runSaramaV08, Timeout: oldClientTimeout},
		{ID: "kafka-go", Name: "segmentio/kafka-go v0.4.51", Family: "kafka-go", Run: runKafkaGo, Quick: "produce-snappy"},
		withShare(javaClient("java-producer", "Java producer (kafka-clients 4.4.0, idempotent)", "producer", "produce-lz4"), nil, javaShareElsewhere),
		withShare(javaClient("java-consumer-classic", "Java consumer, classic protocol", "consumer-classic", ""), nil, javaShareElsewhere),
		// The share cell of this row is KafkaShareConsumer (kafka-clients 4.4.0), the Java
		// client's share consumer, whose group protocol is KIP-848's.
		withShare(javaClient("java-consumer-848", "Java consumer, consumer protocol (KIP-848)", "consumer-848", "group"), runJavaShare, ""),
		withShare(javaClient("java-admin", "Java Admin client", "admin", ""), nil, javaShareElsewhere),
		cliClient("kafka-topics", "kafka-topics (TopicCommand)", runKafkaTopics, "admin"),
		cliClient("console-producer", "kafka-console-producer", runConsoleProducer, ""),
		cliClient("console-consumer", "kafka-console-consumer", runConsoleConsumer, ""),
		withShare(cliClient("console-share-consumer", "kafka-console-share-consumer", noScenario("kafka-console-share-consumer only consumes in share groups"), ""), runConsoleShare, ""),
		cliClient("consumer-groups", "kafka-consumer-groups", runConsumerGroups, ""),
		cliClient("kafka-configs", "kafka-configs (ConfigCommand)", runKafkaConfigs, ""),
		cliClient("get-offsets", "kafka-get-offsets (GetOffsetShell)", runGetOffsets, ""),
		cliClient("delete-records", "kafka-delete-records", runDeleteRecords, ""),
		cliClient("dump-log", "kafka-dump-log (DumpLogSegments)", runDumpLog, ""),
		cliClient("producer-perf", "kafka-producer-perf-test", runProducerPerf, ""),
		cliClient("consumer-perf", "kafka-consumer-perf-test", runConsumerPerf, ""),
		{ID: "spring", Name: "Spring for Apache Kafka 4.2.0 (Spring Boot " + springBootVersion + ", KafkaTemplate + @KafkaListener)", Family: "spring", PrepareTimeout: 30 * time.Minute,
			Prepare: func(ctx context.Context, t *Tools) error { _, err := t.SpringJar(ctx); return err }, Run: runSpring, Timeout: 120 * time.Second},
		{ID: "connect", Name: "Kafka Connect " + connectVersion + " standalone, FileStream source and sink connectors", Family: "connect", Prepare: prepareConnect, Run: runConnect, Timeout: 180 * time.Second},
		{ID: "connect-distributed", Name: "Kafka Connect " + connectVersion + " distributed (compacted internal topics, REST API, exactly-once source), FileStream connectors", Family: "connect", Prepare: prepareConnect, Run: runConnectDistributed, Timeout: 240 * time.Second},
		{ID: "mirrormaker2", Name: "MirrorMaker 2 (connect-mirror " + connectVersion + ": MirrorSource + MirrorCheckpoint connectors in a distributed worker) to a second sluice", Family: "connect", Prepare: prepareConnect, Run: runMirrorMaker, Timeout: 240 * time.Second},
		{ID: "mirrormaker2-from-kafka", Name: "MirrorMaker 2 (connect-mirror " + connectVersion + ") from Apache Kafka 4.4.0 to sluice (the migration case)", Family: "connect", Prepare: prepareConnect, Run: runMirrorMakerFromKafka, Timeout: 240 * time.Second},
		{ID: "streams", Name: "Kafka Streams 4.4.0 word count", Family: "java", Prepare: prepareJava, Run: runStreams, Timeout: 150 * time.Second},
	}
}

// debianKcatNoShare is the kcat rows' share n/a reason.
const debianKcatNoShare = "no share consumer in kcat 1.7.1 (Debian, librdkafka 2.0.2)"

// javaShareElsewhere is the n/a reason of the Java rows other than the KIP-848 consumer's.
const javaShareElsewhere = "the Java client's share consumer (KafkaShareConsumer) is in the KIP-848 consumer row"

// withShare sets a client's share cell runner, or the reason it has none.
func withShare(c *Client, run CellFunc, noShare string) *Client {
	c.Share, c.NoShare = run, noShare
	return c
}

// oldClientTimeout bounds the old-protocol row's cells: a client whose requests sluice refuses
// retries until its deadline.
const oldClientTimeout = 30 * time.Second

func needCommand(name string) func(context.Context, *Tools) error {
	return func(context.Context, *Tools) error {
		_, err := exec.LookPath(name)
		if err != nil {
			return fmt.Errorf("%s not installed (run scripts/install-test-deps.sh): %w", name, err)
		}
		return nil
	}
}

// scriptClient is a Python client driven by clients/<script> with the conventional arguments.
func scriptClient(id, name, family, module, script, quick string) *Client {
	return &Client{
		ID: id, Name: name, Family: family, Quick: quick,
		Prepare: func(ctx context.Context, _ *Tools) error {
			if out, err := exec.CommandContext(ctx, debianPython, "-c", "import "+module).CombinedOutput(); err != nil {
				return fmt.Errorf("%s cannot import %s (run scripts/install-test-deps.sh): %v %s", debianPython, module, err, out)
			}
			return nil
		},
		Run: func(ctx context.Context, e *Env) error {
			if _, err := runProgram(ctx, e.Log, e.Dir, nil, "", debianPython, append([]string{filepath.Join(e.Tools.scripts, script)}, e.Args()...)...); err != nil {
				return err
			}
			return e.verifyScenario(ctx)
		},
	}
}

func prepareNode(ctx context.Context, t *Tools) error {
	_, err := t.NodeModules(ctx)
	return err
}

func runKafkajs(ctx context.Context, e *Env) error {
	mods, err := e.Tools.NodeModules(ctx)
	if err != nil {
		return err
	}
	if _, err := runProgram(ctx, e.Log, e.Dir, []string{"NODE_PATH=" + mods}, "", "node", append([]string{filepath.Join(e.Tools.scripts, "kafkajs.js")}, e.Args()...)...); err != nil {
		return err
	}
	return e.verifyScenario(ctx)
}

func prepareJava(ctx context.Context, t *Tools) error {
	_, err := t.JavaClasses(ctx)
	return err
}

// javaClient runs clients/Compat.java in one role.
func javaClient(id, name, role, quick string) *Client {
	return &Client{
		ID: id, Name: name, Family: "java", Quick: quick, Prepare: prepareJava,
		Run: func(ctx context.Context, e *Env) error {
			if _, err := e.Tools.Java(ctx, e, "", "Compat", append([]string{role}, e.Args()...)...); err != nil {
				return err
			}
			return e.verifyScenario(ctx)
		},
	}
}

// cliClient is one of Apache Kafka's command-line tools.
func cliClient(id, name string, run CellFunc, quick string) *Client {
	return &Client{ID: id, Name: name, Family: "kafka-cli", Quick: quick, Prepare: prepareJava, Run: run}
}

// --- kcat ---

func kcat(ctx context.Context, e *Env, stdin string, args ...string) (string, error) {
	args = append(append([]string{"-b", e.Addr}, kcatOldProtocol...), args...)
	return runProgram(ctx, e.Log, e.Dir, nil, stdin, "kcat", args...)
}

// kcatOldProtocol are the settings the old-protocol kcat row adds to every run (cells run one
// at a time): no ApiVersions request, and the versions librdkafka assumes for a Kafka 0.9.0
// broker (Produce v1 and Fetch v1 with magic 0 messages, ListOffsets v0, Metadata v0, the
// group APIs' v0), as builds and configurations predating Kafka 0.10 still run.
var kcatOldProtocol []string

// runKcatOld runs a scenario with kcat speaking Kafka 0.9.0's protocol.
func runKcatOld(ctx context.Context, e *Env) error {
	kcatOldProtocol = []string{"-X", "api.version.request=false", "-X", "broker.version.fallback=0.9.0"}
	defer func() { kcatOldProtocol = nil }()
	switch e.Scenario.ID {
	case "produce-zstd":
		return na("zstd needs a Kafka 2.1 broker version")
	case "keys-headers":
		return na("record headers need a Kafka 0.11 broker version")
	case "consume-ts":
		return na("offsets by timestamp need a Kafka 0.10.1 broker version")
	}
	return runKcat(ctx, e)
}

func seedValues(from, to int) string {
	var b strings.Builder
	for i := from; i < to; i++ {
		fmt.Fprintf(&b, "v%d\n", i)
	}
	return b.String()
}

func expectOutput(got, want string) error {
	if strings.TrimSpace(got) != strings.TrimSpace(want) {
		return fmt.Errorf("got %q, want %q", clip(got), clip(want))
	}
	return nil
}

func clip(s string) string {
	if len(s) > 400 {
		return s[:400] + "..."
	}
	return s
}

func runKcat(ctx context.Context, e *Env) error {
	s := e.Scenario
	switch {
	case s.ID == "admin":
		// kcat reads metadata but cannot create or delete topics; auto-creation is off in Kafka
		// 4's default, so the topic is created by the harness and kcat lists it.
		if err := e.createTopic(ctx, 3); err != nil {
			return err
		}
		out, err := kcat(ctx, e, "", "-L", "-t", e.Topic)
		if err != nil {
			return err
		}
		if !strings.Contains(out, "3 partitions") {
			return fmt.Errorf("kcat -L does not show 3 partitions: %s", clip(out))
		}
		return nil
	case s.Codec != "":
		var in strings.Builder
		for i := 0; i < seedCount; i++ {
			fmt.Fprintf(&in, "k%d:%s\n", i, payload(i))
		}
		// The idempotent producer needs a Kafka 0.11 broker version; the old-protocol row goes without.
		idempotent := strconv.FormatBool(kcatOldProtocol == nil)
		if _, err := kcat(ctx, e, in.String(), "-P", "-t", e.Topic, "-p", "0", "-K:", "-z", s.Codec,
			"-X", "enable.idempotence="+idempotent, "-X", "linger.ms=50"); err != nil {
			return err
		}
		return e.verifyScenario(ctx)
	case s.ID == "consume-begin":
		out, err := kcat(ctx, e, "", "-C", "-t", e.Topic, "-p", "0", "-o", "beginning", "-e", "-f", "%s\n")
		if err != nil {
			return err
		}
		return expectOutput(out, seedValues(0, seedCount))
	case s.ID == "consume-end":
		out, err := kcat(ctx, e, "", "-C", "-t", e.Topic, "-p", "0", "-o", "end", "-c", "1", "-f", "%s\n")
		if err != nil {
			return err
		}
		if !strings.HasPrefix(out, "tail-") {
			return fmt.Errorf("first record from end is %q, want a tail record", out)
		}
		return nil
	case s.ID == "consume-ts":
		out, err := kcat(ctx, e, "", "-C", "-t", e.Topic, "-p", "0", "-o", "s@"+strconv.FormatInt(e.TSBase+5000, 10), "-e", "-f", "%s\n")
		if err != nil {
			return err
		}
		return expectOutput(out, seedValues(5, seedCount))
	case s.ID == "keys-headers":
		var in strings.Builder
		for i := 0; i < 3; i++ {
			// kcat's -H applies to every record of a run, so one run per record.
			if _, err := kcat(ctx, e, fmt.Sprintf("ck%d:c%d\n", i, i), "-P", "-t", e.Topic, "-p", "0", "-K:",
				"-H", fmt.Sprintf("h=y%d", i), "-H", fmt.Sprintf("trace=t%d", i)); err != nil {
				return err
			}
			fmt.Fprintf(&in, "k%d|v%d|h=x%d,trace=s%d\n", i, i, i, i)
		}
		out, err := kcat(ctx, e, "", "-C", "-t", e.Topic, "-p", "0", "-o", "beginning", "-c", "3", "-e", "-f", "%k|%s|%h\n")
		if err != nil {
			return err
		}
		if err := expectOutput(out, in.String()); err != nil {
			return err
		}
		return e.VerifyKeysHeaders(ctx, true)
	case s.ID == "group":
		// kcat's balanced consumer stores offsets as it prints and commits them on close.
		out, err := kcat(ctx, e, "", "-G", e.Group, "-o", "beginning", "-c", "5", "-f", "%s\n",
			"-X", "enable.auto.commit=true", e.Topic)
		if err != nil {
			return err
		}
		if err := expectOutput(out, seedValues(0, 5)); err != nil {
			return err
		}
		if err := e.VerifyCommitted(ctx, 5); err != nil {
			return err
		}
		out, err = kcat(ctx, e, "", "-G", e.Group, "-c", "1", "-f", "%s\n", e.Topic)
		if err != nil {
			return err
		}
		return expectOutput(out, "v5")
	case s.ID == "configs":
		return na("kcat has no config commands")
	case s.ID == "delete-records":
		return na("kcat has no delete-records command")
	case s.ID == "transactions", s.ID == "exactly-once":
		return na("kcat has no transactional producer mode")
	}
	return na("not mapped")
}

// createTopic creates the cell's topic with the given partition count (for clients that
// cannot create topics themselves).
func (e *Env) createTopic(ctx context.Context, partitions int32) error {
	cl, err := e.client()
	if err != nil {
		return err
	}
	defer cl.Close()
	_, err = kadmClient(cl).CreateTopic(ctx, partitions, e.RF, nil, e.Topic)
	return err
}

// --- Kafka's command-line tools ---

func runKafkaTopics(ctx context.Context, e *Env) error {
	if e.Scenario.ID != "admin" {
		return na("kafka-topics administers topics only")
	}
	bs := []string{"--bootstrap-server", e.Addr}
	const cls = "org.apache.kafka.tools.TopicCommand"
	if _, err := e.Tools.Java(ctx, e, "", cls, append(bs, "--create", "--topic", e.Topic, "--partitions", "3", "--replication-factor", "1", "--config", "retention.ms=86400000")...); err != nil {
		return err
	}
	out, err := e.Tools.Java(ctx, e, "", cls, append(bs, "--list")...)
	if err != nil {
		return err
	}
	if !strings.Contains(out, e.Topic) {
		return fmt.Errorf("--list does not show %s", e.Topic)
	}
	if _, err := e.Tools.Java(ctx, e, "", cls, append(bs, "--alter", "--topic", e.Topic, "--partitions", "4")...); err != nil {
		return err
	}
	out, err = e.Tools.Java(ctx, e, "", cls, append(bs, "--describe", "--topic", e.Topic)...)
	if err != nil {
		return err
	}
	if !strings.Contains(out, "PartitionCount: 4") || !strings.Contains(out, "retention.ms=86400000") {
		return fmt.Errorf("--describe does not show 4 partitions and retention.ms: %s", clip(out))
	}
	if _, err := e.Tools.Java(ctx, e, "", cls, append(bs, "--delete", "--topic", e.Topic)...); err != nil {
		return err
	}
	return waitFor(ctx, func() error {
		out, err := e.Tools.Java(ctx, e, "", cls, append(bs, "--list")...)
		if err == nil && strings.Contains(out, e.Topic) {
			err = fmt.Errorf("%s still listed after --delete", e.Topic)
		}
		return err
	})
}

// waitFor retries check until it succeeds or ctx ends.
func waitFor(ctx context.Context, check func() error) error {
	for {
		err := check()
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(500 * time.Millisecond):
		}
	}
}

func runConsoleProducer(ctx context.Context, e *Env) error {
	s := e.Scenario
	const cls = "org.apache.kafka.tools.ConsoleProducer"
	base := []string{"--bootstrap-server", e.Addr, "--topic", e.Topic}
	switch {
	case s.Codec != "":
		var in strings.Builder
		for i := 0; i < seedCount; i++ {
			fmt.Fprintf(&in, "k%d\t%s\n", i, payload(i))
		}
		args := append(base, "--reader-property", "parse.key=true", "--command-property", "linger.ms=100")
		if s.Codec != "none" {
			args = append(args, "--compression-codec", s.Codec)
		}
		if _, err := e.Tools.Java(ctx, e, in.String(), cls, args...); err != nil {
			return err
		}
		return e.verifyScenario(ctx)
	case s.ID == "keys-headers":
		var in strings.Builder
		for i := 0; i < 3; i++ {
			fmt.Fprintf(&in, "h:y%d,trace:t%d\tck%d\tc%d\n", i, i, i, i)
		}
		if _, err := e.Tools.Java(ctx, e, in.String(), cls, append(base, "--reader-property", "parse.key=true", "--reader-property", "parse.headers=true")...); err != nil {
			return err
		}
		return e.VerifyKeysHeaders(ctx, true)
	case s.ID == "admin", s.ID == "configs", s.ID == "delete-records":
		return na("the console producer only produces")
	case s.ID == "transactions", s.ID == "exactly-once":
		return na("the console producer has no transactional mode")
	}
	return na("the console producer only produces")
}

func runConsoleConsumer(ctx context.Context, e *Env) error {
	s := e.Scenario
	const cls = "org.apache.kafka.tools.consumer.ConsoleConsumer"
	base := []string{"--bootstrap-server", e.Addr, "--topic", e.Topic, "--timeout-ms", "20000"}
	switch s.ID {
	case "consume-begin":
		out, err := e.Tools.Java(ctx, e, "", cls, append(base, "--from-beginning", "--max-messages", strconv.Itoa(seedCount))...)
		if err != nil {
			return err
		}
		return expectOutput(out, seedValues(0, seedCount))
	case "consume-end":
		out, err := e.Tools.Java(ctx, e, "", cls, append(base, "--partition", "0", "--offset", "latest", "--max-messages", "1")...)
		if err != nil {
			return err
		}
		if !strings.HasPrefix(out, "tail-") {
			return fmt.Errorf("first record from end is %q, want a tail record", out)
		}
		return nil
	case "consume-ts":
		return na("the console consumer cannot start at a timestamp (--offset takes a number, earliest or latest)")
	case "keys-headers":
		out, err := e.Tools.Java(ctx, e, "", cls, append(base, "--from-beginning", "--max-messages", "3",
			"--formatter-property", "print.key=true", "--formatter-property", "print.headers=true", "--formatter-property", "key.separator=|",
			"--formatter-property", "headers.separator=,")...)
		if err != nil {
			return err
		}
		var want strings.Builder
		for i := 0; i < 3; i++ {
			fmt.Fprintf(&want, "h:x%d,trace:s%d|k%d|v%d\n", i, i, i, i)
		}
		return expectOutput(out, want.String())
	case "group":
		out, err := e.Tools.Java(ctx, e, "", cls, append(base, "--group", e.Group, "--from-beginning", "--max-messages", "5")...)
		if err != nil {
			return err
		}
		if err := expectOutput(out, seedValues(0, 5)); err != nil {
			return err
		}
		if err := e.VerifyCommitted(ctx, 5); err != nil {
			return err
		}
		out, err = e.Tools.Java(ctx, e, "", cls, append(base, "--group", e.Group, "--max-messages", "1")...)
		if err != nil {
			return err
		}
		return expectOutput(out, "v5")
	case "transactions", "exactly-once":
		return na("the console consumer does not produce transactions")
	}
	return na("the console consumer only consumes")
}

func runConsumerGroups(ctx context.Context, e *Env) error {
	if e.Scenario.ID != "group" {
		return na("kafka-consumer-groups administers groups only")
	}
	// A franz-go member commits offset 5 and leaves; the tool describes the group, resets it to
	// offset 2, and the harness checks the committed offset.
	if err := franzCommit(ctx, e, 5); err != nil {
		return fmt.Errorf("harness commit: %w", err)
	}
	const cls = "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand"
	bs := []string{"--bootstrap-server", e.Addr}
	out, err := e.Tools.Java(ctx, e, "", cls, append(bs, "--list")...)
	if err != nil {
		return err
	}
	if !strings.Contains(out, e.Group) {
		return fmt.Errorf("--list does not show %s", e.Group)
	}
	out, err = e.Tools.Java(ctx, e, "", cls, append(bs, "--describe", "--group", e.Group)...)
	if err != nil {
		return err
	}
	if !regexp.MustCompile(regexp.QuoteMeta(e.Topic) + `\s+0\s+5\s+10\s+5`).MatchString(out) {
		return fmt.Errorf("--describe does not show offset 5, end 10, lag 5: %s", clip(out))
	}
	if _, err := e.Tools.Java(ctx, e, "", cls, append(bs, "--reset-offsets", "--group", e.Group, "--topic", e.Topic, "--to-offset", "7", "--execute")...); err != nil {
		return err
	}
	if err := e.VerifyCommitted(ctx, 7); err != nil {
		return err
	}
	_, err = e.Tools.Java(ctx, e, "", cls, append(bs, "--delete", "--group", e.Group)...)
	return err
}

func runKafkaConfigs(ctx context.Context, e *Env) error {
	if e.Scenario.ID != "configs" {
		return na("kafka-configs administers configs only")
	}
	const cls = "org.apache.kafka.tools.ConfigCommand"
	bs := []string{"--bootstrap-server", e.Addr, "--entity-type", "topics", "--entity-name", e.Topic}
	if _, err := e.Tools.Java(ctx, e, "", cls, append(bs, "--alter", "--add-config", "retention.ms=3600000")...); err != nil {
		return err
	}
	out, err := e.Tools.Java(ctx, e, "", cls, append(bs, "--describe")...)
	if err != nil {
		return err
	}
	if !strings.Contains(out, "retention.ms=3600000") {
		return fmt.Errorf("--describe does not show retention.ms=3600000: %s", clip(out))
	}
	if _, err := e.Tools.Java(ctx, e, "", cls, "--bootstrap-server", e.Addr, "--entity-type", "brokers", "--entity-name", "1", "--describe", "--all"); err != nil {
		return err
	}
	return e.VerifyRetention(ctx)
}

func runGetOffsets(ctx context.Context, e *Env) error {
	const cls = "org.apache.kafka.tools.GetOffsetShell"
	var at, want string
	switch e.Scenario.ID {
	case "consume-begin":
		at, want = "-2", e.Topic+":0:0"
	case "consume-end":
		return na("the end offset moves while the tail producer runs; see consume-ts and consume-begin")
	case "consume-ts":
		at, want = strconv.FormatInt(e.TSBase+5000, 10), e.Topic+":0:5"
	case "delete-records":
		return na("kafka-get-offsets only reads offsets")
	default:
		return na("kafka-get-offsets resolves offsets (earliest, latest, by timestamp) only")
	}
	out, err := e.Tools.Java(ctx, e, "", cls, "--bootstrap-server", e.Addr, "--topic", e.Topic, "--time", at)
	if err != nil {
		return err
	}
	if err := expectOutput(out, want); err != nil {
		return err
	}
	out, err = e.Tools.Java(ctx, e, "", cls, "--bootstrap-server", e.Addr, "--topic", e.Topic, "--time", "-1")
	if err != nil {
		return err
	}
	return expectOutput(out, e.Topic+":0:10")
}

func runDeleteRecords(ctx context.Context, e *Env) error {
	if e.Scenario.ID != "delete-records" {
		return na("kafka-delete-records only deletes records")
	}
	file := filepath.Join(e.Dir, "offsets.json")
	js := fmt.Sprintf(`{"version":1,"partitions":[{"topic":%q,"partition":0,"offset":5}]}`, e.Topic)
	if err := os.WriteFile(file, []byte(js), 0o644); err != nil {
		return err
	}
	out, err := e.Tools.Java(ctx, e, "", "org.apache.kafka.tools.DeleteRecordsCommand", "--bootstrap-server", e.Addr, "--offset-json-file", file)
	if err != nil {
		return err
	}
	if !strings.Contains(out, "low_watermark: 5") {
		return fmt.Errorf("output does not report low_watermark: 5: %s", clip(out))
	}
	return e.VerifyStartOffset(ctx, 5)
}

// runDumpLog has franz-go write the scenario's records and reads sluice's segment file back
// with Kafka's DumpLogSegments.
func runDumpLog(ctx context.Context, e *Env) error {
	s := e.Scenario
	switch {
	case s.Codec != "":
		if err := franzProduce(ctx, e, s.Codec); err != nil {
			return fmt.Errorf("harness produce: %w", err)
		}
	case s.ID == "keys-headers":
	default:
		return na("kafka-dump-log reads segment files; it is run on the produce and keys/headers scenarios")
	}
	seg := filepath.Join(e.DataDir, e.Topic+"-0", "00000000000000000000.log")
	out, err := e.Tools.Java(ctx, e, "", "org.apache.kafka.tools.DumpLogSegments", "--files", seg, "--print-data-log", "--deep-iteration")
	if err != nil {
		return err
	}
	if strings.Contains(out, "Found") && strings.Contains(out, "invalid") {
		return fmt.Errorf("DumpLogSegments reports invalid bytes")
	}
	if s.Codec != "" {
		// Kafka 4.1 prints the codec's name in lower case ("compresscodec: gzip").
		want := s.Codec
		if !strings.Contains(strings.ToLower(out), "compresscodec: "+want) || !strings.Contains(out, "payload: "+payload(9)) {
			return fmt.Errorf("dump does not show compresscodec: %s and payload v9", want)
		}
		return nil
	}
	if !strings.Contains(out, "key: k2") || !regexp.MustCompile(`headerKeys: \[h,\s*trace\]`).MatchString(out) {
		return fmt.Errorf("dump does not show key k2 and headerKeys [h,trace]")
	}
	return nil
}

func runProducerPerf(ctx context.Context, e *Env) error {
	s := e.Scenario
	const cls = "org.apache.kafka.tools.ProducerPerformance"
	args := []string{"--topic", e.Topic, "--num-records", "2000", "--record-size", "100", "--throughput", "-1",
		"--producer-props", "bootstrap.servers=" + e.Addr, "acks=all"}
	switch {
	case s.Codec != "":
		args = append(args, "compression.type="+s.Codec)
	case s.ID == "transactions":
		args = append(args, "--transactional-id", e.Topic+"-txn", "--transaction-duration-ms", "500")
	default:
		return na("kafka-producer-perf-test only produces")
	}
	out, err := e.Tools.Java(ctx, e, "", cls, args...)
	if err != nil {
		return err
	}
	if !strings.Contains(out, "2000 records sent") {
		return fmt.Errorf("no summary line '2000 records sent'")
	}
	if s.ID == "transactions" {
		return e.verifyPerfTxn(ctx, 2000)
	}
	return e.VerifyProduced(ctx, 2000, true)
}

// verifyPerfTxn checks a transactional kafka-producer-perf-test run exactly once: its n records
// (random payloads, so counted) are all visible to read_committed, nothing else is in the log,
// and every transaction marker is a commit.
func (e *Env) verifyPerfTxn(ctx context.Context, n int) error {
	committed, err := e.readAll(ctx, e.Topic, true)
	if err != nil {
		return err
	}
	all, control, err := e.readPartition(ctx, e.Topic, false)
	if err != nil {
		return err
	}
	if len(committed) != n || len(all) != n {
		return fmt.Errorf("verify: read_committed sees %d records, read_uncommitted %d, want %d", len(committed), len(all), n)
	}
	markers := markerTypes(control)
	for _, m := range markers {
		if m != "commit" {
			return fmt.Errorf("verify: transaction markers %v, want only commits", markers)
		}
	}
	if len(markers) == 0 {
		return fmt.Errorf("verify: no transaction markers")
	}
	e.Log.Printf("[harness] %d records visible to read_committed, %d transactions, all committed", n, len(markers))
	return nil
}

func runConsumerPerf(ctx context.Context, e *Env) error {
	if e.Scenario.ID != "consume-begin" && e.Scenario.ID != "group" {
		return na("kafka-consumer-perf-test consumes from the beginning in a group only")
	}
	out, err := e.Tools.Java(ctx, e, "", "org.apache.kafka.tools.ConsumerPerformance", "--bootstrap-server", e.Addr,
		"--topic", e.Topic, "--messages", strconv.Itoa(seedCount), "--group", e.Group, "--timeout", "30000", "--show-detailed-stats", "--reporting-interval", "60000")
	if err != nil {
		return err
	}
	if strings.Contains(out, "WARNING: Exiting before consuming") {
		return fmt.Errorf("consumer-perf-test timed out before %d records", seedCount)
	}
	if e.Scenario.ID == "group" {
		return e.VerifyCommitted(ctx, seedCount)
	}
	return nil
}

func runStreams(ctx context.Context, e *Env) error {
	var guarantee string
	switch e.Scenario.ID {
	case "group":
		guarantee = "at_least_once"
	case "exactly-once":
		guarantee = "exactly_once_v2"
	default:
		return na("a Streams word count exercises groups (at-least-once) and exactly-once only")
	}
	_, err := e.Tools.Java(ctx, e, "", "WordCount", e.Addr, e.Topic, e.Group, guarantee)
	return err
}

// noScenario is the Run of a row that has only its share cell: every other scenario is n/a with
// reason.
func noScenario(reason string) CellFunc {
	return func(context.Context, *Env) error { return na("%s", reason) }
}
