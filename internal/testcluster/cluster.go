package testcluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Fixed ports used when every node has an address of its own (Options.Hosts).
const (
	HostClientPort     = 9092
	HostControllerPort = 9093
)

// Options describe a cluster.
type Options struct {
	// Nodes is the number of nodes; node i (from 0) has node.id i+1.
	Nodes int
	// Bin is the sluice binary; "" means Binary().
	Bin string
	// Settings apply to every node ("key=value").
	Settings []string
	// Hosts, when set, gives node i the address Hosts[i] with the fixed ports HostClientPort and
	// HostControllerPort (each node in a network namespace of its own). Empty: every node on
	// 127.0.0.1 with free ports.
	Hosts []string
	// Wrapper, when set, returns node i's wrapper command (see NodeConfig.Wrapper).
	Wrapper func(i int) []string
	// BaseDir holds node-<id> data directories; "" means a fresh temporary directory that
	// Close removes.
	BaseDir string
	// Output, when set, returns the writer for node i's log (default: discarded).
	Output func(i int) io.Writer
	// Flags, when set, returns node i's further command-line flags (NodeConfig.Flags), e.g.
	// --debug-addr for one node's profile.
	Flags func(i int) []string
}

// Cluster is several sluice processes forming one cluster: combined nodes with a static quorum
// of all of them.
type Cluster struct {
	Nodes   []*Node // Nodes[i] has node.id i+1
	baseDir string
	ownDir  bool
	// startDeadline bounds each node's readiness wait in StartAll (StartDeadline when zero;
	// a JVM broker gets KafkaStartDeadline).
	startDeadline time.Duration
}

// Prepare builds a cluster's nodes without starting them.
func Prepare(opts Options) (*Cluster, error) {
	n := opts.Nodes
	if n < 1 {
		return nil, errors.New("testcluster: at least one node")
	}
	c := &Cluster{baseDir: opts.BaseDir}
	if c.baseDir == "" {
		dir, err := os.MkdirTemp("", "sluice-cluster-")
		if err != nil {
			return nil, err
		}
		c.baseDir, c.ownDir = dir, true
	}
	clientAddrs, controllerAddrs := make([]string, n), make([]string, n)
	if len(opts.Hosts) > 0 {
		if len(opts.Hosts) != n {
			return nil, fmt.Errorf("testcluster: %d hosts for %d nodes", len(opts.Hosts), n)
		}
		for i, h := range opts.Hosts {
			clientAddrs[i] = net.JoinHostPort(h, strconv.Itoa(HostClientPort))
			controllerAddrs[i] = net.JoinHostPort(h, strconv.Itoa(HostControllerPort))
		}
	} else {
		ports, err := FreePorts(2 * n) // distinct client and controller ports for every node
		if err != nil {
			return nil, err
		}
		for i := range n {
			clientAddrs[i] = net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[i]))
			controllerAddrs[i] = net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[n+i]))
		}
	}
	var voters []string
	for i := range n {
		voters = append(voters, fmt.Sprintf("%d@%s", i+1, controllerAddrs[i]))
	}
	for i := range n {
		cfg := NodeConfig{
			Bin:            opts.Bin,
			Addr:           clientAddrs[i],
			ControllerAddr: controllerAddrs[i],
			Dir:            filepath.Join(c.baseDir, fmt.Sprintf("node-%d", i+1)),
			Settings: append([]string{
				fmt.Sprintf("node.id=%d", i+1),
				"controller.listener.names=CONTROLLER",
				"controller.quorum.voters=" + strings.Join(voters, ","),
			}, opts.Settings...),
		}
		if opts.Wrapper != nil {
			cfg.Wrapper = opts.Wrapper(i)
		}
		if opts.Output != nil {
			cfg.Output = opts.Output(i)
		}
		if opts.Flags != nil {
			cfg.Flags = opts.Flags(i)
		}
		node, err := NewNode(cfg)
		if err != nil {
			return nil, err
		}
		c.Nodes = append(c.Nodes, node)
	}
	return c, nil
}

