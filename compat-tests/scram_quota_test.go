package compattests

// SCRAM credentials in the metadata log and client quotas, driven by Apache Kafka's own
// kafka-configs (kafka.admin.ConfigCommand): a user created with
// `--add-config 'SCRAM-SHA-256=[...]' --entity-type users` logs in with franz-go and kcat at
// once, and is refused once deleted; producer_byte_rate on a client id holds a producer with
// that client.id to about the rate (throttle answered, elapsed time bounded from below), while
// another client id is not throttled.

import (
	"bytes"
	"context"
	"crypto/pbkdf2"
	"crypto/sha512"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

const configCommand = "org.apache.kafka.tools.ConfigCommand"

// startScramQuotaBroker is a sluice with a PLAINTEXT listener (for the tools) and a
// SASL_PLAINTEXT listener with SCRAM-SHA-256 and SCRAM-SHA-512 whose JAAS config lists no
// users: every user comes from the metadata log, as in Kafka. Quota windows are short (two of
// one second) so a throttle shows within seconds.
func startScramQuotaBroker(t *testing.T) (b *Broker, saslAddr string) {
	b, saslAddr, _ = startScramQuotaBrokerWithHTTP(t)
	return b, saslAddr
}

// startScramQuotaBrokerWithHTTP is startScramQuotaBroker that also serves /metrics (its base URL).
func startScramQuotaBrokerWithHTTP(t *testing.T) (b *Broker, saslAddr, metrics string) {
	t.Helper()
	ports := freePorts(t, 3)
	addr := func(i int) string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[i])) }
	b = StartBrokerWith(t, BrokerOptions{Port: ports[0], Flags: []string{"--http-addr", addr(2)}},
		fmt.Sprintf("listeners=PLAINTEXT://%s,SASL_PLAINTEXT://%s", addr(0), addr(1)),
		"listener.security.protocol.map=PLAINTEXT:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT",
		"listener.name.sasl_plaintext.sasl.enabled.mechanisms=SCRAM-SHA-256,SCRAM-SHA-512",
		"listener.name.sasl_plaintext.sasl.jaas.config="+scramModule+" required;",
		"quota.window.num=2",
		"quota.window.size.seconds=1",
	)
	return b, addr(1), "http://" + addr(2)
}

// scramLogin reports the outcome of a franz-go SCRAM-SHA-256 login (a metadata request) as
// user with password.
func scramLogin(t *testing.T, addr, user, password string) error {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.SASL(scram.Auth{User: user, Pass: password}.AsSha256Mechanism()),
		kgo.RequestRetries(0))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	_, err = cl.Request(ctx, kmsg.NewPtrMetadataRequest())
	return err
}

func scramLogin512(t *testing.T, addr, user, password string) error {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.SASL(scram.Auth{User: user, Pass: password}.AsSha512Mechanism()),
		kgo.RequestRetries(0))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	_, err = cl.Request(ctx, kmsg.NewPtrMetadataRequest())
	return err
}

