package compattests

// Broker membership on real processes: a second process started with a live node's node.id
// is refused (DUPLICATE_BROKER_REGISTRATION) and exits non-zero without taking the ID; the
// same node restarted after a crash registers again; `kafka-cluster unregister` removes a
// stopped broker-only node's registration and its observer from the metadata quorum.

import (
	"fmt"
	"net"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// metadataBrokerPorts are the brokers addr's Metadata answer lists, with their ports.
func metadataBrokerPorts(addr string) (map[int32]int32, error) {
	conn, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
	req := kmsg.NewPtrMetadataRequest()
	req.Version = 12
	resp := req.ResponseKind().(*kmsg.MetadataResponse)
	if err := roundTrip(conn, req, resp, 1); err != nil {
		return nil, err
	}
	out := map[int32]int32{}
	for _, b := range resp.Brokers {
		out[b.NodeID] = b.Port
	}
	return out, nil
}

// TestDuplicateNodeIDAndUnregister: three combined nodes and broker-only node 4.
//   - A second process with node.id=4 (its own directory and port) is refused with
//     DUPLICATE_BROKER_REGISTRATION, says so, and exits non-zero; node 4 keeps its
//     registration (Metadata still lists it at its own port).
//   - Node 4 killed with -9 and started at once registers again (the old incarnation's
//     session was live: the controller's probe finds it gone, or its session expires).
//   - Stopped, node 4 is unregistered with Kafka's ClusterTool (kafka-cluster unregister):
//     kafka-metadata-quorum no longer lists it as an observer, and unregistering it again is
//     refused as not registered.
func TestDuplicateNodeIDAndUnregister(t *testing.T) {
	c := StartClusterWith(t, []string{RoleCombined, RoleCombined, RoleCombined, RoleBroker}, clusterSettings...)
	node4 := c.Nodes[3]
	waitFor(t, clusterDeadline, "four brokers in Metadata", func() error {
		ports, err := metadataBrokerPorts(c.Nodes[0].Addr)
		if err != nil {
			return err
		}
		if len(ports) != 4 {
			return fmt.Errorf("brokers %v, want 1-4", ports)
		}
		return nil
	})

	var voters []string
	for i, a := range c.ControllerAddrs {
		if a != "" {
			voters = append(voters, fmt.Sprintf("%d@%s", i+1, a))
		}
	}
	dupPort := freePort(t)
	dup := newBroker(t, BrokerOptions{Port: dupPort}, append([]string{
		"node.id=4", "process.roles=broker", "listeners=PLAINTEXT://127.0.0.1:" + strconv.Itoa(dupPort),
		"controller.listener.names=CONTROLLER", "controller.quorum.voters=" + strings.Join(voters, ","),
	}, clusterSettings...)...)
	if err := dup.Launch(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-dup.Exited():
	case <-time.After(clusterDeadline):
		t.Fatalf("the second process with node.id=4 did not exit; its log:\n%s", dup.Log())
	}
	if dup.ExitErr() == nil {
		t.Fatalf("the second process with node.id=4 exited with status 0; its log:\n%s", dup.Log())
	}
	if log := dup.Log(); !strings.Contains(log, "DUPLICATE_BROKER_REGISTRATION") || !strings.Contains(log, "node.id 4 is in use") {
		t.Fatalf("the second process's log does not say why it stopped:\n%s", log)
	}
	ports, err := metadataBrokerPorts(c.Nodes[0].Addr)
	if err != nil {
		t.Fatal(err)
	}
	if ports[4] != int32(node4.Port) {
		t.Fatalf("after the duplicate was refused Metadata lists broker 4 at port %d, want %d (brokers %v)", ports[4], node4.Port, ports)
	}

	// Crash and restart at once: a new incarnation of a broker whose session is still live.
	node4.Kill()
	node4.Restart() // waits until it answers ApiVersions: registered and unfenced
	waitFor(t, clusterDeadline, "the restarted node 4 in Metadata", func() error {
		ports, err := metadataBrokerPorts(c.Nodes[0].Addr)
		if err != nil {
			return err
		}
		if ports[4] != int32(node4.Port) {
			return fmt.Errorf("brokers %v", ports)
		}
		return nil
	})

	// Decommission node 4: stop it, unregister it.
	if !node4.Stop() {
		t.Fatal("node 4 did not exit on SIGTERM")
	}
	javaTool(t, "", "org.apache.kafka.tools.ClusterTool", "unregister", "--bootstrap-server", c.Nodes[0].Addr, "--id", "4")
	bootstrapController := strings.Join(c.voterAddrs(), ",")
	observers := regexp.MustCompile(`CurrentObservers:\s*(.*)`)
	waitFor(t, clusterDeadline, "kafka-metadata-quorum without observer 4", func() error {
		status, _ := javaTool(t, "", "org.apache.kafka.tools.MetadataQuorumCommand",
			"--bootstrap-controller", bootstrapController, "describe", "--status")
		m := observers.FindStringSubmatch(status)
		if m == nil {
			return fmt.Errorf("--status lacks observers:\n%s", status)
		}
		if regexp.MustCompile(`"id": ?4\b`).MatchString(m[1]) {
			return fmt.Errorf("observers %s", m[1])
		}
		return nil
	})
	stdout, stderr, err := runCmdErr(javaTimeout, "", lookPath(t, "java"), "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-Xmx256m",
		"-cp", kafkaJars(t)+"/*", "org.apache.kafka.tools.ClusterTool", "unregister", "--bootstrap-controller", bootstrapController, "--id", "4")
	if err == nil || !strings.Contains(stdout+stderr, "BrokerIdNotRegistered") && !strings.Contains(stdout+stderr, "not registered") {
		t.Fatalf("unregistering 4 again: %v\nstdout:\n%s\nstderr:\n%s", err, stdout, stderr)
	}
	if ids, err := liveBrokers(c.Nodes[0].Addr); err != nil || slices.Contains(ids, 4) {
		t.Fatalf("brokers after unregistering 4: %v, %v", ids, err)
	}
}
