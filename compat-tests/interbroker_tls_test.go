package compattests

import (
	"context"
	"crypto/tls"
	"crypto/x509/pkix"
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"sluice/internal/testcerts"
	"sluice/internal/testcluster"
)

// secureClusterNode is one node of a cluster whose every listener is TLS.
type secureClusterNode struct {
	*testcluster.Node
	log *testcluster.TailBuffer
}

// startSecureCluster starts three combined nodes whose only listeners are the client and
// inter-broker listener (SSL with ssl.client.auth=required, or SASL_SSL with SCRAM-SHA-512
// between the brokers) and the controller listener (SSL with ssl.client.auth=required, or with
// sasl SASL_SSL with PLAIN, sasl.mechanism.controller.protocol=PLAIN, and mutual TLS too), all
// with certificates of one test CA, each key under its listener's listener.name.<l>. prefix.
// It returns the nodes and the options a franz-go client needs to reach them.
func startSecureCluster(t *testing.T, sasl bool) ([]secureClusterNode, []kgo.Opt) {
	t.Helper()
	const n = 3
	dir := t.TempDir()
	ca := testcerts.NewCA()
	serverPEM, _, _ := ca.Server().WriteFiles(dir, "server")
	caFile := filepath.Join(dir, "ca.crt")
	if err := os.WriteFile(caFile, ca.CertPEM, 0o644); err != nil {
		t.Fatal(err)
	}
	listener, lower, controllerProtocol := "SSL", "ssl", "SSL"
	if sasl {
		listener, lower, controllerProtocol = "SASL_SSL", "sasl_ssl", "SASL_SSL"
	}
	ports := freePorts(t, 2*n)
	addr := func(p int) string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(p)) }
	var voters []string
	for i := range n {
		voters = append(voters, fmt.Sprintf("%d@%s", i+1, addr(ports[n+i])))
	}
	common := []string{
		"controller.listener.names=CONTROLLER",
		"controller.quorum.voters=" + strings.Join(voters, ","),
		"listener.security.protocol.map=" + listener + ":" + listener + ",CONTROLLER:" + controllerProtocol,
		"inter.broker.listener.name=" + listener,
		"listener.name." + lower + ".ssl.keystore.type=PEM",
		"listener.name." + lower + ".ssl.keystore.location=" + serverPEM,
		"listener.name." + lower + ".ssl.truststore.type=PEM",
		"listener.name." + lower + ".ssl.truststore.location=" + caFile,
		"listener.name.controller.ssl.keystore.type=PEM",
		"listener.name.controller.ssl.keystore.location=" + serverPEM,
		"listener.name.controller.ssl.truststore.type=PEM",
		"listener.name.controller.ssl.truststore.location=" + caFile,
		// Mutual TLS between controllers (raft and the brokers' link): each node presents
		// its listener keystore as a client.
		"listener.name.controller.ssl.client.auth=required",
	}
	if !sasl {
		// And between brokers on the SSL listener, whose clients then need certificates too.
		common = append(common, "listener.name.ssl.ssl.client.auth=required")
	}
	if sasl {
		// The brokers' own credentials (username/password), as Kafka's ScramLoginModule reads
		// them; the credential they are checked against is in the metadata log from the
		// start (sluice format --add-scram below), as with kafka-storage format.
		common = append(common,
			"listener.name.sasl_ssl.sasl.enabled.mechanisms=SCRAM-SHA-512",
			"sasl.mechanism.inter.broker.protocol=SCRAM-SHA-512",
			"listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config="+scramModule+
				` required username="admin" password="admin-secret";`,
			// The controllers' own links (raft between them, each broker's to them)
			// authenticate with PLAIN: the JAAS config gives this node's credentials
			// (username, password) and the users the listener accepts (user_NAME).
			"listener.name.controller.sasl.enabled.mechanisms=PLAIN",
			"sasl.mechanism.controller.protocol=PLAIN",
			"listener.name.controller.plain.sasl.jaas.config="+plainModule+
				` required username="controller" password="controller-secret" user_controller="controller-secret"`+
				` user_eve="eve-secret";`,
			// With the authorizer on, the nodes' principals need CLUSTER_ACTION (super.users),
			// as in Kafka: raft between the controllers, the brokers' registrations and
			// heartbeats, follower fetches. eve may authenticate but holds no ACL.
			"authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer",
			"super.users=User:admin;User:controller",
		)
	}
	var nodes []secureClusterNode
	for i := range n {
		log := &testcluster.TailBuffer{}
		node, err := testcluster.NewNode(testcluster.NodeConfig{
			Bin:            sluiceBinary(t),
			Addr:           addr(ports[i]),
			ControllerAddr: addr(ports[n+i]),
			Dir:            filepath.Join(dir, fmt.Sprintf("node-%d", i+1)),
			Settings: append([]string{
				fmt.Sprintf("node.id=%d", i+1),
				fmt.Sprintf("listeners=%s://%s,CONTROLLER://%s", listener, addr(ports[i]), addr(ports[n+i])),
			}, common...),
			Output: log,
		})
		if err != nil {
			t.Fatal(err)
		}
		nodes = append(nodes, secureClusterNode{node, log})
	}
	t.Cleanup(func() {
		for _, nd := range nodes {
			nd.Stop()
			if t.Failed() {
				out := nd.log.String()
				if len(out) > maxLogInFailure {
					out = out[len(out)-maxLogInFailure:]
				}
				t.Logf("node %d log:\n%s", nd.ID, out)
			}
		}
	})
	if sasl {
		clusterID := base64.RawURLEncoding.EncodeToString([]byte("sluice-scram-tls"))
		for _, nd := range nodes {
			argv := nd.Args()
			out, err := exec.Command(argv[0], append([]string{"format", "--cluster-id", clusterID,
				"--add-scram", "SCRAM-SHA-512=[name=admin,password=admin-secret]"}, argv[1:]...)...).CombinedOutput()
			if err != nil {
				t.Fatalf("sluice format node %d: %v\n%s", nd.ID, err, out)
			}
			if !strings.Contains(string(out), "1 SCRAM credential") {
				t.Fatalf("sluice format node %d: %s", nd.ID, out)
			}
		}
	}
	for _, nd := range nodes {
		if err := nd.Launch(); err != nil {
			t.Fatal(err)
		}
	}
	// A client certificate: the SSL listeners require one, and so does the controller
	// listener (mutual TLS) under SASL_SSL; on a SASL_SSL listener the SASL user is the
	// principal all the same.
	clientTLS := &tls.Config{RootCAs: ca.Pool(), Certificates: []tls.Certificate{ca.Client(pkix.Name{CommonName: "test-client"}).TLS()}}
	opts := []kgo.Opt{kgo.DialTLSConfig(clientTLS)}
	if sasl {
		opts = append(opts, kgo.SASL(scram.Auth{User: "admin", Pass: "admin-secret"}.AsSha512Mechanism()))
	}
	// Ready: every node is registered and unfenced, as a client over TLS sees it.
	var seeds []string
	for _, nd := range nodes {
		seeds = append(seeds, nd.Addr)
	}
	cl := secureClient(t, seeds, opts)
	adm := kadm.NewClient(cl)
	waitFor(t, startDeadline, "all three brokers in Metadata over "+listener, func() error {
		for _, nd := range nodes {
			select {
			case <-nd.Exited():
				t.Fatalf("node %d exited: %v", nd.ID, nd.ExitErr())
			default:
			}
		}
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		m, err := adm.BrokerMetadata(ctx)
		if err != nil {
			return err
		}
		if len(m.Brokers) != n {
			return fmt.Errorf("%d brokers", len(m.Brokers))
		}
		return nil
	})
	return nodes, opts
}