func TestScramUsersFromKafkaConfigs(t *testing.T) {
	lookPath(t, "java")
	lookPath(t, "kcat")
	kafkaJars(t)
	b, saslAddr := startScramQuotaBroker(t)
	const carolPass = "carol-secret-5d1e"

	if err := scramLogin(t, saslAddr, "carol", carolPass); err == nil || !strings.Contains(err.Error(), kerr.SaslAuthenticationFailed.Message) {
		t.Fatalf("login before the user exists: %v, want SASL_AUTHENTICATION_FAILED", err)
	}
	out, _ := javaTool(t, "", configCommand, "--bootstrap-server", b.Addr, "--alter",
		"--add-config", "SCRAM-SHA-256=[iterations=8192,password="+carolPass+"],SCRAM-SHA-512=[password="+carolPass+"]",
		"--entity-type", "users", "--entity-name", "carol")
	if !strings.Contains(out, "Completed updating config for user carol.") {
		t.Errorf("--alter printed %q", out)
	}
	out, _ = javaTool(t, "", configCommand, "--bootstrap-server", b.Addr, "--describe", "--entity-type", "users", "--entity-name", "carol")
	if !strings.Contains(out, "SCRAM-SHA-256=iterations=8192") || !strings.Contains(out, "SCRAM-SHA-512=iterations=4096") {
		t.Errorf("--describe does not show the credential:\n%s", out)
	}
	// The user logs in at once: franz-go, and kcat (librdkafka) producing and consuming.
	if err := scramLogin(t, saslAddr, "carol", carolPass); err != nil {
		t.Fatalf("franz-go login as carol: %v", err)
	}
	if err := scramLogin512(t, saslAddr, "carol", carolPass); err != nil {
		t.Fatalf("franz-go SCRAM-SHA-512 login as carol: %v", err)
	}
	if err := scramLogin(t, saslAddr, "carol", "wrong"); err == nil {
		t.Fatal("wrong password accepted")
	}
	kcatRoundTrip(t, saslAddr, "scram-carol", []string{"security.protocol=SASL_PLAINTEXT", "sasl.mechanisms=SCRAM-SHA-256",
		"sasl.username=carol", "sasl.password=" + carolPass})
	// Another user has no credential.
	if err := scramLogin(t, saslAddr, "dave", carolPass); err == nil {
		t.Fatal("a user without credentials logged in")
	}
	// Deleted, the login is refused (the SCRAM-SHA-512 credential stays until deleted too).
	javaTool(t, "", configCommand, "--bootstrap-server", b.Addr, "--alter", "--delete-config", "SCRAM-SHA-256",
		"--entity-type", "users", "--entity-name", "carol")
	if err := scramLogin512(t, saslAddr, "carol", carolPass); err != nil {
		t.Fatalf("SCRAM-SHA-512 login after deleting only SCRAM-SHA-256: %v", err)
	}
	javaTool(t, "", configCommand, "--bootstrap-server", b.Addr, "--alter", "--delete-config", "SCRAM-SHA-512",
		"--entity-type", "users", "--entity-name", "carol")
	if err := scramLogin512(t, saslAddr, "carol", carolPass); err == nil {
		t.Fatal("SCRAM-SHA-512 login after deletion succeeded")
	}
	if err := scramLogin(t, saslAddr, "carol", carolPass); err == nil || !strings.Contains(err.Error(), kerr.SaslAuthenticationFailed.Message) {
		t.Fatalf("login after deletion: %v, want SASL_AUTHENTICATION_FAILED", err)
	}
	if _, stderr, err := kcatAt(t, saslAddr, "", []string{"security.protocol=SASL_PLAINTEXT", "sasl.mechanisms=SCRAM-SHA-256",
		"sasl.username=carol", "sasl.password=" + carolPass}, "-L", "-m", "10"); err == nil {
		t.Fatalf("kcat logged in after deletion (%s)", stderr)
	}
	// No secret reaches the log.
	if strings.Contains(b.Log(), carolPass) {
		t.Fatal("the password appears in sluice's log")
	}
}

// throttleCounter counts the throttles franz-go was answered.
type throttleCounter struct{ n, maxMillis atomic.Int64 }

func (c *throttleCounter) OnBrokerThrottle(_ kgo.BrokerMetadata, d time.Duration, _ bool) {
	c.n.Add(1)
	if ms := d.Milliseconds(); ms > c.maxMillis.Load() {
		c.maxMillis.Store(ms)
	}
}

