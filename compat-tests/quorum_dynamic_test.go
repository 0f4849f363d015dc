package compattests

import (
	"context"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// dynamicNode prepares a node of a dynamic quorum (KIP-853): its controller listener at ctl,
// controller.quorum.bootstrap.servers at bootstrap, formatted with `sluice format --cluster-id
// ID` and formatArgs (--standalone, or nothing to join later). With client "" it is
// controller-only, else combined with its client listener there. It returns the node (not
// started) and its settings, which are also what kafka-metadata-quorum add-controller reads
// from --command-config.
func dynamicNode(t *testing.T, id int, ctl, client, bootstrap, clusterID string, formatArgs ...string) (*Broker, []string) {
	t.Helper()
	dir := t.TempDir()
	roles, listeners, addr := "controller", "CONTROLLER://"+ctl, ctl
	if client != "" {
		roles, listeners, addr = "broker,controller", "PLAINTEXT://"+client+",CONTROLLER://"+ctl, client
	}
	settings := append([]string{
		fmt.Sprintf("node.id=%d", id),
		"process.roles=" + roles,
		"listeners=" + listeners,
		"controller.listener.names=CONTROLLER",
		"controller.quorum.bootstrap.servers=" + bootstrap,
	}, clusterSettings...)
	_, port, _ := net.SplitHostPort(addr)
	p, _ := strconv.Atoi(port)
	b := newBroker(t, BrokerOptions{Dir: dir, Port: p}, settings...)
	args := append(append([]string{"format"}, b.args...), "--cluster-id", clusterID)
	stdout, stderr, err := runCmdErr(time.Minute, "", b.bin, append(args, formatArgs...)...)
	if err != nil || !strings.Contains(stdout, clusterID) {
		t.Fatalf("sluice format for node %d: %v\n%s%s", id, err, stdout, stderr)
	}
	return b, append(settings, "log.dirs="+dir)
}

// writeProperties writes settings as a properties file for a Kafka tool's --command-config.
func writeProperties(t *testing.T, settings []string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "controller.properties")
	if err := os.WriteFile(path, []byte(strings.Join(settings, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// quorumVoterIDs parses kafka-metadata-quorum describe --status' CurrentVoters ids.
func quorumVoterIDs(status string) []string {
	m := regexp.MustCompile(`CurrentVoters:\s*(.*)`).FindStringSubmatch(status)
	if m == nil {
		return nil
	}
	var ids []string
	for _, id := range regexp.MustCompile(`"id": ?(\d+)`).FindAllStringSubmatch(m[1], -1) {
		ids = append(ids, id[1])
	}
	return ids
}

// TestDynamicQuorumAddControllers: KIP-853 with real processes and Kafka's own tool. Node 1, a
// combined node, is formatted `sluice format --standalone` (the only initial voter); nodes 2
// and 3, controllers only, are formatted
// without initial controllers and started with controller.quorum.bootstrap.servers naming
// node 1, so they follow the log as observers; `kafka-metadata-quorum add-controller` adds
// each (as Kafka's admin client does: AddRaftVoter to the active controller). A broker-only
// node joins through the same bootstrap server. describe --status shows three voters, through
// --bootstrap-controller and through the broker (--bootstrap-server: DescribeQuorum forwarded
// to the active controller). Then node 1 is killed with SIGKILL: the two added voters elect a
// leader and a topic is created through the broker; remove-controller takes the dead node out
// of the voter set.
func TestDynamicQuorumAddControllers(t *testing.T) {
	lookPath(t, "java")
	kafkaJars(t)
	ports := freePorts(t, 5)
	ctl := func(i int) string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[i-1])) }
	const clusterID = "dynQuorumTestCluster1A"

	n1, _ := dynamicNode(t, 1, ctl(1), net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[4])), ctl(1), clusterID, "--standalone")
	n1.start()
	n2, n2settings := dynamicNode(t, 2, ctl(2), "", ctl(1), clusterID, "--no-initial-controllers")
	n3, n3settings := dynamicNode(t, 3, ctl(3), "", ctl(1), clusterID)
	n2.start()
	n3.start()
	broker := StartBrokerWith(t, BrokerOptions{Port: ports[3]}, append([]string{
		"node.id=4", "process.roles=broker", "controller.listener.names=CONTROLLER",
		"controller.quorum.bootstrap.servers=" + ctl(1),
	}, clusterSettings...)...)

	const tool = "org.apache.kafka.tools.MetadataQuorumCommand"
	status := func(args ...string) string {
		out, _ := javaTool(t, "", tool, append(args, "describe", "--status")...)
		return out
	}
	if got := quorumVoterIDs(status("--bootstrap-controller", ctl(1))); strings.Join(got, ",") != "1" {
		t.Fatalf("voters of the standalone node: %v", got)
	}
	added := time.Now()
	for i, settings := range [][]string{n2settings, n3settings} {
		out, _ := javaTool(t, "", tool, "--bootstrap-controller", ctl(1), "--command-config", writeProperties(t, settings), "add-controller")
		if !strings.Contains(out, fmt.Sprintf("Added controller %d", i+2)) {
			t.Fatalf("add-controller %d printed %q", i+2, out)
		}
	}
	t.Logf("two controllers added with kafka-metadata-quorum add-controller in %v", time.Since(added).Round(time.Millisecond))
	for _, via := range [][]string{{"--bootstrap-controller", ctl(2)}, {"--bootstrap-server", broker.Addr}} {
		out := status(via...)
		if got := quorumVoterIDs(out); strings.Join(got, ",") != "1,2,3" {
			t.Fatalf("describe --status %v: voters %v, want 1,2,3:\n%s", via, got, out)
		}
	}
	// A second add of a voter is refused as Kafka refuses it.
	stdout, stderr, err := runCmdErr(javaTimeout, "", "java", "-cp", filepath.Join(kafkaJars(t), "*"), tool,
		"--bootstrap-controller", ctl(1), "--command-config", writeProperties(t, n2settings), "add-controller")
	if err == nil || !strings.Contains(stdout+stderr, "DuplicateVoterException") && !strings.Contains(stdout+stderr, "already a voter") {
		t.Fatalf("adding voter 2 again: %v\n%s%s", err, clip(stdout), clip(stderr))
	}

	// Kill -9 the node the quorum was formatted on: 2 and 3 are a majority of three.
	killed := time.Now()
	n1.Kill()
	adm, _ := clusterAdmin(t, broker.Addr)
	ctx, cancel := context.WithTimeout(context.Background(), 2*clusterDeadline)
	defer cancel()
	waitFor(t, clusterDeadline, "a topic created with node 1 dead", func() error {
		cctx, ccancel := context.WithTimeout(ctx, 10*time.Second)
		defer ccancel()
		resp, err := adm.CreateTopic(cctx, 1, 1, nil, "after-kill")
		if err != nil && !errors.Is(resp.Err, kerr.TopicAlreadyExists) {
			return err
		}
		return nil
	})
	t.Logf("node 1 killed; a topic was created through the broker %v later", time.Since(killed).Round(time.Millisecond))
	if out := status("--bootstrap-server", broker.Addr); !regexp.MustCompile(`LeaderId:\s+[23]\b`).MatchString(out) {
		t.Fatalf("after node 1 died the leader is not 2 or 3:\n%s", out)
	}

	// remove-controller takes the dead voter out (its directory ID from its meta.properties).
	dirID := metaPropertiesValue(t, n1.Dir, "directory.id")
	out, _ := javaTool(t, "", tool, "--bootstrap-controller", ctl(2)+","+ctl(3), "remove-controller",
		"--controller-id", "1", "--controller-directory-id", dirID)
	if !strings.Contains(out, "Removed") {
		t.Fatalf("remove-controller printed %q", out)
	}
	if got := quorumVoterIDs(status("--bootstrap-controller", ctl(2))); strings.Join(got, ",") != "2,3" {
		t.Fatalf("voters after remove-controller: %v, want 2,3", got)
	}
	if resp, err := adm.CreateTopic(ctx, 1, 1, nil, "after-remove"); err != nil || resp.Err != nil {
		t.Fatalf("create after remove-controller: %v %v", err, resp.Err)
	}
}

