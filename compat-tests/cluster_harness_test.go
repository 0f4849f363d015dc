package compattests

import (
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"testing"

	"sluice/internal/testcluster"
)

// Cluster is several sluice processes forming one cluster (a testcluster.Cluster whose nodes
// are Brokers: their failures fail the test, their logs are printed when it fails).
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
	logs := make([]*testcluster.TailBuffer, n)
	for i := range logs {
		logs[i] = &testcluster.TailBuffer{}
	}
	tc, err := testcluster.Prepare(testcluster.Options{
		Nodes:    n,
		Bin:      sluiceBinary(t),
		Settings: settings,
		BaseDir:  t.TempDir(),
		Output:   func(i int) io.Writer { return logs[i] },
	})
	if err != nil {
		t.Fatal(err)
	}
	c := &Cluster{ControllerAddrs: tc.ControllerAddrs()}
	for i, node := range tc.Nodes {
		_, port, _ := net.SplitHostPort(node.Addr)
		p, _ := strconv.Atoi(port)
		c.Nodes = append(c.Nodes, wrapNode(t, node, logs[i], p))
	}
	if err := tc.StartAll(); err != nil {
		t.Fatal(err)
	}
	return c
}

// Bootstrap is every node's client address.
func (c *Cluster) Bootstrap() []string {
	var out []string
	for _, b := range c.Nodes {
		out = append(out, b.Addr)
	}
	return out
}

// quorumLeader asks the controller listeners (DescribeQuorum, as kafka-metadata-quorum does)
// of the running, unpaused nodes which node is the active controller, waiting up to
// startDeadline for one.
func (c *Cluster) quorumLeader(t testing.TB) int32 {
	t.Helper()
	var leader int32 = -1
	waitFor(t, startDeadline, "the quorum to have a leader", func() error {
		last := errors.New("no controller running")
		for i, addr := range c.ControllerAddrs {
			if addr == "" || !c.Nodes[i].Alive() || c.Nodes[i].Paused() {
				continue
			}
			id, err := testcluster.DescribeQuorumLeader(addr)
			if err == nil && id >= 1 {
				leader = id
				return nil
			}
			if err == nil {
				err = fmt.Errorf("%s names leader %d", addr, id)
			}
			last = err
		}
		return last
	})
	return leader
}