func TestProducerByteRateQuota(t *testing.T) {
	lookPath(t, "java")
	kafkaJars(t)
	b, _, metrics := startScramQuotaBrokerWithHTTP(t)
	const rate = 20000 // bytes per second
	out, _ := javaTool(t, "", configCommand, "--bootstrap-server", b.Addr, "--alter",
		"--entity-type", "clients", "--entity-name", "c1", "--add-config", "producer_byte_rate="+strconv.Itoa(rate))
	if !strings.Contains(out, "Completed updating config for client c1.") {
		t.Errorf("--alter printed %q", out)
	}
	out, _ = javaTool(t, "", configCommand, "--bootstrap-server", b.Addr, "--describe", "--entity-type", "clients", "--entity-name", "c1")
	if !strings.Contains(out, "producer_byte_rate=20000") {
		t.Errorf("--describe does not show the quota:\n%s", out)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	admin, err := kgo.NewClient(kgo.SeedBrokers(b.Addr))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	if _, err := kadm.NewClient(admin).CreateTopic(ctx, 1, 1, nil, "quota-topic"); err != nil {
		t.Fatal(err)
	}

	// produce sends n records of size bytes one request at a time as clientID and returns the
	// elapsed time and the throttles answered.
	const n, size = 100, 1000
	produce := func(clientID string) (time.Duration, *throttleCounter) {
		tc := &throttleCounter{}
		cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr), kgo.ClientID(clientID), kgo.DefaultProduceTopic("quota-topic"),
			kgo.ProducerBatchCompression(kgo.NoCompression()), kgo.ProducerLinger(0), kgo.WithHooks(tc))
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		start := time.Now()
		for i := range n {
			if err := cl.ProduceSync(ctx, &kgo.Record{Value: bytes.Repeat([]byte{'q'}, size)}).FirstErr(); err != nil {
				t.Fatalf("%s: produce %d: %v", clientID, i, err)
			}
		}
		return time.Since(start), tc
	}
	elapsed, tc := produce("c1")
	// n×size bytes at rate, less what the sampled rate lets through before it throttles (at
	// most quota.window.num windows' worth): the least time the quota allows.
	expected := time.Duration(float64(n*size)/rate*float64(time.Second)) - 2*time.Second
	t.Logf("c1: %d bytes in %v (at most %d B/s would take ≥ %v), %d throttles, longest %d ms", n*size, elapsed, rate, expected, tc.n.Load(), tc.maxMillis.Load())
	if tc.n.Load() == 0 || tc.maxMillis.Load() <= 0 {
		t.Fatal("no produce response carried ThrottleTimeMillis > 0")
	}
	if elapsed < expected*7/10 {
		t.Fatalf("c1 produced %d bytes in %v, want ≥ %v (70%% of %v at %d B/s)", n*size, elapsed, expected*7/10, expected, rate)
	}
	_, tc = produce("c2")
	if tc.n.Load() != 0 {
		t.Fatalf("c2 (no quota) was throttled %d times", tc.n.Load())
	}
	// The metrics count the throttled produce responses and their time.
	m := scrape(t, metrics)
	if n, _ := series(m, "sluice_quota_throttled_responses_total", map[string]string{"request": "produce"}); n < 1 {
		t.Errorf("sluice_quota_throttled_responses_total{request=produce} = %v after c1 was throttled", n)
	}
	if s, _ := series(m, "sluice_quota_throttle_seconds_total", map[string]string{"request": "produce"}); s <= 0 {
		t.Errorf("sluice_quota_throttle_seconds_total{request=produce} = %v", s)
	}
}

// TestScramQuotaForwardedInCluster: on a three-node cluster, AlterUserScramCredentials and
// AlterClientQuotas sent to a node that is not the active controller are forwarded to it,
// and every node then describes the credential and the quota from its own image (which is
// where its SCRAM logins and quota enforcement look).
func TestScramQuotaForwardedInCluster(t *testing.T) {
	c := StartCluster(t, 3, clusterSettings...)
	leader := c.quorumLeader(t)
	var other *Broker
	var otherID int32
	for i, n := range c.Nodes {
		if int32(i+1) != leader {
			other, otherID = n, int32(i+1)
			break
		}
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(other.Addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), clusterDeadline)
	defer cancel()
	salt := []byte("forwarded-salt-0123")
	// The client salts the password, as Kafka's admin client does (mechanism 2: SCRAM-SHA-512).
	alter := kmsg.NewPtrAlterUserSCRAMCredentialsRequest()
	u := kmsg.NewAlterUserSCRAMCredentialsRequestUpsertion()
	u.Name, u.Mechanism, u.Iterations, u.Salt = "erin", 2, 4096, salt
	u.SaltedPassword = saltedSHA512(t, "erin-secret", salt, 4096)
	alter.Upsertions = append(alter.Upsertions, u)
	resp, err := cl.Broker(int(otherID)).Request(ctx, alter)
	if err != nil {
		t.Fatal(err)
	}
	if r := resp.(*kmsg.AlterUserSCRAMCredentialsResponse); len(r.Results) != 1 || r.Results[0].ErrorCode != 0 {
		t.Fatalf("AlterUserScramCredentials through node %d: %+v", otherID, r.Results)
	}
	quota := kmsg.NewPtrAlterClientQuotasRequest()
	e := kmsg.NewAlterClientQuotasRequestEntry()
	ent := kmsg.NewAlterClientQuotasRequestEntryEntity()
	ent.Type, ent.Name = "client-id", kmsg.StringPtr("c9")
	op := kmsg.NewAlterClientQuotasRequestEntryOp()
	op.Key, op.Value = "consumer_byte_rate", 4096
	e.Entity, e.Ops = append(e.Entity, ent), append(e.Ops, op)
	quota.Entries = append(quota.Entries, e)
	resp, err = cl.Broker(int(otherID)).Request(ctx, quota)
	if err != nil {
		t.Fatal(err)
	}
	if r := resp.(*kmsg.AlterClientQuotasResponse); len(r.Entries) != 1 || r.Entries[0].ErrorCode != 0 {
		t.Fatalf("AlterClientQuotas through node %d: %+v", otherID, r.Entries)
	}
	for i, n := range c.Nodes {
		ncl, err := kgo.NewClient(kgo.SeedBrokers(n.Addr))
		if err != nil {
			t.Fatal(err)
		}
		adm := kadm.NewClient(ncl)
		waitFor(t, clusterDeadline, fmt.Sprintf("node %d to describe erin and c9", i+1), func() error {
			d := kmsg.NewPtrDescribeUserSCRAMCredentialsRequest()
			resp, err := ncl.Broker(i+1).Request(ctx, d)
			if err != nil {
				return err
			}
			r := resp.(*kmsg.DescribeUserSCRAMCredentialsResponse)
			if len(r.Results) != 1 || r.Results[0].User != "erin" || len(r.Results[0].CredentialInfos) != 1 ||
				r.Results[0].CredentialInfos[0].Mechanism != 2 || r.Results[0].CredentialInfos[0].Iterations != 4096 {
				return fmt.Errorf("credentials %+v", r.Results)
			}
			q, err := adm.DescribeClientQuotas(ctx, false, []kadm.DescribeClientQuotaComponent{{Type: "client-id", MatchName: kmsg.StringPtr("c9")}})
			if err != nil {
				return err
			}
			if len(q) != 1 || len(q[0].Values) != 1 || q[0].Values[0].Key != "consumer_byte_rate" || q[0].Values[0].Value != 4096 {
				return fmt.Errorf("quotas %+v", q)
			}
			return nil
		})
		ncl.Close()
	}
}

