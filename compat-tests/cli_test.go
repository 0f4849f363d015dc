// This file tests the `sluice` admin subcommands as a new user runs them: against a running
// sluice, and against Apache Kafka started from the cached jars, the same scenario (the CLI is
// a Kafka client and must work against either).

package compattests

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"sluice/internal/testcluster"
)

// cliTimeout bounds one CLI invocation.
const cliTimeout = 90 * time.Second

// sluiceCLI runs `sluice args...` against brokers and returns stdout, stderr and the exit code.
func sluiceCLI(t *testing.T, brokers, stdin string, args ...string) (string, string, int) {
	t.Helper()
	args = append(args, "--brokers", brokers)
	stdout, stderr, err := runCmdErr(cliTimeout, stdin, sluiceBinary(t), args...)
	var exit *exec.ExitError
	switch {
	case err == nil:
		return stdout, stderr, 0
	case errors.As(err, &exit):
		return stdout, stderr, exit.ExitCode()
	}
	t.Fatalf("sluice %s: %v\nstderr:\n%s", strings.Join(args, " "), err, clip(stderr))
	return "", "", -1
}

// sluiceOK runs the CLI and fails the test unless it exits 0.
func sluiceOK(t *testing.T, brokers, stdin string, args ...string) string {
	t.Helper()
	stdout, stderr, code := sluiceCLI(t, brokers, stdin, args...)
	if code != 0 {
		t.Fatalf("sluice %s: exit %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), code, clip(stdout), clip(stderr))
	}
	return stdout
}

// sluiceJSON runs the CLI with -o json and decodes its output into v.
func sluiceJSON(t *testing.T, brokers string, v any, args ...string) {
	t.Helper()
	out := sluiceOK(t, brokers, "", append(args, "-o", "json")...)
	if err := json.Unmarshal([]byte(out), v); err != nil {
		t.Fatalf("sluice %s -o json: %v\n%s", strings.Join(args, " "), err, clip(out))
	}
}

type cliGroup struct {
	Group      string `json:"group"`
	State      string `json:"state"`
	TotalLag   int64  `json:"total_lag"`
	Partitions []struct {
		Partition int32 `json:"partition"`
		Committed int64 `json:"committed_offset"`
		End       int64 `json:"end_offset"`
		Lag       int64 `json:"lag"`
	} `json:"partitions"`
}

// cliScenario is what a new user does: look at the cluster, create a topic, produce, consume
// as a group, see the group's lag, delete the topic; and the mistakes they make.
func cliScenario(t *testing.T, brokers string) {
	const topic, group = "cli-orders", "g1"
	var info struct {
		ClusterID string `json:"cluster_id"`
		Brokers   []struct {
			NodeID int32 `json:"node_id"`
		} `json:"brokers"`
	}
	sluiceJSON(t, brokers, &info, "cluster", "info")
	if info.ClusterID == "" || len(info.Brokers) != 1 {
		t.Fatalf("cluster info: %+v, want a cluster ID and one broker", info)
	}

	if out := sluiceOK(t, brokers, "", "topic", "create", topic, "-p", "3", "-r", "1"); !strings.Contains(out, "created topic "+topic+": 3 partitions") {
		t.Errorf("topic create printed %q", out)
	}
	if _, stderr, code := sluiceCLI(t, brokers, "", "topic", "create", topic); code != 1 || !strings.Contains(stderr, "already exists") {
		t.Errorf("creating an existing topic: exit %d, stderr %q; want 1 and \"already exists\"", code, stderr)
	}
	var topics []struct {
		Topic      string `json:"topic"`
		Partitions int    `json:"partitions"`
	}
	waitFor(t, 30*time.Second, "topic list shows the new topic", func() error {
		sluiceJSON(t, brokers, &topics, "topic", "list")
		for _, tp := range topics {
			if tp.Topic == topic && tp.Partitions == 3 {
				return nil
			}
		}
		return fmt.Errorf("topic list: %+v", topics)
	})
	var desc struct {
		Partitions []struct {
			Partition int32   `json:"partition"`
			Leader    int32   `json:"leader"`
			ISR       []int32 `json:"isr"`
		} `json:"partitions"`
	}
	sluiceJSON(t, brokers, &desc, "topic", "describe", topic)
	if len(desc.Partitions) != 3 {
		t.Fatalf("topic describe: %+v, want 3 partitions", desc)
	}
	if _, stderr, code := sluiceCLI(t, brokers, "", "topic", "describe", "no-such-topic"); code != 1 || !strings.Contains(stderr, "topic no-such-topic does not exist; `sluice topic list`") {
		t.Errorf("describing a missing topic: exit %d, stderr %q", code, stderr)
	}

	var lines []string
	want := map[string]string{}
	for i := range 10 {
		lines = append(lines, fmt.Sprintf("key%d:value%d", i, i))
		want[fmt.Sprintf("key%d", i)] = fmt.Sprintf("value%d", i)
	}
	sluiceOK(t, brokers, strings.Join(lines, "\n")+"\n", "produce", topic, "-k", ":")

	out := sluiceOK(t, brokers, "", "consume", topic, "-g", group, "-n", "10", "-o", "json")
	got := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var r struct {
			Key   *string `json:"key"`
			Value string  `json:"value"`
		}
		if err := json.Unmarshal([]byte(line), &r); err != nil || r.Key == nil {
			t.Fatalf("consume -o json line %q: %v", line, err)
		}
		got[*r.Key] = r.Value
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("consumed %v, want %v", got, want)
	}

	var g cliGroup
	sluiceJSON(t, brokers, &g, "group", "describe", group)
	var committed, end int64
	for _, p := range g.Partitions {
		committed += max(p.Committed, 0)
		end += p.End
	}
	if g.TotalLag != 0 || committed != 10 || end != 10 {
		t.Errorf("group describe after consuming everything: %+v; want lag 0 with 10 committed of 10", g)
	}
	if table := sluiceOK(t, brokers, "", "group", "describe", group); !strings.Contains(table, "total lag 0") || !strings.Contains(table, "LAG") {
		t.Errorf("group describe table:\n%s", table)
	}

	// Five more records: the group lags by five until it consumes them.
	sluiceOK(t, brokers, "a\nb\nc\nd\ne\n", "produce", topic)
	sluiceJSON(t, brokers, &g, "group", "describe", group)
	if g.TotalLag != 5 {
		t.Errorf("group lag after five more records: %d, want 5 (%+v)", g.TotalLag, g)
	}
	if out := sluiceOK(t, brokers, "", "consume", topic, "-g", group, "-n", "5"); len(strings.Fields(out)) != 5 {
		t.Errorf("consume -n 5 printed %q", out)
	}
	sluiceJSON(t, brokers, &g, "group", "describe", group)
	if g.TotalLag != 0 {
		t.Errorf("group lag after consuming the five: %d, want 0", g.TotalLag)
	}
	var groups []struct {
		Group string `json:"group"`
	}
	sluiceJSON(t, brokers, &groups, "group", "list")
	if !strings.Contains(fmt.Sprint(groups), group) {
		t.Errorf("group list %v lacks %s", groups, group)
	}
	if _, stderr, code := sluiceCLI(t, brokers, "", "group", "describe", "no-such-group"); code != 1 || !strings.Contains(stderr, "does not exist") {
		t.Errorf("describing a missing group: exit %d, stderr %q", code, stderr)
	}

	// Seeking the (now empty) group: back to the start it lags by all 15, at the end by none.
	sluiceOK(t, brokers, "", "group", "seek", group, "--to", "start")
	sluiceJSON(t, brokers, &g, "group", "describe", group)
	if g.TotalLag != 15 {
		t.Errorf("group lag after seek --to start: %d, want 15 (%+v)", g.TotalLag, g)
	}
	sluiceOK(t, brokers, "", "group", "seek", group, "--to", "end", "--topic", topic)
	sluiceJSON(t, brokers, &g, "group", "describe", group)
	if g.TotalLag != 0 {
		t.Errorf("group lag after seek --to end: %d, want 0 (%+v)", g.TotalLag, g)
	}
	sluiceOK(t, brokers, "", "group", "seek", group, "--to", "@0")
	sluiceJSON(t, brokers, &g, "group", "describe", group)
	if g.TotalLag != 15 {
		t.Errorf("group lag after seek --to @0: %d, want 15 (%+v)", g.TotalLag, g)
	}
	if _, stderr, code := sluiceCLI(t, brokers, "", "group", "seek", group, "--to", "sideways"); code != 2 || !strings.Contains(stderr, "--to \"sideways\"") {
		t.Errorf("seek --to sideways: exit %d, stderr %q; want 2", code, stderr)
	}

	// Topic configs and partitions change as kafka-configs and kafka-topics --alter change them.
	var described struct {
		Partitions []json.RawMessage `json:"partitions"`
		Configs    map[string]string `json:"configs"`
	}
	sluiceOK(t, brokers, "", "topic", "alter-config", topic, "-c", "retention.ms=3600000", "-c", "max.message.bytes=65536")
	waitFor(t, 30*time.Second, "the topic configs to show", func() error {
		described.Configs = nil // Unmarshal would merge into the last answer's map
		sluiceJSON(t, brokers, &described, "topic", "describe", topic)
		if described.Configs["retention.ms"] != "3600000" || described.Configs["max.message.bytes"] != "65536" {
			return fmt.Errorf("configs %v", described.Configs)
		}
		return nil
	})
	sluiceOK(t, brokers, "", "topic", "alter-config", topic, "--delete", "retention.ms")
	waitFor(t, 30*time.Second, "retention.ms back to the default", func() error {
		described.Configs = nil // Unmarshal would merge into the last answer's map
		sluiceJSON(t, brokers, &described, "topic", "describe", topic)
		if _, ok := described.Configs["retention.ms"]; ok || described.Configs["max.message.bytes"] != "65536" {
			return fmt.Errorf("configs %v", described.Configs)
		}
		return nil
	})
	if _, stderr, code := sluiceCLI(t, brokers, "", "topic", "alter-config", topic, "-c", "retention.ms=soon"); code != 1 || !strings.Contains(stderr, "retention.ms") {
		t.Errorf("alter-config with a bad value: exit %d, stderr %q; want 1 naming the key", code, stderr)
	}
	sluiceOK(t, brokers, "", "topic", "add-partitions", topic, "-p", "4")
	waitFor(t, 30*time.Second, "four partitions", func() error {
		described.Configs = nil // Unmarshal would merge into the last answer's map
		sluiceJSON(t, brokers, &described, "topic", "describe", topic)
		if len(described.Partitions) != 4 {
			return fmt.Errorf("%d partitions", len(described.Partitions))
		}
		return nil
	})
	if _, stderr, code := sluiceCLI(t, brokers, "", "topic", "add-partitions", topic, "-p", "2"); code != 1 || stderr == "" {
		t.Errorf("add-partitions to fewer: exit %d, stderr %q; want 1", code, stderr)
	}

	var health struct {
		Healthy    bool `json:"healthy"`
		Partitions int  `json:"partitions"`
	}
	sluiceJSON(t, brokers, &health, "cluster", "health")
	if !health.Healthy || health.Partitions < 4 {
		t.Errorf("cluster health: %+v", health)
	}

	// Reading from an explicit offset without a group: every partition starts there.
	var rec struct {
		Offset int64 `json:"offset"`
	}
	out = sluiceOK(t, brokers, "", "consume", topic, "--offset", "2", "-n", "1", "-o", "json")
	if err := json.Unmarshal([]byte(out), &rec); err != nil || rec.Offset < 2 {
		t.Errorf("consume --offset 2 -n 1: %q (%v), want one record at offset 2 or later", out, err)
	}
	// From a timestamp: @0 is every record; a time after the last record reads none yet.
	if out := sluiceOK(t, brokers, "", "consume", topic, "--offset", "@0", "-n", "15"); len(strings.Fields(out)) != 15 {
		t.Errorf("consume --offset @0 -n 15 printed %q", out)
	}

	sluiceOK(t, brokers, "", "group", "delete", group)
	sluiceJSON(t, brokers, &groups, "group", "list")
	if strings.Contains(fmt.Sprint(groups), group) {
		t.Errorf("group list %v still has the deleted %s", groups, group)
	}
	if _, stderr, code := sluiceCLI(t, brokers, "", "group", "delete", group); code != 1 || !strings.Contains(stderr, "does not exist") {
		t.Errorf("deleting a deleted group: exit %d, stderr %q", code, stderr)
	}

	sluiceOK(t, brokers, "", "topic", "delete", topic)
	waitFor(t, 60*time.Second, "the deleted topic leaves topic list", func() error {
		sluiceJSON(t, brokers, &topics, "topic", "list")
		for _, tp := range topics {
			if tp.Topic == topic {
				return fmt.Errorf("still listed: %+v", topics)
			}
		}
		return nil
	})
}