func secureClient(t *testing.T, seeds []string, opts []kgo.Opt, more ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append(append([]kgo.Opt{kgo.SeedBrokers(seeds...)}, opts...), more...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// TestInterBrokerTLSCluster: a three-node cluster whose client, inter-broker and controller
// listeners are all SSL with mutual TLS replicates an RF3 topic (its followers fetch over TLS, its brokers
// reach the controllers and the controllers each other over TLS), keeps every acks=all record
// when its leader is killed, and refuses PLAINTEXT on its inter-broker port.
func TestInterBrokerTLSCluster(t *testing.T) { testSecureClusterFailover(t, false) }

// TestInterBrokerSASLSSLCluster: the same with SASL_SSL and SCRAM-SHA-512 between the brokers
// and SASL_SSL with PLAIN on the controller listener: the controllers' raft links and the
// brokers' links to them authenticate, and killing the node that is both the active
// controller and the partition's leader elects a new controller over them.
func TestInterBrokerSASLSSLCluster(t *testing.T) { testSecureClusterFailover(t, true) }

// metadataQuorumLeader asks node id, through its broker listener (DescribeQuorum, forwarded to
// the controllers), which node leads the metadata quorum.
func metadataQuorumLeader(ctx context.Context, cl *kgo.Client, id int32) (int32, error) {
	req := kmsg.NewPtrDescribeQuorumRequest()
	rt := kmsg.NewDescribeQuorumRequestTopic()
	rt.Topic = "__cluster_metadata"
	rt.Partitions = []kmsg.DescribeQuorumRequestTopicPartition{kmsg.NewDescribeQuorumRequestTopicPartition()}
	req.Topics = []kmsg.DescribeQuorumRequestTopic{rt}
	rctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	kr, err := cl.Broker(int(id)).Request(rctx, req)
	if err != nil {
		return -1, err
	}
	resp := kr.(*kmsg.DescribeQuorumResponse)
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		return -1, err
	}
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		return -1, fmt.Errorf("DescribeQuorum answered %d topics", len(resp.Topics))
	}
	p := resp.Topics[0].Partitions[0]
	if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
		return -1, err
	}
	return p.LeaderID, nil
}

