// This file checks the operator endpoints on a three-node cluster: readiness of every node,
// one active controller, and under-replicated partitions reported while a broker is down and
// cleared once it is back.

package compattests

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// startClusterWithHTTP is StartCluster with --http-addr on every node; it returns the cluster
// and each node's endpoint base URL.
func startClusterWithHTTP(t *testing.T, n int, settings ...string) (*Cluster, []string) {
	t.Helper()
	c := &Cluster{}
	all := freePorts(t, 3*n)
	var voters, bases []string
	for i := range n {
		ctl := net.JoinHostPort("127.0.0.1", strconv.Itoa(all[n+i]))
		c.ControllerAddrs = append(c.ControllerAddrs, ctl)
		voters = append(voters, fmt.Sprintf("%d@%s", i+1, ctl))
	}
	for i := range n {
		own := append([]string{
			fmt.Sprintf("node.id=%d", i+1),
			fmt.Sprintf("listeners=PLAINTEXT://127.0.0.1:%d,CONTROLLER://%s", all[i], c.ControllerAddrs[i]),
			"controller.listener.names=CONTROLLER",
			"controller.quorum.voters=" + strings.Join(voters, ","),
		}, settings...)
		httpAddr := net.JoinHostPort("127.0.0.1", strconv.Itoa(all[2*n+i]))
		b := newBroker(t, BrokerOptions{Port: all[i], Flags: []string{"--http-addr", httpAddr}}, own...)
		bases = append(bases, "http://"+httpAddr)
		c.Nodes = append(c.Nodes, b)
	}
	for i, b := range c.Nodes {
		if err := b.Launch(); err != nil {
			t.Fatalf("node %d: %v", i+1, err)
		}
	}
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i, b := range c.Nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = b.WaitReady(startDeadline)
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("node %d: %v", i+1, err)
		}
	}
	return c, bases
}

func readyz(base string) error {
	code, body, err := httpGet(base + "/readyz")
	if err != nil {
		return err
	}
	if code != http.StatusOK {
		return fmt.Errorf("status %d: %s", code, strings.TrimSpace(body))
	}
	return nil
}

func TestMetricsClusterUnderReplicated(t *testing.T) {
	c, bases := startClusterWithHTTP(t, 3, "replica.lag.time.max.ms=2000")
	for i, base := range bases {
		waitFor(t, 30*time.Second, fmt.Sprintf("node %d ready", i+1), func() error { return readyz(base) })
	}
	sumOver := func(nodes []int, name string, labels map[string]string) float64 {
		var sum float64
		for _, i := range nodes {
			v, _ := series(scrape(t, bases[i]), name, labels)
			sum += v
		}
		return sum
	}
	everyone := []int{0, 1, 2}
	if active := sumOver(everyone, "sluice_active_controller", nil); active != 1 {
		t.Errorf("sluice_active_controller summed over the nodes: %v, want 1", active)
	}

	const topic = "metrics-replicated"
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.Bootstrap()...), kgo.DefaultProduceTopic(topic))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, 3, 3, nil, topic); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 30*time.Second, "every partition led and fully replicated", func() error {
		if leaders := sumOver(everyone, "sluice_partition_leader", map[string]string{"topic": topic}); leaders != 3 {
			return fmt.Errorf("%v leaders reported, want 3", leaders)
		}
		if isr := sumOver(everyone, "sluice_partition_in_sync_replicas", map[string]string{"topic": topic}); isr != 9 {
			return fmt.Errorf("ISR sizes sum to %v, want 9", isr)
		}
		if u := sumOver(everyone, "sluice_under_replicated_partitions", nil); u != 0 {
			return fmt.Errorf("%v under-replicated", u)
		}
		return nil
	})

	// Node 3 dies: the partitions the survivors lead lose it from their ISR and are reported
	// under-replicated (on every node's own count), while writes keep coming.
	c.Nodes[2].Kill()
	survivors := []int{0, 1}
	waitFor(t, 60*time.Second, "the survivors report under-replicated partitions", func() error {
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte("x")}).FirstErr(); err != nil {
			return err
		}
		if u := sumOver(survivors, "sluice_under_replicated_partitions", nil); u == 0 {
			return fmt.Errorf("none reported yet")
		}
		if s := sumOver(survivors, "sluice_partition_isr_shrinks_total", map[string]string{"topic": topic}); s == 0 {
			return fmt.Errorf("no ISR shrink counted yet")
		}
		return nil
	})
	// The partitions node 3 led have new leaders: every survivor applied those elections.
	if e, _ := series(scrape(t, bases[0]), "sluice_leader_elections_total", nil); e < 1 {
		t.Errorf("sluice_leader_elections_total on node 1 after node 3 died: %v", e)
	}
	if out := sumOver(survivors, "sluice_partition_replication_bytes_out_total", map[string]string{"topic": topic}); out == 0 {
		t.Errorf("no replication bytes out counted on the leaders")
	}

	// Back: it is ready again once unfenced, and the partitions are fully replicated.
	c.Nodes[2].Restart()
	waitFor(t, 60*time.Second, "node 3 ready after restart", func() error { return readyz(bases[2]) })
	waitFor(t, 60*time.Second, "no under-replicated partitions after the restart", func() error {
		if u := sumOver(everyone, "sluice_under_replicated_partitions", nil); u != 0 {
			return fmt.Errorf("%v under-replicated", u)
		}
		return nil
	})
	if e := sumOver(survivors, "sluice_partition_isr_expands_total", map[string]string{"topic": topic}); e == 0 {
		t.Errorf("node 3 rejoined the ISRs, but no ISR expansion was counted")
	}
}
