package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"sluice/internal/testcluster"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// brokerProc is one broker under test: a cluster of one or more nodes started through
// internal/testcluster, the harness compat-tests and chaos use.
type brokerProc struct {
	Name     string   // "kafka" or "sluice"
	Addr     string   // host:port of node 1's PLAINTEXT listener
	Addrs    []string // every node's PLAINTEXT listener
	DataDir  string   // holds every node's directory; removed after the broker's run
	LogPath  string   // node 1's log
	LogPaths []string // every node's log
	// DebugAddr is node 1's pprof listener (sluice --debug-addr), "" when none.
	DebugAddr string
	cluster   *testcluster.Cluster
	logs      []*os.File
	// listeners are further client listeners by name (the tls mode's SSL and SASL_SSL), each
	// node's address; security are the client options each needs.
	listeners map[string][]string
	security  map[string][]kgo.Opt
}

// commonBrokerProps are set identically on both brokers: six partitions by default, every
// internal topic replicated min(nodes,3) ways, acks=all needing min(nodes,2) replicas in sync,
// no initial rebalance delay (so group joins do not dominate the consumer runs).
func commonBrokerProps(nodes int) map[string]string {
	rf, isr := strconv.Itoa(min(nodes, 3)), strconv.Itoa(min(nodes, 2))
	return map[string]string{
		"num.partitions":                           "6",
		"default.replication.factor":               rf,
		"min.insync.replicas":                      isr,
		"offsets.topic.replication.factor":         rf,
		"transaction.state.log.replication.factor": rf,
		"transaction.state.log.min.isr":            isr,
		"group.initial.rebalance.delay.ms":         "0",
		"auto.create.topics.enable":                "false",
	}
}

// kafkaJVMOpts are kafka-server-start.sh's defaults (a fixed 1 GiB heap per node).
var kafkaJVMOpts = testcluster.DefaultKafkaJVMOpts

// brokerSettings are the "key=value" settings of a broker of nodes nodes.
func brokerSettings(nodes int, fsyncEach bool) []string {
	props := commonBrokerProps(nodes)
	if fsyncEach {
		props["log.flush.interval.messages"] = "1"
	}
	var out []string
	for _, k := range sortedKeys(props) {
		out = append(out, k+"="+props[k])
	}
	return out
}

// nodeLogs opens one log file per node in dir.
func nodeLogs(dir, name string, nodes int) ([]*os.File, []string, error) {
	var files []*os.File
	var paths []string
	for i := range nodes {
		path := filepath.Join(dir, fmt.Sprintf("%s-node-%d.log", name, i+1))
		f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			for _, f := range files {
				f.Close()
			}
			return nil, nil, err
		}
		files, paths = append(files, f), append(paths, path)
	}
	return files, paths, nil
}

// startKafka formats fresh KRaft combined-mode nodes under dir and starts them.
func startKafka(lib, dir string, nodes int, fsyncEach bool) (*brokerProc, error) {
	logs, paths, err := nodeLogs(dir, "kafka", nodes)
	if err != nil {
		return nil, err
	}
	data := filepath.Join(dir, "data")
	c, err := testcluster.StartKafka(testcluster.KafkaOptions{Nodes: nodes, Lib: lib, JVMOpts: kafkaJVMOpts,
		Settings: brokerSettings(nodes, fsyncEach), BaseDir: data, Output: func(i int) io.Writer { return logs[i] }})
	if err != nil {
		closeAll(logs)
		return nil, fmt.Errorf("kafka did not start (logs %s): %w", strings.Join(paths, " "), err)
	}
	return newBrokerProc("kafka", c, data, logs, paths, ""), nil
}

// startSluice starts bin on fresh data directories under dir with the same settings as Kafka;
// with profile, node 1 serves pprof on a free port.
func startSluice(bin, dir string, nodes int, fsyncEach, profile bool) (*brokerProc, error) {
	logs, paths, err := nodeLogs(dir, "sluice", nodes)
	if err != nil {
		return nil, err
	}
	debugAddr := ""
	if profile {
		port, err := freePort()
		if err != nil {
			closeAll(logs)
			return nil, err
		}
		debugAddr = fmt.Sprintf("127.0.0.1:%d", port)
	}
	data := filepath.Join(dir, "data")
	c, err := testcluster.Start(testcluster.Options{Nodes: nodes, Bin: bin, Settings: brokerSettings(nodes, fsyncEach),
		BaseDir: data, Output: func(i int) io.Writer { return logs[i] },
		Flags: func(i int) []string {
			if i == 0 && debugAddr != "" {
				return []string{"--log-level", "warn", "--debug-addr", debugAddr}
			}
			return []string{"--log-level", "warn"}
		}})
	if err == nil {
		ctx, cancel := context.WithTimeout(context.Background(), testcluster.StartDeadline)
		err = c.WaitBrokers(ctx, nodes)
		cancel()
		if err != nil {
			c.Close()
		}
	}
	if err != nil {
		closeAll(logs)
		return nil, fmt.Errorf("sluice did not start (logs %s): %w", strings.Join(paths, " "), err)
	}
	return newBrokerProc("sluice", c, data, logs, paths, debugAddr), nil
}