func testSecureClusterFailover(t *testing.T, sasl bool) {
	nodes, opts := startSecureCluster(t, sasl)
	controllerProtocol := map[bool]string{false: "SSL", true: "SASL_SSL"}[sasl]
	var seeds []string
	for _, nd := range nodes {
		seeds = append(seeds, nd.Addr)
	}
	const topic, records = "secure-rf3", 300
	cl := secureClient(t, seeds, opts, kgo.DefaultProduceTopic(topic), kgo.RequiredAcks(kgo.AllISRAcks()))
	adm := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	// The partition's preferred leader is the active controller, so killing that one node
	// takes both the partition's leader and the quorum's away.
	var active int32 = -1
	waitFor(t, startDeadline, "the metadata quorum's leader", func() error {
		var err error
		active, err = metadataQuorumLeader(ctx, cl, nodes[0].ID)
		if err == nil && active < 1 {
			err = fmt.Errorf("leader %d", active)
		}
		return err
	})
	create := kmsg.NewPtrCreateTopicsRequest()
	ct := kmsg.NewCreateTopicsRequestTopic()
	ct.Topic, ct.NumPartitions, ct.ReplicationFactor = topic, -1, -1
	ra := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
	ra.Replicas = []int32{active}
	for _, nd := range nodes {
		if nd.ID != active {
			ra.Replicas = append(ra.Replicas, nd.ID)
		}
	}
	ct.ReplicaAssignment = []kmsg.CreateTopicsRequestTopicReplicaAssignment{ra}
	create.Topics = []kmsg.CreateTopicsRequestTopic{ct}
	create.TimeoutMillis = 30000
	cr, err := create.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	if err := kerr.ErrorForCode(cr.Topics[0].ErrorCode); err != nil {
		t.Fatalf("creating %s on %v: %v", topic, ra.Replicas, err)
	}
	// All three replicas in sync: the followers fetch from the leader over the TLS listener.
	var leader int32 = -1
	waitFor(t, startDeadline, "three in-sync replicas", func() error {
		td, err := adm.ListTopics(ctx, topic)
		if err != nil {
			return err
		}
		p, ok := td[topic].Partitions[0]
		if !ok || len(p.ISR) != 3 {
			return fmt.Errorf("partition 0: %+v", td[topic].Partitions)
		}
		if p.Leader != active {
			return fmt.Errorf("partition 0 led by %d, not its first replica %d", p.Leader, active)
		}
		leader = p.Leader
		return nil
	})
	for i := range records {
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte(fmt.Sprintf("record-%04d", i))}).FirstErr(); err != nil {
			t.Fatalf("produce %d: %v", i, err)
		}
	}

	// PLAINTEXT to the inter-broker port is refused: no ApiVersions answer comes back.
	for _, nd := range nodes {
		if err := testcluster.ProbeApiVersions(nd.Addr); err == nil {
			t.Errorf("node %d answered ApiVersions over PLAINTEXT on its %s inter-broker listener", nd.ID, map[bool]string{false: "SSL", true: "SASL_SSL"}[sasl])
		}
		if err := testcluster.ProbeApiVersions(nd.ControllerAddr); err == nil {
			t.Errorf("node %d answered ApiVersions over PLAINTEXT on its %s controller listener", nd.ID, controllerProtocol)
		}
	}

	if sasl {
		// A user the controller listener authenticates but the ACLs do not allow is refused
		// every controller API, as by Kafka's ControllerApis (DescribeCluster needs ALTER on
		// the cluster there), and creates no topic.
		// opts[0] is the client's TLS (the cluster's CA and a client certificate).
		eve := secureClient(t, []string{nodes[0].ControllerAddr}, []kgo.Opt{opts[0],
			kgo.SASL(plain.Auth{User: "eve", Pass: "eve-secret"}.AsMechanism())})
		b := eve.SeedBrokers()[0]
		if r, err := kmsg.NewPtrDescribeClusterRequest().RequestWith(ctx, b); err != nil || r.ErrorCode != kerr.ClusterAuthorizationFailed.Code {
			t.Errorf("eve's DescribeCluster on the controller listener: %v %+v, want CLUSTER_AUTHORIZATION_FAILED", err, r)
		}
		ce := kmsg.NewPtrCreateTopicsRequest()
		et := kmsg.NewCreateTopicsRequestTopic()
		et.Topic, et.NumPartitions, et.ReplicationFactor = "eve-topic", 1, 1
		ce.Topics, ce.TimeoutMillis = []kmsg.CreateTopicsRequestTopic{et}, 10000
		if r, err := ce.RequestWith(ctx, b); err != nil || len(r.Topics) != 1 || r.Topics[0].ErrorCode != kerr.TopicAuthorizationFailed.Code {
			t.Errorf("eve's CreateTopics on the controller listener: %v %+v, want TOPIC_AUTHORIZATION_FAILED", err, r)
		}
	}

	killed := nodes[leader-1]
	if err := killed.Kill(); err != nil {
		t.Fatal(err)
	}
	var rest []string
	for _, nd := range nodes {
		if nd.ID != leader {
			rest = append(rest, nd.Addr)
		}
	}
	consumer := secureClient(t, rest, opts, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	got := map[string]bool{}
	deadline := time.Now().Add(startDeadline)
	for len(got) < records {
		if time.Now().After(deadline) {
			t.Fatalf("read back %d of %d records after killing leader %d", len(got), records, leader)
		}
		fctx, fcancel := context.WithTimeout(ctx, 5*time.Second)
		fs := consumer.PollFetches(fctx)
		fcancel()
		fs.EachRecord(func(r *kgo.Record) { got[string(r.Value)] = true })
	}
	for i := range records {
		if v := fmt.Sprintf("record-%04d", i); !got[v] {
			t.Errorf("acknowledged %s lost after the leader was killed", v)
		}
	}
	// The survivors elect a new active controller (over the controller listener's TLS, and
	// SASL where it is SASL_SSL), which takes a new topic.
	waitFor(t, startDeadline, "a new active controller among the survivors", func() error {
		for _, nd := range nodes {
			if nd.ID == killed.ID {
				continue
			}
			l, err := metadataQuorumLeader(ctx, consumer, nd.ID)
			if err != nil {
				return fmt.Errorf("node %d: %w", nd.ID, err)
			}
			if l == killed.ID || l < 1 {
				return fmt.Errorf("node %d sees leader %d (killed %d)", nd.ID, l, killed.ID)
			}
		}
		return nil
	})
	waitFor(t, startDeadline, "a topic created after the failover", func() error {
		cctx, ccancel := context.WithTimeout(ctx, 10*time.Second)
		defer ccancel()
		_, err := kadm.NewClient(consumer).CreateTopic(cctx, 1, 2, nil, "after-failover")
		if errors.Is(err, kerr.TopicAlreadyExists) {
			return nil
		}
		return err
	})
	for _, nd := range nodes {
		if out := nd.log.String(); strings.Contains(out, "SASL authentication failed") {
			t.Errorf("node %d refused a peer's connection:\n%s", nd.ID, clip(out))
		}
	}
	// A survivor becomes the leader once the killed node is fenced.
	waitFor(t, startDeadline, "a new leader among the survivors", func() error {
		td, err := kadm.NewClient(consumer).ListTopics(ctx, topic)
		if err != nil {
			return err
		}
		if l := td[topic].Partitions[0].Leader; l == leader || l < 1 {
			return fmt.Errorf("leader %d (killed %d)", l, leader)
		}
		return nil
	})
}

