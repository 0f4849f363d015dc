package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// brokerProc is one running broker under test.
type brokerProc struct {
	Name    string // "kafka" or "sluice"
	Addr    string // host:port of its PLAINTEXT listener
	DataDir string
	LogPath string
	cmd     *exec.Cmd
	exited  chan error
}

// commonBrokerProps are set identically on both brokers: one node, replication factor 1 for
// every internal topic, six partitions by default, no initial rebalance delay (so group joins
// do not dominate the consumer runs).
func commonBrokerProps(dataDir, addr string) map[string]string {
	return map[string]string{
		"log.dirs":                                 dataDir,
		"num.partitions":                           "6",
		"default.replication.factor":               "1",
		"offsets.topic.replication.factor":         "1",
		"transaction.state.log.replication.factor": "1",
		"transaction.state.log.min.isr":            "1",
		"group.initial.rebalance.delay.ms":         "0",
		"auto.create.topics.enable":                "false",
	}
}

// kafkaJVMOpts are kafka-server-start.sh's defaults: a fixed 1 GiB heap and
// KAFKA_JVM_PERFORMANCE_OPTS.
var kafkaJVMOpts = []string{"-Xmx1g", "-Xms1g", "-server", "-XX:+UseG1GC", "-XX:MaxGCPauseMillis=20",
	"-XX:InitiatingHeapOccupancyPercent=35", "-XX:+ExplicitGCInvokesConcurrent", "-Djava.awt.headless=true"}

func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

func writeProps(path string, props map[string]string) error {
	var b strings.Builder
	for _, k := range sortedKeys(props) {
		fmt.Fprintf(&b, "%s=%s\n", k, props[k])
	}
	return os.WriteFile(path, []byte(b.String()), 0o644)
}

// startKafka formats a fresh KRaft combined-mode node in dir and starts it.
func startKafka(ctx context.Context, lib, dir string, fsyncEach bool) (*brokerProc, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	cport, err := freePort()
	if err != nil {
		return nil, err
	}
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	data := filepath.Join(dir, "data")
	props := commonBrokerProps(data, addr)
	props["process.roles"] = "broker,controller"
	props["node.id"] = "1"
	props["controller.quorum.voters"] = fmt.Sprintf("1@127.0.0.1:%d", cport)
	props["listeners"] = fmt.Sprintf("PLAINTEXT://%s,CONTROLLER://127.0.0.1:%d", addr, cport)
	props["advertised.listeners"] = "PLAINTEXT://" + addr
	props["controller.listener.names"] = "CONTROLLER"
	props["inter.broker.listener.name"] = "PLAINTEXT"
	props["listener.security.protocol.map"] = "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT"
	props["share.coordinator.state.topic.replication.factor"] = "1"
	props["share.coordinator.state.topic.min.isr"] = "1"
	if fsyncEach {
		props["log.flush.interval.messages"] = "1"
	}
	propsPath := filepath.Join(dir, "server.properties")
	if err := writeProps(propsPath, props); err != nil {
		return nil, err
	}
	cp := filepath.Join(lib, "*")
	logPath := filepath.Join(dir, "kafka.log")
	logf, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	defer logf.Close()
	format := exec.CommandContext(ctx, "java", "-cp", cp, "kafka.tools.StorageTool", "format",
		"-t", "c2x1aWNlLWJlbmNoLTAwMQ", "-c", propsPath)
	format.Stdout, format.Stderr = logf, logf
	if err := format.Run(); err != nil {
		return nil, fmt.Errorf("kafka storage format (see %s): %w", logPath, err)
	}
	args := append(append([]string{}, kafkaJVMOpts...),
		"-Dlog4j2.configurationFile="+filepath.Join(dir, "log4j2.properties"),
		"-cp", cp, "kafka.Kafka", propsPath)
	if err := os.WriteFile(filepath.Join(dir, "log4j2.properties"), []byte(log4j2Props), 0o644); err != nil {
		return nil, err
	}
	return launch("kafka", addr, data, logPath, exec.Command("java", args...))
}

// log4j2Props keeps Kafka's own logging to warnings on the console.
const log4j2Props = `status = warn
appender.console.type = Console
appender.console.name = STDOUT
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = WARN
rootLogger.appenderRef.stdout.ref = STDOUT
`

// startSluice starts bin/sluice on a fresh data directory with the same settings as Kafka.
func startSluice(bin, dir string, fsyncEach bool) (*brokerProc, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	data := filepath.Join(dir, "data")
	props := commonBrokerProps(data, addr)
	props["listeners"] = "PLAINTEXT://" + addr
	if fsyncEach {
		props["log.flush.interval.messages"] = "1"
	}
	args := []string{"--log-level", "warn"}
	for _, k := range sortedKeys(props) {
		args = append(args, "--set", k+"="+props[k])
	}
	return launch("sluice", addr, data, filepath.Join(dir, "sluice.log"), exec.Command(bin, args...))
}

