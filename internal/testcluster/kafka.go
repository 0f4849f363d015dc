package testcluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// KafkaStartDeadline bounds how long an Apache Kafka node (a JVM) may take to answer
// ApiVersions after a start.
const KafkaStartDeadline = 3 * time.Minute

// KafkaClusterID is the cluster id every Apache Kafka cluster started here is formatted with
// (StorageTool wants 16 bytes, base64url without padding).
const KafkaClusterID = "c2x1aWNlLWJlbmNoLTAwMQ"

// DefaultKafkaJVMOpts are kafka-server-start.sh's defaults: a fixed 1 GiB heap and
// KAFKA_JVM_PERFORMANCE_OPTS.
var DefaultKafkaJVMOpts = []string{"-Xmx1g", "-Xms1g", "-server", "-XX:+UseG1GC", "-XX:MaxGCPauseMillis=20",
	"-XX:InitiatingHeapOccupancyPercent=35", "-XX:+ExplicitGCInvokesConcurrent", "-Djava.awt.headless=true"}

// KafkaOptions describe an Apache Kafka cluster of KRaft combined (broker+controller) nodes run
// from a directory of jars (scripts/fetch-kafka.sh prints it).
type KafkaOptions struct {
	// Nodes is the number of nodes; node i (from 0) has node.id i+1. All are voters of a
	// static controller.quorum.voters line.
	Nodes int
	// Lib is the directory holding Kafka's jars.
	Lib string
	// Java is the java binary ("" means java on PATH).
	Java string
	// JVMOpts replace DefaultKafkaJVMOpts when set.
	JVMOpts []string
	// Settings ("key=value") apply to every node after the defaults (a later key wins).
	Settings []string
	// BaseDir holds node-<id> directories (server.properties, log4j2.properties, data/); ""
	// means a fresh temporary directory that Close removes.
	BaseDir string
	// Output, when set, returns the writer for node i's log (default: discarded); the storage
	// format's output goes there too.
	Output func(i int) io.Writer
	// Listeners, when set, returns node i's further client listeners, name → host:port (e.g.
	// "SSL" → a free port). Each is listed in listeners and advertised.listeners and mapped to
	// the security protocol of its own name; its ssl.* and sasl.* keys go in Settings.
	Listeners func(i int) map[string]string
}

// kafkaLog4j2 keeps Kafka's own logging to warnings on the console.
const kafkaLog4j2 = `status = warn
appender.console.type = Console
appender.console.name = STDOUT
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = WARN
rootLogger.appenderRef.stdout.ref = STDOUT
`

// KafkaDefaults are the settings a node of an n-node Apache Kafka cluster gets before
// KafkaOptions.Settings: internal topics replicated min(n,3) ways with a min ISR of min(n,2),
// no initial rebalance delay.
func KafkaDefaults(n int) []string {
	rf, isr := strconv.Itoa(min(n, 3)), strconv.Itoa(min(n, 2))
	return []string{
		"offsets.topic.replication.factor=" + rf,
		"transaction.state.log.replication.factor=" + rf,
		"transaction.state.log.min.isr=" + isr,
		"share.coordinator.state.topic.replication.factor=" + rf,
		"share.coordinator.state.topic.min.isr=" + isr,
		"group.initial.rebalance.delay.ms=0",
	}
}