func newBrokerProc(name string, c *testcluster.Cluster, data string, logs []*os.File, paths []string, debugAddr string) *brokerProc {
	return &brokerProc{Name: name, Addr: c.Nodes[0].Addr, Addrs: c.Bootstrap(), DataDir: data, LogPath: paths[0],
		LogPaths: paths, DebugAddr: debugAddr, cluster: c, logs: logs}
}

func closeAll(files []*os.File) {
	for _, f := range files {
		f.Close()
	}
}

func freePort() (int, error) {
	ports, err := testcluster.FreePorts(1)
	if err != nil {
		return 0, err
	}
	return ports[0], nil
}

func (b *brokerProc) pid() int { return b.cluster.Nodes[0].Pid() }

// pids are every node's process ids.
func (b *brokerProc) pids() []int {
	var out []int
	for _, n := range b.cluster.Nodes {
		out = append(out, n.Pid())
	}
	return out
}

// exited reports a node that is no longer running, nil while all run.
func (b *brokerProc) exited() error {
	for _, n := range b.cluster.Nodes {
		if !n.Alive() {
			return fmt.Errorf("node %d exited: %v", n.ID, n.ExitErr())
		}
	}
	return nil
}

// stop sends every node SIGTERM and waits (testcluster.StopDeadline, then SIGKILL).
func (b *brokerProc) stop() error {
	var mu sync.Mutex
	var killed []string
	var wg sync.WaitGroup
	for _, n := range b.cluster.Nodes { // in parallel, as Cluster.StopAll, but noting who was killed
		wg.Add(1)
		go func() {
			defer wg.Done()
			if n.Alive() && !n.Stop() {
				mu.Lock()
				killed = append(killed, fmt.Sprint(n.ID))
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	sort.Strings(killed)
	closeAll(b.logs)
	if len(killed) > 0 {
		return fmt.Errorf("%s nodes %s ignored SIGTERM; killed", b.Name, strings.Join(killed, ","))
	}
	return nil
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

// usage is a broker's resource use over one workload, summed over its nodes.
type usage struct {
	pids        []int
	cpuStart    []float64
	clientStart float64
}

func beginUsage(pids []int) (*usage, error) {
	u := &usage{pids: pids, clientStart: clientCPU()}
	for _, pid := range pids {
		if err := resetPeakRSS(pid); err != nil {
			return nil, err
		}
		c, err := procCPU(pid)
		if err != nil {
			return nil, err
		}
		u.cpuStart = append(u.cpuStart, c)
	}
	return u, nil
}

// clientCPU is the CPU time of this process (the franz-go load generator and end-to-end
// consumer) and of its finished children (Kafka's perf tools), in seconds. The brokers are
// children too, but live ones are not counted by RUSAGE_CHILDREN.
func clientCPU() float64 {
	var self, children syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &self)
	_ = syscall.Getrusage(syscall.RUSAGE_CHILDREN, &children)
	sec := func(t syscall.Timeval) float64 { return float64(t.Sec) + float64(t.Usec)/1e6 }
	return sec(self.Utime) + sec(self.Stime) + sec(children.Utime) + sec(children.Stime)
}

// clientSeconds is the load generator's CPU time since begin (clientCPU).
func (u *usage) clientSeconds() float64 { return clientCPU() - u.clientStart }

// end returns the CPU seconds all nodes used since begin and each node's peak RSS in MiB.
func (u *usage) end() (cpuSeconds float64, peakRSSMiB []float64, err error) {
	for i, pid := range u.pids {
		c, err := procCPU(pid)
		if err != nil {
			return 0, nil, err
		}
		hwm, err := procStatusKiB(pid, "VmHWM")
		if err != nil {
			return 0, nil, err
		}
		cpuSeconds += c - u.cpuStart[i]
		peakRSSMiB = append(peakRSSMiB, float64(hwm)/1024)
	}
	return cpuSeconds, peakRSSMiB, nil
}

// createTopic creates topic with partitions and replication factor rf and waits until every
// partition has a leader and, for rf > 1, every replica in its ISR.
func createTopic(ctx context.Context, addrs []string, topic string, partitions int32, rf int16) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addrs...))
	if err != nil {
		return err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	resp, err := adm.CreateTopic(ctx, partitions, rf, nil, topic)
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
					if p.Leader < 0 || p.Err != nil || len(p.ISR) < int(rf) {
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

func deleteTopic(ctx context.Context, addrs []string, topic string) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addrs...))
	if err != nil {
		return
	}
	defer cl.Close()
	_, _ = kadm.NewClient(cl).DeleteTopics(ctx, topic)
}
