package compattests

import (
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Cluster is several sluice processes forming one cluster: combined nodes (broker and
// controller) with a static quorum of all of them, each on its own free ports and data dir.
type Cluster struct {
	Nodes []*Broker // Nodes[i] has node.id i+1
	// ControllerAddrs are the controller listeners, by node index.
	ControllerAddrs []string
}

// StartCluster starts n nodes at once (a node opens its client port only once the quorum has
// registered it, so they cannot be started one after another) and waits until every one
// answers ApiVersions. settings apply to every node.
func StartCluster(t testing.TB, n int, settings ...string) *Cluster {
	t.Helper()
	c := &Cluster{}
	all := freePorts(t, 2*n) // distinct client and controller ports for every node
	ports := all[:n]
	var voters []string
	for i := range n {
		ctl := net.JoinHostPort("127.0.0.1", strconv.Itoa(all[n+i]))
		c.ControllerAddrs = append(c.ControllerAddrs, ctl)
		voters = append(voters, fmt.Sprintf("%d@%s", i+1, ctl))
	}
	for i := range n {
		own := append([]string{
			fmt.Sprintf("node.id=%d", i+1),
			fmt.Sprintf("listeners=PLAINTEXT://127.0.0.1:%d,CONTROLLER://%s", ports[i], c.ControllerAddrs[i]),
			"controller.listener.names=CONTROLLER",
			"controller.quorum.voters=" + strings.Join(voters, ","),
		}, settings...)
		c.Nodes = append(c.Nodes, newBroker(t, BrokerOptions{Port: ports[i]}, own...))
	}
	exited := make([]chan struct{}, n)
	for i, b := range c.Nodes {
		exited[i] = b.launch()
	}
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i, b := range c.Nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = b.ready(exited[i])
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("node %d: %v", i+1, err)
		}
	}
	return c
}

// Bootstrap is every node's client address, comma-separated.
func (c *Cluster) Bootstrap() []string {
	var out []string
	for _, b := range c.Nodes {
		out = append(out, b.Addr)
	}
	return out
}

// quorumLeader asks the controller listeners (DescribeQuorum, as kafka-metadata-quorum does)
// which node is the active controller.
func (c *Cluster) quorumLeader(t testing.TB) int32 {
	t.Helper()
	var leader int32 = -1
	waitFor(t, startDeadline, "the quorum to have a leader", func() error {
		var last error
		for _, addr := range c.ControllerAddrs {
			conn, err := net.DialTimeout("tcp", addr, time.Second)
			if err != nil {
				last = err
				continue
			}
			req := kmsg.NewPtrDescribeQuorumRequest()
			req.Version = 0
			rt := kmsg.NewDescribeQuorumRequestTopic()
			rt.Topic = "__cluster_metadata"
			rt.Partitions = []kmsg.DescribeQuorumRequestTopicPartition{kmsg.NewDescribeQuorumRequestTopicPartition()}
			req.Topics = []kmsg.DescribeQuorumRequestTopic{rt}
			resp := req.ResponseKind().(*kmsg.DescribeQuorumResponse)
			_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
			err = roundTrip(conn, req, resp, 1)
			conn.Close()
			if err != nil {
				last = err
				continue
			}
			if len(resp.Topics) == 1 && len(resp.Topics[0].Partitions) == 1 {
				if id := resp.Topics[0].Partitions[0].LeaderID; id >= 1 && int(id) <= len(c.Nodes) {
					leader = id
					return nil
				}
			}
			last = fmt.Errorf("%s answered %+v", addr, resp)
		}
		return last
	})
	return leader
}