// metaPropertiesValue reads one key of dir's meta.properties.
func metaPropertiesValue(t *testing.T, dir, key string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, "meta.properties"))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), key+"="); ok {
			return v
		}
	}
	t.Fatalf("no %s in %s/meta.properties:\n%s", key, dir, data)
	return ""
}

// TestFormattedNodeRefusesAnotherCluster: a node formatted for one cluster refuses to start
// on a directory whose meta.properties names another, naming both; `sluice format` refuses a
// directory already formatted.
func TestFormattedNodeRefusesAnotherCluster(t *testing.T) {
	ports := freePorts(t, 1)
	ctl := net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[0]))
	n, _ := dynamicNode(t, 1, ctl, "", ctl, "clusterOfTheSnapshot01", "--standalone")
	args := append(append([]string{"format"}, n.args...), "--cluster-id", "anotherClusterIDxxxx01", "--standalone")
	if stdout, stderr, err := runCmdErr(time.Minute, "", n.bin, args...); err == nil || !strings.Contains(stderr, "already formatted") {
		t.Fatalf("formatting twice: %v\n%s%s", err, stdout, stderr)
	}
	path := filepath.Join(n.Dir, "meta.properties")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(strings.ReplaceAll(string(data), "clusterOfTheSnapshot01", "anotherClusterIDxxxx01")), 0o644); err != nil {
		t.Fatal(err)
	}
	stdout, stderr, err := runCmdErr(time.Minute, "", n.bin, n.args...)
	if err == nil || !strings.Contains(stderr, "belongs to cluster anotherClusterIDxxxx01") || !strings.Contains(stderr, "clusterOfTheSnapshot01") {
		t.Fatalf("start on another cluster's directory: %v\n%s%s", err, stdout, stderr)
	}
}