// TestCLIAgainstSluice runs the CLI scenario against a running sluice.
func TestCLIAgainstSluice(t *testing.T) {
	b := StartBroker(t)
	cliScenario(t, b.Addr)
	if _, stderr, code := sluiceCLI(t, b.Addr, "", "topic", "frob"); code != 2 || !strings.Contains(stderr, "Usage:") {
		t.Errorf("an unknown subcommand: exit %d, stderr %q; want 2 and the usage", code, stderr)
	}
	if _, stderr, code := sluiceCLI(t, "127.0.0.1:1", "", "topic", "list", "--timeout", "3s"); code != 1 || !strings.Contains(stderr, "cannot reach a broker at 127.0.0.1:1") {
		t.Errorf("no broker: exit %d, stderr %q", code, stderr)
	}
}

// TestCLIAgainstKafka runs the same scenario against Apache Kafka from the cached jars.
func TestCLIAgainstKafka(t *testing.T) {
	addr := startApacheKafka(t)
	cliScenario(t, addr)
}

// startApacheKafka formats and starts a one-node KRaft Apache Kafka from kafkaJars, waits
// until it answers ApiVersions, and stops it in t.Cleanup.
func startApacheKafka(t *testing.T) string {
	t.Helper()
	lib := kafkaJars(t)
	java := lookPath(t, "java")
	dir := t.TempDir()
	port, cport := freePort(t), freePort(t)
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	props := strings.Join([]string{
		"process.roles=broker,controller",
		"node.id=1",
		fmt.Sprintf("controller.quorum.voters=1@127.0.0.1:%d", cport),
		fmt.Sprintf("listeners=PLAINTEXT://%s,CONTROLLER://127.0.0.1:%d", addr, cport),
		"advertised.listeners=PLAINTEXT://" + addr,
		"controller.listener.names=CONTROLLER",
		"listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
		"log.dirs=" + filepath.Join(dir, "data"),
		"offsets.topic.replication.factor=1",
		"offsets.topic.num.partitions=3",
		"transaction.state.log.replication.factor=1",
		"transaction.state.log.min.isr=1",
		"share.coordinator.state.topic.replication.factor=1",
		"share.coordinator.state.topic.min.isr=1",
		"group.initial.rebalance.delay.ms=0",
	}, "\n") + "\n"
	propsPath := filepath.Join(dir, "server.properties")
	if err := os.WriteFile(propsPath, []byte(props), 0o644); err != nil {
		t.Fatal(err)
	}
	log4j := filepath.Join(dir, "log4j2.properties")
	if err := os.WriteFile(log4j, []byte("status = warn\nappender.console.type = Console\nappender.console.name = STDOUT\n"+
		"appender.console.layout.type = PatternLayout\nappender.console.layout.pattern = [%d] %p %m (%c)%n\n"+
		"rootLogger.level = WARN\nrootLogger.appenderRef.stdout.ref = STDOUT\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cp := filepath.Join(lib, "*")
	runCmd(t, 3*time.Minute, "", java, "-cp", cp, "kafka.tools.StorageTool", "format", "-t", "c2x1aWNlLWNsaS10ZXN0MQ", "-c", propsPath)
	var log testcluster.TailBuffer
	cmd := exec.Command(java, "-Xmx512m", "-Xms512m", "-XX:+UseG1GC", "-Djava.awt.headless=true",
		"-Dlog4j2.configurationFile="+log4j, "-cp", cp, "kafka.Kafka", propsPath)
	cmd.Stdout, cmd.Stderr = &log, &log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		cmd.Process.Signal(os.Interrupt)
		select {
		case <-exited:
		case <-time.After(30 * time.Second):
			cmd.Process.Kill()
			<-exited
		}
		if t.Failed() {
			t.Logf("kafka log:\n%s", clip(log.String()))
		}
	})
	waitFor(t, 3*time.Minute, "Apache Kafka answers ApiVersions", func() error {
		select {
		case <-exited:
			t.Fatalf("kafka exited during start:\n%s", clip(log.String()))
		default:
		}
		return probeApiVersions(addr)
	})
	return addr
}