func launch(name, addr, data, logPath string, cmd *exec.Cmd) (*brokerProc, error) {
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, err
	}
	b := &brokerProc{Name: name, Addr: addr, DataDir: data, LogPath: logPath, cmd: cmd, exited: make(chan error, 1)}
	go func() { b.exited <- cmd.Wait(); logf.Close() }()
	if err := b.waitReady(90 * time.Second); err != nil {
		b.stop()
		return nil, fmt.Errorf("%s did not become ready (log %s): %w", name, logPath, err)
	}
	return b, nil
}

func (b *brokerProc) pid() int { return b.cmd.Process.Pid }

// waitReady waits until a Metadata request lists the broker itself.
func (b *brokerProc) waitReady(timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	var last error
	for time.Now().Before(deadline) {
		select {
		case err := <-b.exited:
			b.exited <- err
			return fmt.Errorf("exited: %v", err)
		default:
		}
		last = func() error {
			cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr), kgo.RequestRetries(0))
			if err != nil {
				return err
			}
			defer cl.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			m, err := kadm.NewClient(cl).BrokerMetadata(ctx)
			if err != nil {
				return err
			}
			if len(m.Brokers) == 0 || m.Controller < 0 {
				return errors.New("no broker or controller in metadata yet")
			}
			return nil
		}()
		if last == nil {
			return nil
		}
		time.Sleep(250 * time.Millisecond)
	}
	return last
}

// stop sends SIGTERM and waits up to a minute before SIGKILL.
func (b *brokerProc) stop() error {
	_ = b.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-b.exited:
		var exit *exec.ExitError
		if errors.As(err, &exit) && exit.ExitCode() == 128+int(syscall.SIGTERM) {
			return nil // the JVM's exit status after a clean shutdown on SIGTERM
		}
		return err
	case <-time.After(60 * time.Second):
		_ = b.cmd.Process.Kill()
		return fmt.Errorf("%s ignored SIGTERM for 60s; killed", b.Name)
	}
}

// procCPU returns user+system CPU seconds of pid (all threads), from /proc/<pid>/stat.
func procCPU(pid int) (float64, error) {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	s := string(raw)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, fmt.Errorf("unexpected /proc/%d/stat", pid)
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 13 {
		return 0, fmt.Errorf("short /proc/%d/stat", pid)
	}
	// Fields 14 and 15 of stat (utime, stime) in clock ticks; f[0] is field 3.
	ut, err1 := strconv.ParseFloat(f[11], 64)
	st, err2 := strconv.ParseFloat(f[12], 64)
	if err := errors.Join(err1, err2); err != nil {
		return 0, err
	}
	return (ut + st) / clockTicks, nil
}

// clockTicks is USER_HZ, 100 on every Linux architecture Go supports.
const clockTicks = 100

// procStatusKiB reads a "Name:   N kB" line of /proc/<pid>/status.
func procStatusKiB(pid int, key string) (int64, error) {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if rest, ok := strings.CutPrefix(line, key+":"); ok {
			return strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
		}
	}
	return 0, fmt.Errorf("%s not in /proc/%d/status", key, pid)
}

// resetPeakRSS makes VmHWM start again from the current RSS (proc(5), clear_refs value 5), so
// each workload reports its own peak.
func resetPeakRSS(pid int) error {
	return os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", pid), []byte("5"), 0)
}

// usage is a broker's resource use over one workload.
type usage struct {
	pid      int
	cpuStart float64
}

func beginUsage(pid int) (*usage, error) {
	if err := resetPeakRSS(pid); err != nil {
		return nil, err
	}
	c, err := procCPU(pid)
	if err != nil {
		return nil, err
	}
	return &usage{pid: pid, cpuStart: c}, nil
}

// end returns CPU seconds used since begin and the peak RSS in MiB.
func (u *usage) end() (cpuSeconds, peakRSSMiB float64, err error) {
	c, err := procCPU(u.pid)
	if err != nil {
		return 0, 0, err
	}
	hwm, err := procStatusKiB(u.pid, "VmHWM")
	if err != nil {
		return 0, 0, err
	}
	return c - u.cpuStart, float64(hwm) / 1024, nil
}

// createTopic creates topic with partitions and replication factor 1 and waits until every
// partition has a leader.
func createTopic(ctx context.Context, addr, topic string, partitions int32) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		return err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	resp, err := adm.CreateTopic(ctx, partitions, 1, nil, topic)
	if err != nil {
		return err
	}
	if resp.Err != nil {
		return fmt.Errorf("create %s: %w", topic, resp.Err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		md, err := adm.Metadata(ctx, topic)
		if err == nil {
			if td, ok := md.Topics[topic]; ok && td.Err == nil && len(td.Partitions) == int(partitions) {
				ready := true
				for _, p := range td.Partitions {
					if p.Leader < 0 || p.Err != nil {
						ready = false
					}
				}
				if ready {
					return nil
				}
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("topic %s has no leaders after 30s (last error %v)", topic, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func deleteTopic(ctx context.Context, addr, topic string) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		return
	}
	defer cl.Close()
	_, _ = kadm.NewClient(cl).DeleteTopics(ctx, topic)
}