// Start builds and starts a cluster: every node at once (a node opens its client port only
// once the quorum has registered it, so they cannot be started one after another), then waits
// until every one answers ApiVersions. On error the started nodes are stopped.
func Start(opts Options) (*Cluster, error) {
	c, err := Prepare(opts)
	if err != nil {
		return nil, err
	}
	if err := c.StartAll(); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// StartAll launches every node and waits for all of them to be ready.
func (c *Cluster) StartAll() error {
	for _, node := range c.Nodes {
		if err := node.Launch(); err != nil {
			return err
		}
	}
	deadline := c.startDeadline
	if deadline == 0 {
		deadline = StartDeadline
	}
	errs := make([]error, len(c.Nodes))
	var wg sync.WaitGroup
	for i, node := range c.Nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := node.WaitReady(deadline); err != nil {
				errs[i] = fmt.Errorf("node %d: %w", i+1, err)
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// Node returns the node with node.id id (nil if none).
func (c *Cluster) Node(id int32) *Node {
	if id < 1 || int(id) > len(c.Nodes) {
		return nil
	}
	return c.Nodes[id-1]
}

// Bootstrap is every node's client address.
func (c *Cluster) Bootstrap() []string {
	var out []string
	for _, n := range c.Nodes {
		out = append(out, n.Addr)
	}
	return out
}

// ControllerAddrs are the controller listeners, by node index.
func (c *Cluster) ControllerAddrs() []string {
	var out []string
	for _, n := range c.Nodes {
		out = append(out, n.ControllerAddr)
	}
	return out
}

// Dir is the directory holding the nodes' data directories.
func (c *Cluster) Dir() string { return c.baseDir }

// StopAll sends every node SIGTERM (in parallel) and waits, SIGKILLing those that outstay
// StopDeadline.
func (c *Cluster) StopAll() {
	var wg sync.WaitGroup
	for _, n := range c.Nodes {
		wg.Add(1)
		go func() { defer wg.Done(); n.Stop() }()
	}
	wg.Wait()
}

// Close stops every node and removes the data directories if Start made them.
func (c *Cluster) Close() {
	c.StopAll()
	if c.ownDir {
		os.RemoveAll(c.baseDir)
	}
}

// QuorumLeader asks the controller listeners of the running, unpaused nodes (DescribeQuorum,
// as kafka-metadata-quorum does) which node is the active controller, once; -1 and an error
// when none answers with a leader.
func (c *Cluster) QuorumLeader() (int32, error) {
	var last error = errors.New("no node running")
	for _, n := range c.Nodes {
		if !n.Alive() || n.Paused() {
			continue
		}
		id, err := DescribeQuorumLeader(n.ControllerAddr)
		if err == nil && id >= 1 && int(id) <= len(c.Nodes) {
			return id, nil
		}
		if err == nil {
			err = fmt.Errorf("%s names leader %d", n.ControllerAddr, id)
		}
		last = err
	}
	return -1, last
}

// WaitQuorumLeader polls QuorumLeader until it answers or ctx ends.
func (c *Cluster) WaitQuorumLeader(ctx context.Context) (int32, error) {
	for {
		id, err := c.QuorumLeader()
		if err == nil {
			return id, nil
		}
		select {
		case <-ctx.Done():
			return -1, fmt.Errorf("no quorum leader: %v (%w)", err, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// DescribeQuorumLeader asks the controller listener at addr (DescribeQuorum v0) which node
// leads the metadata quorum.
func DescribeQuorumLeader(addr string) (int32, error) {
	conn, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return -1, err
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(3 * time.Second))
	req := kmsg.NewPtrDescribeQuorumRequest()
	req.Version = 0
	rt := kmsg.NewDescribeQuorumRequestTopic()
	rt.Topic = "__cluster_metadata"
	rt.Partitions = []kmsg.DescribeQuorumRequestTopicPartition{kmsg.NewDescribeQuorumRequestTopicPartition()}
	req.Topics = []kmsg.DescribeQuorumRequestTopic{rt}
	resp := req.ResponseKind().(*kmsg.DescribeQuorumResponse)
	if err := RoundTrip(conn, req, resp, 1); err != nil {
		return -1, err
	}
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		return -1, fmt.Errorf("%s answered DescribeQuorum with %d topics", addr, len(resp.Topics))
	}
	return resp.Topics[0].Partitions[0].LeaderID, nil
}

// Admin returns a franz-go admin client seeded with the running, unpaused nodes, with short
// dial and request timeouts (a caller closes the kgo client).
func (c *Cluster) Admin(extra ...kgo.Opt) (*kadm.Client, *kgo.Client, error) {
	var seeds []string
	for _, n := range c.Nodes {
		if n.Alive() && !n.Paused() {
			seeds = append(seeds, n.Addr)
		}
	}
	if len(seeds) == 0 {
		seeds = c.Bootstrap()
	}
	opts := append([]kgo.Opt{kgo.SeedBrokers(seeds...), kgo.DialTimeout(2 * time.Second),
		kgo.RequestTimeoutOverhead(3 * time.Second), kgo.RequestRetries(2)}, extra...)
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, nil, err
	}
	return kadm.NewClient(cl), cl, nil
}

// PartitionLeaders returns topic's leader per partition from one Metadata answer (-1 for
// a partition without a leader).
func (c *Cluster) PartitionLeaders(ctx context.Context, topic string) (map[int32]int32, error) {
	adm, cl, err := c.Admin()
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	md, err := adm.Metadata(ctx, topic)
	if err != nil {
		return nil, err
	}
	td, ok := md.Topics[topic]
	if !ok || td.Err != nil {
		return nil, fmt.Errorf("metadata for %s: %v", topic, td.Err)
	}
	out := map[int32]int32{}
	for _, p := range td.Partitions {
		out[p.Partition] = p.Leader
	}
	return out, nil
}
