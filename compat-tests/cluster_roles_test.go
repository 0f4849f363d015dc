package compattests

import (
	"context"
	"errors"
	"fmt"
	"net"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// process.roles of the nodes of StartClusterWith.
const (
	RoleCombined   = "broker,controller"
	RoleController = "controller"
	RoleBroker     = "broker"
)

// StartClusterWith is StartCluster with each node's process.roles: roles[i] is node i+1's.
// The nodes with the controller role are the voters of a static quorum. A broker-only node
// has no controller listener (c.ControllerAddrs[i] is ""); a controller-only node no client
// listener (c.Nodes[i].Addr is its controller listener, which answers ApiVersions).
func StartClusterWith(t testing.TB, roles []string, settings ...string) *Cluster {
	t.Helper()
	return startClusterNodes(t, roles, nil, settings...)
}

// clusterNode is what one node of startClusterNodes has beyond the common settings.
type clusterNode struct {
	Dir      string   // log.dirs; empty: a fresh temporary directory
	Settings []string // after the common ones
}

// startClusterNodes is StartClusterWith with node i+1's own log directory and settings in
// nodes[i] (where present).
func startClusterNodes(t testing.TB, roles []string, nodes map[int]clusterNode, settings ...string) *Cluster {
	t.Helper()
	n := len(roles)
	c := &Cluster{}
	all := freePorts(t, 2*n)
	var voters []string
	for i, role := range roles {
		ctl := ""
		if strings.Contains(role, "controller") {
			ctl = net.JoinHostPort("127.0.0.1", strconv.Itoa(all[n+i]))
			voters = append(voters, fmt.Sprintf("%d@%s", i+1, ctl))
		}
		c.ControllerAddrs = append(c.ControllerAddrs, ctl)
	}
	for i, role := range roles {
		client := fmt.Sprintf("PLAINTEXT://127.0.0.1:%d", all[i])
		port := all[i]
		var listeners string
		switch role {
		case RoleCombined:
			listeners = client + ",CONTROLLER://" + c.ControllerAddrs[i]
		case RoleController:
			listeners, port = "CONTROLLER://"+c.ControllerAddrs[i], all[n+i]
		case RoleBroker:
			listeners = client
		default:
			t.Fatalf("node %d: unknown role %q", i+1, role)
		}
		own := append([]string{
			fmt.Sprintf("node.id=%d", i+1),
			"process.roles=" + role,
			"listeners=" + listeners,
			"controller.listener.names=CONTROLLER",
			"controller.quorum.voters=" + strings.Join(voters, ","),
		}, settings...)
		own = append(own, nodes[i].Settings...)
		c.Nodes = append(c.Nodes, newBroker(t, BrokerOptions{Port: port, Dir: nodes[i].Dir}, own...))
	}
	for i, b := range c.Nodes {
		if err := b.Launch(); err != nil {
			t.Fatalf("node %d (%s): %v", i+1, roles[i], err)
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
			t.Fatalf("node %d (%s): %v", i+1, roles[i], err)
		}
	}
	return c
}

// voterAddrs are the controller listeners of the voters.
func (c *Cluster) voterAddrs() []string {
	return slices.DeleteFunc(slices.Clone(c.ControllerAddrs), func(a string) bool { return a == "" })
}

// TestClusterFiveNodesWithRoles runs five real processes with one role or both: nodes 1 and
// 2 combined, node 3 a controller only (a voter that hosts nothing), nodes 4 and 5 brokers
// only (observers of the metadata log). Kafka's tools see four brokers and three voters with
// two observers; RF 3 partitions spread over the brokers; records go through; with the
// controller-only node and a broker-only node killed (-9) the cluster still creates topics
// and takes acks=all writes to RF 3, min.insync.replicas=2 topics.
func TestClusterFiveNodesWithRoles(t *testing.T) {
	roles := []string{RoleCombined, RoleCombined, RoleController, RoleBroker, RoleBroker}
	c := StartClusterWith(t, roles, clusterSettings...)
	ctx, cancel := context.WithTimeout(context.Background(), 4*clusterDeadline)
	defer cancel()
	brokers := []*Broker{c.Nodes[0], c.Nodes[1], c.Nodes[3], c.Nodes[4]}
	var seeds []string
	for _, b := range brokers {
		seeds = append(seeds, b.Addr)
	}

	// Metadata lists the four brokers, never the controller-only node.
	waitFor(t, clusterDeadline, "four brokers in Metadata", func() error {
		ids, err := liveBrokers(c.Nodes[3].Addr)
		if err != nil {
			return err
		}
		slices.Sort(ids)
		if !slices.Equal(ids, []int32{1, 2, 4, 5}) {
			return fmt.Errorf("brokers %v, want [1 2 4 5]", ids)
		}
		return nil
	})

	// kafka-metadata-quorum: three voters, two observers, each observer at the log end.
	bootstrapController := strings.Join(c.voterAddrs(), ",")
	var status, replication string
	waitFor(t, clusterDeadline, "kafka-metadata-quorum to show the observers", func() error {
		status, _ = javaTool(t, "", "org.apache.kafka.tools.MetadataQuorumCommand",
			"--bootstrap-controller", bootstrapController, "describe", "--status")
		voters := regexp.MustCompile(`CurrentVoters:\s*(.*)`).FindStringSubmatch(status)
		observers := regexp.MustCompile(`CurrentObservers:\s*(.*)`).FindStringSubmatch(status)
		if voters == nil || observers == nil {
			return fmt.Errorf("--status lacks voters or observers:\n%s", status)
		}
		for _, id := range []string{`"id": ?1\b`, `"id": ?2\b`, `"id": ?3\b`} {
			if !regexp.MustCompile(id).MatchString(voters[1]) {
				return fmt.Errorf("voters %s lack %s", voters[1], id)
			}
		}
		for _, id := range []string{`"id": ?4\b`, `"id": ?5\b`} {
			if !regexp.MustCompile(id).MatchString(observers[1]) {
				return fmt.Errorf("observers %s lack %s", observers[1], id)
			}
		}
		replication, _ = javaTool(t, "", "org.apache.kafka.tools.MetadataQuorumCommand",
			"--bootstrap-controller", bootstrapController, "describe", "--replication")
		rows := map[string][]string{}
		for _, line := range strings.Split(replication, "\n") {
			if f := strings.Fields(line); len(f) >= 6 {
				rows[f[0]] = f
			}
		}
		for _, id := range []string{"4", "5"} {
			row := rows[id]
			// NodeId DirectoryId LogEndOffset Lag LastFetchTimestamp LastCaughtUpTimestamp Status
			if row == nil || row[len(row)-1] != "Observer" || row[3] != "0" {
				return fmt.Errorf("--replication: observer %s row %v, want Status Observer and Lag 0:\n%s", id, row, replication)
			}
		}
		for _, id := range []string{"1", "2", "3"} {
			if row := rows[id]; row == nil || (row[len(row)-1] != "Leader" && row[len(row)-1] != "Follower") {
				return fmt.Errorf("--replication: voter %s row %v:\n%s", id, row, replication)
			}
		}
		return nil
	})
	t.Logf("kafka-metadata-quorum describe --status:\n%s\n--replication:\n%s", status, replication)

	// kafka-broker-api-versions lists every broker and not the controller-only node.
	stdout, _ := javaTool(t, "", "org.apache.kafka.tools.BrokerApiVersionsCommand", "--bootstrap-server", c.Nodes[4].Addr)
	for _, b := range brokers {
		if !strings.Contains(stdout, b.Addr+" (id: ") {
			t.Fatalf("kafka-broker-api-versions does not list %s:\n%s", b.Addr, clip(stdout))
		}
	}
	if strings.Contains(stdout, "(id: 3 ") {
		t.Fatalf("kafka-broker-api-versions lists the controller-only node 3:\n%s", clip(stdout))
	}

	// kafka-topics --create --replication-factor 3 through a broker-only node; --describe
	// shows replicas and leaders spread over the four brokers.
	javaTool(t, "", "org.apache.kafka.tools.TopicCommand", "--bootstrap-server", c.Nodes[3].Addr,
		"--create", "--topic", "roles", "--partitions", "8", "--replication-factor", "3", "--config", "min.insync.replicas=2")
	stdout, _ = javaTool(t, "", "org.apache.kafka.tools.TopicCommand", "--bootstrap-server", c.Nodes[0].Addr,
		"--describe", "--topic", "roles")
	leaders, replicas := map[string]bool{}, map[string]bool{}
	for _, line := range strings.Split(stdout, "\n") {
		f := strings.Fields(line)
		if len(f) < 8 || f[4] != "Leader:" || f[6] != "Replicas:" {
			continue
		}
		leaders[f[5]] = true
		for _, r := range strings.Split(f[7], ",") {
			replicas[r] = true
		}
		if n := len(strings.Split(f[7], ",")); n != 3 {
			t.Fatalf("partition with %d replicas, want 3:\n%s", n, stdout)
		}
	}
	if len(leaders) != 4 || len(replicas) != 4 || replicas["3"] || leaders["3"] {
		t.Fatalf("kafka-topics --describe: leaders %v, replicas %v, want the four brokers (1, 2, 4, 5):\n%s", leaders, replicas, stdout)
	}

	// Records produced with acks=all through a broker-only node are read back through another.
	produce := func(topic string, from, to int) {
		t.Helper()
		cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.RequiredAcks(kgo.AllISRAcks()))
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		for i := from; i < to; i++ {
			pctx, pcancel := context.WithTimeout(ctx, clusterDeadline)
			err := cl.ProduceSync(pctx, &kgo.Record{Topic: topic, Key: []byte(strconv.Itoa(i)), Value: []byte(fmt.Sprintf("v%d", i))}).FirstErr()
			pcancel()
			if err != nil {
				t.Fatalf("produce %d to %s: %v", i, topic, err)
			}
		}
	}
	readBack := func(topic, seed string, want int) {
		t.Helper()
		cl, err := kgo.NewClient(kgo.SeedBrokers(seed), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		seen := map[string]bool{}
		rctx, rcancel := context.WithTimeout(ctx, clusterDeadline)
		defer rcancel()
		for len(seen) < want {
			fs := cl.PollFetches(rctx)
			if rctx.Err() != nil {
				t.Fatalf("read %d of %d records of %s through %s: %v", len(seen), want, topic, seed, fs.Errors())
			}
			fs.EachRecord(func(r *kgo.Record) { seen[string(r.Value)] = true })
		}
	}
	produce("roles", 0, 200)
	readBack("roles", c.Nodes[4].Addr, 200)

	// Kill -9 one voter (the controller-only node) and one broker-only node: two voters of
	// three and three brokers of four remain.
	killed := time.Now()
	c.Nodes[2].Kill()
	c.Nodes[4].Kill()
	survivors := []string{c.Nodes[0].Addr, c.Nodes[1].Addr, c.Nodes[3].Addr}
	waitFor(t, clusterDeadline, "the dead broker fenced", func() error {
		ids, err := liveBrokers(c.Nodes[3].Addr)
		if err != nil {
			return err
		}
		slices.Sort(ids)
		if !slices.Equal(ids, []int32{1, 2, 4}) {
			return fmt.Errorf("brokers %v, want [1 2 4]", ids)
		}
		return nil
	})
	adm, _ := clusterAdmin(t, survivors...)
	waitFor(t, clusterDeadline, "an RF 3 topic created with two nodes down", func() error {
		cctx, ccancel := context.WithTimeout(ctx, 10*time.Second)
		defer ccancel()
		resp, err := adm.CreateTopic(cctx, 3, 3, map[string]*string{"min.insync.replicas": ptrTo("2")}, "after-kills")
		if err != nil && !errors.Is(resp.Err, kerr.TopicAlreadyExists) {
			return err
		}
		return nil
	})
	t.Logf("nodes 3 and 5 killed; an RF 3 topic was created %v later", time.Since(killed).Round(time.Millisecond))
	produce("after-kills", 0, 100)
	readBack("after-kills", c.Nodes[3].Addr, 100)
	produce("roles", 200, 300) // partitions that lost a replica still take acks=all with min.insync.replicas=2
	readBack("roles", c.Nodes[0].Addr, 300)

	// The broker-only node restarts from its data: it follows the log again, is unfenced and
	// serves what it holds.
	c.Nodes[4].Restart()
	waitFor(t, clusterDeadline, "the restarted broker-only node back in Metadata", func() error {
		ids, err := liveBrokers(c.Nodes[0].Addr)
		if err != nil {
			return err
		}
		slices.Sort(ids)
		if !slices.Equal(ids, []int32{1, 2, 4, 5}) {
			return fmt.Errorf("brokers %v, want [1 2 4 5]", ids)
		}
		return nil
	})
	readBack("roles", c.Nodes[4].Addr, 300)
}

func ptrTo[T any](v T) *T { return &v }

// TestClusterOneVoterAndABrokerOnlyNode: a combined node whose voters line names only itself
// takes a broker-only node as an observer (before, a lone voter served no raft connections,
// so the broker never caught up and gave up registering); a topic of RF 2 spans both.
func TestClusterOneVoterAndABrokerOnlyNode(t *testing.T) {
	c := StartClusterWith(t, []string{RoleCombined, RoleBroker}, clusterSettings...)
	waitFor(t, clusterDeadline, "both brokers in Metadata", func() error {
		ids, err := liveBrokers(c.Nodes[1].Addr)
		if err != nil {
			return err
		}
		slices.Sort(ids)
		if !slices.Equal(ids, []int32{1, 2}) {
			return fmt.Errorf("brokers %v, want [1 2]", ids)
		}
		return nil
	})
	adm, _ := clusterAdmin(t, c.Nodes[1].Addr)
	ctx, cancel := context.WithTimeout(context.Background(), clusterDeadline)
	defer cancel()
	if resp, err := adm.CreateTopic(ctx, 2, 2, nil, "pair"); err != nil || resp.Err != nil {
		t.Fatalf("create RF 2 through the broker-only node: %v %v", err, resp.Err)
	}
}

// TestClusterBrokerOnlyNodeFromBootstrapServers: a broker-only node given
// controller.quorum.bootstrap.servers instead of the voters learns them from a controller
// (DescribeQuorum) and joins as an observer.
func TestClusterBrokerOnlyNodeFromBootstrapServers(t *testing.T) {
	c := StartClusterWith(t, []string{RoleCombined, RoleController}, clusterSettings...)
	b := StartBrokerWith(t, BrokerOptions{}, append([]string{
		"node.id=3", "process.roles=broker", "controller.listener.names=CONTROLLER",
		"controller.quorum.bootstrap.servers=" + c.ControllerAddrs[1],
	}, clusterSettings...)...)
	waitFor(t, clusterDeadline, "the broker-only node in Metadata", func() error {
		ids, err := liveBrokers(c.Nodes[0].Addr)
		if err != nil {
			return err
		}
		slices.Sort(ids)
		if !slices.Equal(ids, []int32{1, 3}) {
			return fmt.Errorf("brokers %v, want [1 3]", ids)
		}
		return nil
	})
	adm, _ := clusterAdmin(t, b.Addr)
	ctx, cancel := context.WithTimeout(context.Background(), clusterDeadline)
	defer cancel()
	if resp, err := adm.CreateTopic(ctx, 2, 2, nil, "pair"); err != nil || resp.Err != nil {
		t.Fatalf("create RF 2 through the broker-only node: %v %v", err, resp.Err)
	}
}