// PrepareKafka writes every node's server.properties and formats its storage (StorageTool
// format, the nodes in parallel) without starting them.
func PrepareKafka(opts KafkaOptions) (*Cluster, error) {
	n := opts.Nodes
	if n < 1 {
		return nil, errors.New("testcluster: at least one node")
	}
	if opts.Lib == "" {
		return nil, errors.New("testcluster: KafkaOptions.Lib names no jar directory")
	}
	java := opts.Java
	if java == "" {
		java = "java"
	}
	jvm := opts.JVMOpts
	if len(jvm) == 0 {
		jvm = DefaultKafkaJVMOpts
	}
	c := &Cluster{baseDir: opts.BaseDir, startDeadline: KafkaStartDeadline}
	if c.baseDir == "" {
		dir, err := os.MkdirTemp("", "kafka-cluster-")
		if err != nil {
			return nil, err
		}
		c.baseDir, c.ownDir = dir, true
	}
	ports, err := FreePorts(2 * n)
	if err != nil {
		return nil, err
	}
	var voters []string
	for i := range n {
		voters = append(voters, fmt.Sprintf("%d@127.0.0.1:%d", i+1, ports[n+i]))
	}
	cp := filepath.Join(opts.Lib, "*")
	formatErrs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[i]))
		caddr := net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[n+i]))
		dir := filepath.Join(c.baseDir, fmt.Sprintf("node-%d", i+1))
		data := filepath.Join(dir, "data")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, err
		}
		listeners, advertised := fmt.Sprintf("PLAINTEXT://%s,CONTROLLER://%s", addr, caddr), "PLAINTEXT://"+addr
		protocols := "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT"
		if opts.Listeners != nil {
			extra := opts.Listeners(i)
			for _, name := range slices.Sorted(maps.Keys(extra)) {
				listeners += "," + name + "://" + extra[name]
				advertised += "," + name + "://" + extra[name]
				protocols += "," + name + ":" + name
			}
		}
		props := append([]string{
			"process.roles=broker,controller",
			fmt.Sprintf("node.id=%d", i+1),
			"controller.quorum.voters=" + strings.Join(voters, ","),
			"listeners=" + listeners,
			"advertised.listeners=" + advertised,
			"controller.listener.names=CONTROLLER",
			"inter.broker.listener.name=PLAINTEXT",
			"listener.security.protocol.map=" + protocols,
			"log.dirs=" + data,
		}, KafkaDefaults(n)...)
		props = append(props, opts.Settings...)
		propsPath := filepath.Join(dir, "server.properties")
		if err := os.WriteFile(propsPath, []byte(propertiesFile(props)), 0o644); err != nil {
			return nil, err
		}
		log4j := filepath.Join(dir, "log4j2.properties")
		if err := os.WriteFile(log4j, []byte(kafkaLog4j2), 0o644); err != nil {
			return nil, err
		}
		out := io.Writer(io.Discard)
		if opts.Output != nil {
			out = opts.Output(i)
		}
		argv := append(append([]string{java}, jvm...), "-Dlog4j2.configurationFile="+log4j, "-cp", cp, "kafka.Kafka", propsPath)
		node, err := NewNode(NodeConfig{Command: argv, ID: int32(i + 1), Name: "kafka", Addr: addr, ControllerAddr: caddr, Dir: data, Output: out})
		if err != nil {
			return nil, err
		}
		c.Nodes = append(c.Nodes, node)
		wg.Add(1)
		go func() {
			defer wg.Done()
			format := exec.Command(java, "-cp", cp, "kafka.tools.StorageTool", "format", "-t", KafkaClusterID, "-c", propsPath)
			format.Stdout, format.Stderr = out, out
			if err := format.Run(); err != nil {
				formatErrs[i] = fmt.Errorf("kafka node %d: storage format: %w", i+1, err)
			}
		}()
	}
	wg.Wait()
	if err := errors.Join(formatErrs...); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// StartKafka formats and starts an Apache Kafka cluster (every node at once: the controllers
// need a quorum before any broker registers) and waits until every node answers ApiVersions
// and Metadata lists all of them. On error the started nodes are stopped.
func StartKafka(opts KafkaOptions) (*Cluster, error) {
	c, err := PrepareKafka(opts)
	if err != nil {
		return nil, err
	}
	if err := c.StartAll(); err != nil {
		c.Close()
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), KafkaStartDeadline)
	defer cancel()
	if err := c.WaitBrokers(ctx, len(c.Nodes)); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// WaitBrokers polls Metadata until it lists n brokers and a controller, or ctx ends.
func (c *Cluster) WaitBrokers(ctx context.Context, n int) error {
	var last error
	for {
		last = func() error {
			adm, cl, err := c.Admin()
			if err != nil {
				return err
			}
			defer cl.Close()
			rctx, cancel := context.WithTimeout(ctx, 3*time.Second)
			defer cancel()
			md, err := adm.BrokerMetadata(rctx)
			if err != nil {
				return err
			}
			if len(md.Brokers) < n || md.Controller < 0 {
				return fmt.Errorf("metadata lists %d of %d brokers, controller %d", len(md.Brokers), n, md.Controller)
			}
			return nil
		}()
		if last == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("brokers not all registered: %v (%w)", last, ctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// propertiesFile renders "key=value" settings as a Java properties file, one key once: a
// later setting of a key replaces the earlier one in place.
func propertiesFile(settings []string) string {
	values := map[string]string{}
	var order []string
	for _, s := range settings {
		k, v, _ := strings.Cut(s, "=")
		if _, seen := values[k]; !seen {
			order = append(order, k)
		}
		values[k] = v
	}
	var b strings.Builder
	for _, k := range order {
		fmt.Fprintf(&b, "%s=%s\n", k, values[k])
	}
	return b.String()
}