// TestDescribeQuorumThroughBrokerListener: `kafka-metadata-quorum --bootstrap-server` answers
// through the broker listener of a single node with no controller listener, and of a single
// unformatted node of a dynamic quorum (controller.quorum.bootstrap.servers naming its own
// controller listener, Kafka's standalone configuration), whose broker forwards DescribeQuorum
// to its own controller listener (before, it knew no voter address and the tool timed out).
func TestDescribeQuorumThroughBrokerListener(t *testing.T) {
	lookPath(t, "java")
	ports := freePorts(t, 2)
	ctl := net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[1]))
	for _, b := range []*Broker{
		StartBroker(t),
		StartBrokerWith(t, BrokerOptions{Port: ports[0]}, "listeners=PLAINTEXT://127.0.0.1:"+strconv.Itoa(ports[0])+",CONTROLLER://"+ctl,
			"controller.listener.names=CONTROLLER", "controller.quorum.bootstrap.servers="+ctl),
	} {
		out, _ := javaTool(t, "", "org.apache.kafka.tools.MetadataQuorumCommand", "--bootstrap-server", b.Addr, "describe", "--status")
		if got := quorumVoterIDs(out); strings.Join(got, ",") != "1" || !strings.Contains(out, "LeaderId:               1") {
			t.Fatalf("describe --status through the broker listener %s:\n%s", b.Addr, out)
		}
	}
}