// TestCLIProfilesQuorumAndCompletion: a profile names the cluster instead of --brokers (and
// $SLUICE_BROKERS does too), `sluice quorum describe` shows the metadata quorum through the
// broker listener, and `sluice completion bash` is a script bash accepts.
func TestCLIProfilesQuorumAndCompletion(t *testing.T) {
	b := StartBroker(t)
	profiles := filepath.Join(t.TempDir(), "profiles")
	if err := os.WriteFile(profiles, []byte("# clusters\n[local]\nbrokers = "+b.Addr+"\ntimeout = 20s\n\n[nowhere]\nbrokers = 127.0.0.1:1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("SLUICE_PROFILES", profiles)
	run := func(args ...string) (string, string, error) {
		return runCmdErr(cliTimeout, "", sluiceBinary(t), args...)
	}
	var info struct {
		ClusterID string `json:"cluster_id"`
	}
	out, stderr, err := run("cluster", "info", "--profile", "local", "-o", "json")
	if err != nil || json.Unmarshal([]byte(out), &info) != nil || info.ClusterID == "" {
		t.Fatalf("cluster info --profile local: %v %q %q", err, out, stderr)
	}
	// An explicit --brokers wins over the profile.
	if out, stderr, err := run("cluster", "info", "--profile", "nowhere", "--brokers", b.Addr); err != nil {
		t.Fatalf("--brokers over --profile nowhere: %v %q %q", err, out, stderr)
	}
	if _, stderr, err := run("cluster", "info", "--profile", "absent"); err == nil || !strings.Contains(stderr, `no profile "absent" in `+profiles) {
		t.Fatalf("--profile absent: %v %q", err, stderr)
	}
	t.Setenv("SLUICE_BROKERS", b.Addr)
	if out, stderr, err := run("topic", "list"); err != nil {
		t.Fatalf("topic list with $SLUICE_BROKERS: %v %q %q", err, out, stderr)
	}

	var q struct {
		Leader   int32 `json:"leader"`
		Voters   int   `json:"voters"`
		Replicas []struct {
			NodeID int32  `json:"node_id"`
			Role   string `json:"role"`
		} `json:"replicas"`
	}
	out, stderr, err = run("quorum", "describe", "-o", "json")
	if err != nil || json.Unmarshal([]byte(out), &q) != nil {
		t.Fatalf("quorum describe: %v %q %q", err, out, stderr)
	}
	if q.Leader != 1 || q.Voters != 1 || len(q.Replicas) != 1 || q.Replicas[0].Role != "leader" {
		t.Fatalf("quorum describe: %+v", q)
	}

	script, stderr, err := run("completion", "bash")
	if err != nil || !strings.Contains(script, "complete -F _sluice sluice") || !strings.Contains(script, "alter-config") {
		t.Fatalf("completion bash: %v %q %q", err, script, stderr)
	}
	path := filepath.Join(t.TempDir(), "sluice.bash")
	if err := os.WriteFile(path, []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	// The script defines the function, and completing "sluice to" offers "topic".
	check := fmt.Sprintf(`source %s; COMP_WORDS=(sluice to); COMP_CWORD=1; _sluice; echo "${COMPREPLY[@]}"`, path)
	if out := runCmd(t, 30*time.Second, "", lookPath(t, "bash"), "-c", check); strings.TrimSpace(out) != "topic" {
		t.Fatalf("completing 'sluice to' offered %q", out)
	}
}

// TestCLIACLs: `sluice acl create|list|delete` manage ACLs as kafka-acls does, on a broker
// with the StandardAuthorizer (the CLI connects as User:ANONYMOUS, a super user here); on one
// without an authorizer it says how to turn ACLs on.
func TestCLIACLs(t *testing.T) {
	b := StartBroker(t, "authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer", "super.users=User:ANONYMOUS")
	sluiceOK(t, b.Addr, "", "acl", "create", "--allow", "User:alice", "--operation", "Read,Describe", "--topic", "orders")
	sluiceOK(t, b.Addr, "", "acl", "create", "--deny", "User:bob", "--operation", "Write", "--topic", "pay-", "--prefixed")
	type acl struct {
		Principal, Resource_type, Resource_name, Pattern, Operation, Permission string
	}
	var acls []acl
	sluiceJSON(t, b.Addr, &acls, "acl", "list")
	if got := fmt.Sprint(acls); len(acls) != 3 ||
		!strings.Contains(got, "{User:alice TOPIC orders LITERAL READ ALLOW}") ||
		!strings.Contains(got, "{User:bob TOPIC pay- PREFIXED WRITE DENY}") {
		t.Fatalf("acl list: %s", got)
	}
	sluiceJSON(t, b.Addr, &acls, "acl", "list", "--topic", "orders")
	if len(acls) != 2 {
		t.Fatalf("acl list --topic orders: %+v", acls)
	}
	sluiceOK(t, b.Addr, "", "acl", "delete", "--allow", "User:alice", "--topic", "orders")
	sluiceJSON(t, b.Addr, &acls, "acl", "list")
	if len(acls) != 1 || acls[0].Principal != "User:bob" {
		t.Fatalf("acl list after deleting alice's: %+v", acls)
	}
	if _, stderr, code := sluiceCLI(t, b.Addr, "", "acl", "create", "--topic", "x"); code != 2 || !strings.Contains(stderr, "acl create wants") {
		t.Errorf("acl create without a principal: exit %d, stderr %q", code, stderr)
	}
	plain := StartBroker(t)
	if _, stderr, code := sluiceCLI(t, plain.Addr, "", "acl", "list"); code != 1 || !strings.Contains(stderr, "no authorizer") {
		t.Errorf("acl list without an authorizer: exit %d, stderr %q", code, stderr)
	}
}

// TestCLIUsers: `sluice user set-scram` creates a SCRAM credential a client logs in with (the
// password read from stdin), `user list` shows its mechanism and iterations and never the
// secret, and `user delete-scram` ends the login.
func TestCLIUsers(t *testing.T) {
	b, saslAddr := startScramQuotaBroker(t)
	const pass = "dave-secret-81c2"
	sluiceOK(t, b.Addr, pass+"\n", "user", "set-scram", "dave", "--mechanism", "SCRAM-SHA-512", "--iterations", "8192")
	sluiceOK(t, b.Addr, "", "user", "set-scram", "dave", "--mechanism", "SCRAM-SHA-256", "--password", pass)
	if err := scramLogin512(t, saslAddr, "dave", pass); err != nil {
		t.Fatalf("SCRAM-SHA-512 login with the password set from stdin: %v", err)
	}
	if err := scramLogin(t, saslAddr, "dave", pass); err != nil {
		t.Fatalf("SCRAM-SHA-256 login: %v", err)
	}
	type user struct {
		User, Mechanism string
		Iterations      int32
	}
	var users []user
	sluiceJSON(t, b.Addr, &users, "user", "list")
	if got := fmt.Sprint(users); got != "[{dave SCRAM-SHA-256 4096} {dave SCRAM-SHA-512 8192}]" {
		t.Fatalf("user list: %s", got)
	}
	if out := sluiceOK(t, b.Addr, "", "user", "list", "dave"); strings.Contains(out, pass) || !strings.Contains(out, "SCRAM-SHA-512") {
		t.Fatalf("user list dave (table):\n%s", out)
	}
	sluiceOK(t, b.Addr, "", "user", "delete-scram", "dave", "--mechanism", "SCRAM-SHA-512")
	if err := scramLogin512(t, saslAddr, "dave", pass); err == nil {
		t.Fatal("SCRAM-SHA-512 login after delete-scram succeeded")
	}
	if _, stderr, code := sluiceCLI(t, b.Addr, "", "user", "set-scram"); code != 2 || !strings.Contains(stderr, "wants one user name") {
		t.Errorf("user set-scram without a name: exit %d, stderr %q", code, stderr)
	}
	if _, stderr, code := sluiceCLI(t, b.Addr, "", "user", "set-scram", "erin", "--mechanism", "SCRAM-SHA-1"); code != 2 || !strings.Contains(stderr, "SCRAM-SHA-1") {
		t.Errorf("user set-scram with an unknown mechanism: exit %d, stderr %q", code, stderr)
	}
}