func saltedSHA512(t *testing.T, password string, salt []byte, iterations int) []byte {
	t.Helper()
	k, err := pbkdf2.Key(sha512.New, password, salt, iterations, sha512.Size)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// TestConsumerByteRateQuota: consumer_byte_rate on a client id throttles a consumer with that
// client.id (fetch responses carry ThrottleTimeMillis > 0, and fetching N bytes in small
// fetches takes at least about N / rate), while another client id reads unthrottled.
func TestConsumerByteRateQuota(t *testing.T) {
	lookPath(t, "java")
	kafkaJars(t)
	b, _ := startScramQuotaBroker(t)
	const rate = 20000
	javaTool(t, "", configCommand, "--bootstrap-server", b.Addr, "--alter",
		"--entity-type", "clients", "--entity-name", "slow-reader", "--add-config", "consumer_byte_rate="+strconv.Itoa(rate))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr), kgo.DefaultProduceTopic("quota-read"), kgo.AllowAutoTopicCreation(),
		kgo.ProducerBatchCompression(kgo.NoCompression()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	const n, size = 100, 1000
	for i := range n { // one batch per record, so that small fetches take few of them
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: bytes.Repeat([]byte{'r'}, size)}).FirstErr(); err != nil {
			t.Fatalf("produce %d: %v", i, err)
		}
	}
	consume := func(clientID string) (time.Duration, *throttleCounter) {
		tc := &throttleCounter{}
		c, err := kgo.NewClient(kgo.SeedBrokers(b.Addr), kgo.ClientID(clientID), kgo.ConsumeTopics("quota-read"),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxPartitionBytes(8000), kgo.FetchMaxBytes(8000),
			kgo.WithHooks(tc))
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		start := time.Now()
		for got := 0; got < n; {
			f := c.PollFetches(ctx)
			if err := f.Err(); err != nil {
				t.Fatalf("%s: fetch after %d records: %v", clientID, got, err)
			}
			got += f.NumRecords()
		}
		return time.Since(start), tc
	}
	elapsed, tc := consume("slow-reader")
	expected := time.Duration(float64(n*size)/rate*float64(time.Second)) - 2*time.Second
	t.Logf("slow-reader: %d bytes in %v (≥ %v at %d B/s), %d throttles, longest %d ms", n*size, elapsed, expected, rate, tc.n.Load(), tc.maxMillis.Load())
	if tc.n.Load() == 0 {
		t.Fatal("no fetch response carried ThrottleTimeMillis > 0")
	}
	if elapsed < expected*7/10 {
		t.Fatalf("slow-reader read %d bytes in %v, want ≥ %v", n*size, elapsed, expected*7/10)
	}
	if _, tc := consume("fast-reader"); tc.n.Load() != 0 {
		t.Fatalf("fast-reader (no quota) was throttled %d times", tc.n.Load())
	}
}