// TestDynamicQuorumInitialControllers: three controllers formatted with the same
// `sluice format --initial-controllers ID@HOST:PORT:DIRECTORY_ID,...` form one quorum at start,
// with no voter change: kafka-metadata-quorum shows the three voters, each with the directory
// ID it was formatted with, and a leader.
//
// The tool starts while node 1 runs alone, so that the first DescribeCluster it is answered
// (through a relay that reports it) is from a voter that knows no leader; only then do nodes 2
// and 3 start. That one run must go on to find the leader they elect. Before, node 1 listed
// the voters with ControllerId -1, the admin client took that as its metadata and assigned no
// node to describeMetadataQuorum until it timed out after 60 s (a CI flake when the tool
// asked before the first election ended).
func TestDynamicQuorumInitialControllers(t *testing.T) {
	java := lookPath(t, "java")
	kafkaJars(t)
	ports := freePorts(t, 3)
	var ctls, initial, dirIDs []string
	for i, p := range ports {
		ctls = append(ctls, net.JoinHostPort("127.0.0.1", strconv.Itoa(p)))
		var id [16]byte
		id[0], id[15] = byte(i+1), 0x5a
		dirIDs = append(dirIDs, base64.RawURLEncoding.EncodeToString(id[:]))
		initial = append(initial, fmt.Sprintf("%d@%s:%s", i+1, ctls[i], dirIDs[i]))
	}
	var nodes []*Broker
	for i := range ports {
		n, _ := dynamicNode(t, i+1, ctls[i], "", strings.Join(ctls, ","), "threeInitialVoters0001", "--initial-controllers", strings.Join(initial, ","))
		if got := metaPropertiesValue(t, n.Dir, "directory.id"); got != dirIDs[i] {
			t.Fatalf("node %d formatted with directory.id %s, want %s", i+1, got, dirIDs[i])
		}
		nodes = append(nodes, n)
	}
	if err := nodes[0].Launch(); err != nil {
		t.Fatal(err)
	}
	if err := nodes[0].WaitReady(startDeadline); err != nil {
		t.Fatal(err)
	}
	relay := newAnswerRelay(t, ctls[0], 2) // ApiVersions, then DescribeCluster
	const tool = "org.apache.kafka.tools.MetadataQuorumCommand"
	describe := func(bootstrap string) *exec.Cmd {
		cmd := exec.Command(java, "-cp", filepath.Join(kafkaJars(t), "*"), tool,
			"--bootstrap-controller", bootstrap, "describe", "--replication")
		cmd.WaitDelay = 5 * time.Second
		return cmd
	}
	first := describe(strings.Join(append([]string{relay.addr}, ctls[1:]...), ","))
	var stdout, stderr strings.Builder
	first.Stdout, first.Stderr = &stdout, &stderr
	if err := first.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- first.Wait() }()
	t.Cleanup(func() { first.Process.Kill() })
	select {
	case <-relay.answered:
	case err := <-exited:
		t.Fatalf("the tool exited (%v) before node 1 answered it:\n%s", err, clip(stderr.String()))
	case <-time.After(javaTimeout):
		t.Fatalf("the tool got no answer from node 1 within %v:\n%s", javaTimeout, clip(stderr.String()))
	}
	for _, n := range nodes[1:] {
		if err := n.Launch(); err != nil {
			t.Fatal(err)
		}
	}
	for _, n := range nodes[1:] {
		if err := n.WaitReady(startDeadline); err != nil {
			t.Fatal(err)
		}
	}
	select {
	case err := <-exited:
		if err != nil {
			t.Fatalf("describe --replication started before the quorum had a leader: %v\n%s", err, clip(stderr.String()))
		}
	case <-time.After(javaTimeout):
		t.Fatalf("describe --replication started before the quorum had a leader did not end within %v", javaTimeout)
	}
	out := stdout.String()
	// The first run may have described the quorum before the leader had heard from every voter;
	// later runs must show all three.
	if replicationRows(out, dirIDs) != nil {
		waitFor(t, clusterDeadline, "three voters with a leader", func() error {
			cmd := describe(strings.Join(ctls, ","))
			var o, e strings.Builder
			cmd.Stdout, cmd.Stderr = &o, &e
			if err := cmd.Run(); err != nil {
				return fmt.Errorf("%v: %s", err, clip(e.String()))
			}
			out = o.String()
			return replicationRows(out, dirIDs)
		})
	}
	t.Logf("describe --replication:\n%s", out)
}

// replicationRows checks kafka-metadata-quorum describe --replication's output: a row for each
// voter (ID i+1) with directory ID dirIDs[i], and one leader.
func replicationRows(out string, dirIDs []string) error {
	rows := map[string][]string{}
	for _, line := range strings.Split(out, "\n") {
		if f := strings.Fields(line); len(f) >= 6 {
			rows[f[0]] = f
		}
	}
	leaders := 0
	for i := range dirIDs {
		row := rows[strconv.Itoa(i+1)]
		if row == nil || row[1] != dirIDs[i] {
			return fmt.Errorf("voter %d row %v, want directory ID %s", i+1, row, dirIDs[i])
		}
		if row[len(row)-1] == "Leader" {
			leaders++
		}
	}
	if leaders != 1 {
		return fmt.Errorf("%d leaders", leaders)
	}
	return nil
}

// answerRelay forwards connections from addr to a target and closes answered once the target
// has sent want response frames on one connection and they were passed on: the test learns
// that a client has been answered, and by whom.
type answerRelay struct {
	addr     string
	answered chan struct{}
}

func newAnswerRelay(t *testing.T, target string, want int) *answerRelay {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r := &answerRelay{addr: l.Addr().String(), answered: make(chan struct{})}
	var once sync.Once
	var conns sync.WaitGroup
	t.Cleanup(func() { l.Close(); conns.Wait() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			s, err := net.Dial("tcp", target)
			if err != nil {
				c.Close()
				continue
			}
			conns.Add(2)
			go func() { defer conns.Done(); io.Copy(s, c); s.Close() }()
			go func() {
				defer conns.Done()
				defer c.Close()
				for n := 0; ; n++ {
					if n == want {
						once.Do(func() { close(r.answered) })
					}
					var size [4]byte
					if _, err := io.ReadFull(s, size[:]); err != nil {
						return
					}
					if _, err := c.Write(size[:]); err != nil {
						return
					}
					if _, err := io.CopyN(c, s, int64(binary.BigEndian.Uint32(size[:]))); err != nil {
						return
					}
				}
			}()
		}
	}()
	return r
}