// TestBrokerOnlyNodeSASLController: a broker-only node reaches a SASL_PLAINTEXT controller
// listener (PLAIN, sasl.mechanism.controller.protocol) with its own credentials: it registers
// (its link to the controller authenticates), follows the metadata log (its raft connection
// as an observer authenticates), and a topic created through it spans both nodes.
func TestBrokerOnlyNodeSASLController(t *testing.T) {
	c := StartClusterWith(t, []string{RoleCombined, RoleBroker}, append(slices.Clone(clusterSettings),
		"listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:SASL_PLAINTEXT",
		"listener.name.controller.sasl.enabled.mechanisms=PLAIN",
		"sasl.mechanism.controller.protocol=PLAIN",
		"listener.name.controller.plain.sasl.jaas.config="+plainModule+
			` required username="controller" password="controller-secret" user_controller="controller-secret";`,
	)...)
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
	if resp, err := adm.CreateTopic(ctx, 2, 2, nil, "sasl-pair"); err != nil || resp.Err != nil {
		t.Fatalf("create RF 2 through the broker-only node: %v %v", err, resp.Err)
	}
	// The broker-only node learns the topic from the metadata log it follows over SASL.
	waitFor(t, clusterDeadline, "the broker-only node's metadata lists sasl-pair", func() error {
		td, err := adm.ListTopics(ctx, "sasl-pair")
		if err != nil {
			return err
		}
		if p := td["sasl-pair"].Partitions; len(p) != 2 || len(p[0].Replicas) != 2 {
			return fmt.Errorf("partitions %+v", p)
		}
		return nil
	})
	// A client that does not authenticate gets nothing but ApiVersions from the controller
	// listener: its DescribeCluster closes the connection.
	plainClient := secureClient(t, []string{c.ControllerAddrs[0]}, nil)
	pctx, pcancel := context.WithTimeout(ctx, 3*time.Second)
	defer pcancel()
	if _, err := kmsg.NewPtrDescribeClusterRequest().RequestWith(pctx, plainClient); err == nil {
		t.Error("the SASL_PLAINTEXT controller listener answered DescribeCluster to a client that did not authenticate")
	}
}
