package compattests

// ACLs with real clients: Apache Kafka's kafka-acls (org.apache.kafka.tools.AclCommand) adds
// and lists ACLs as a super user over SASL_PLAINTEXT PLAIN, Kafka's console producer and
// franz-go are allowed and refused by them, and a franz-go group consumer reads once it has
// READ on the topic and the group.

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/plain"
)

const (
	aclAdminPass = "admin-secret-5d1e"
	aclCommand   = "org.apache.kafka.tools.AclCommand"
)

// aclBroker is a sluice with a PLAINTEXT listener (the harness's) and a SASL_PLAINTEXT PLAIN
// listener for admin, alice and bob, with the StandardAuthorizer and super.users=User:admin.
type aclBroker struct {
	*Broker
	sasl string // the SASL_PLAINTEXT address
	dir  string
}

func startACLBroker(t *testing.T) *aclBroker {
	t.Helper()
	ports := freePorts(t, 2)
	addr := func(i int) string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[i])) }
	b := StartBrokerWith(t, BrokerOptions{Port: ports[0]},
		fmt.Sprintf("listeners=PLAINTEXT://%s,SASL_PLAINTEXT://%s", addr(0), addr(1)),
		"listener.security.protocol.map=PLAINTEXT:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT",
		"listener.name.sasl_plaintext.sasl.enabled.mechanisms=PLAIN",
		"listener.name.sasl_plaintext.plain.sasl.jaas.config="+plainModule+` required user_admin="`+aclAdminPass+
			`" user_alice="`+alicePass+`" user_bob="`+bobPass+`";`,
		"authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer",
		"super.users=User:admin",
	)
	return &aclBroker{Broker: b, sasl: addr(1), dir: t.TempDir()}
}

// client is a franz-go client logged in as user.
func (s *aclBroker) client(t *testing.T, user, pass string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(s.sasl), kgo.SASL(plain.Auth{User: user, Pass: pass}.AsMechanism())}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// properties writes a Java client config logging in as user and returns its path.
func (s *aclBroker) properties(t *testing.T, user, pass string) string {
	t.Helper()
	p := filepath.Join(s.dir, user+".properties")
	body := "security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\n" +
		`sasl.jaas.config=` + plainModule + ` required username="` + user + `" password="` + pass + `";` + "\n"
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestACLsWithKafkaTools: kafka-acls adds and lists ACLs; alice may write t but not u; bob
// cannot read t until he is given READ on t and on his group.
func TestACLsWithKafkaTools(t *testing.T) {
	lookPath(t, "java")
	kafkaJars(t)
	s := startACLBroker(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	admin := kadm.NewClient(s.client(t, "admin", aclAdminPass))
	for _, topic := range []string{"t", "u"} {
		if _, err := admin.CreateTopic(ctx, 1, 1, nil, topic); err != nil {
			t.Fatalf("admin creating %s: %v", topic, err)
		}
	}
	adminProps := s.properties(t, "admin", aclAdminPass)

	out, _ := javaTool(t, "", aclCommand, "--bootstrap-server", s.sasl, "--command-config", adminProps,
		"--add", "--allow-principal", "User:alice", "--operation", "Write", "--topic", "t")
	if !strings.Contains(out, "resourceType=TOPIC, name=t, patternType=LITERAL") {
		t.Errorf("--add printed:\n%s", out)
	}
	out, _ = javaTool(t, "", aclCommand, "--bootstrap-server", s.sasl, "--command-config", adminProps, "--list")
	if !strings.Contains(out, "name=t, patternType=LITERAL") ||
		!strings.Contains(out, "principal=User:alice, host=*, operation=WRITE, permissionType=ALLOW") {
		t.Errorf("--list does not show alice's WRITE on t:\n%s", out)
	}

	t.Run("kafka-acls as a user who is not a super user", func(t *testing.T) {
		stdout, stderr, _ := runCmdErr(javaTimeout, "", lookPath(t, "java"), "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC",
			"-cp", filepath.Join(kafkaJars(t), "*"), aclCommand, "--bootstrap-server", s.sasl,
			"--command-config", s.properties(t, "alice", alicePass), "--list")
		if !strings.Contains(stdout+stderr, "ClusterAuthorizationException") {
			t.Errorf("alice's --list was not refused with ClusterAuthorizationException:\n%s\n%s", clip(stdout), clip(stderr))
		}
	})

	t.Run("java producer", func(t *testing.T) {
		aliceProps := s.properties(t, "alice", alicePass)
		javaTool(t, "java line 1\njava line 2\n", "org.apache.kafka.tools.ConsoleProducer", "--bootstrap-server", s.sasl,
			"--topic", "t", "--producer.config", aliceProps)
		// The producer reports a failed send through its log: log it to stderr.
		log4j := filepath.Join(s.dir, "log4j.properties")
		if err := os.WriteFile(log4j, []byte("log4j.rootLogger=ERROR, stderr\nlog4j.appender.stderr=org.apache.log4j.ConsoleAppender\n"+
			"log4j.appender.stderr.Target=System.err\nlog4j.appender.stderr.layout=org.apache.log4j.PatternLayout\n"+
			"log4j.appender.stderr.layout.ConversionPattern=%p %m%n\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		stdout, stderr, _ := runCmdErr(javaTimeout, "refused line\n", lookPath(t, "java"), "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC",
			"-Dlog4j.configuration=file:"+log4j,
			"-cp", filepath.Join(kafkaJars(t), "*"), "org.apache.kafka.tools.ConsoleProducer", "--bootstrap-server", s.sasl,
			"--topic", "u", "--producer.config", aliceProps, "--producer-property", "max.block.ms=10000")
		if !strings.Contains(stdout+stderr, "TopicAuthorizationException") {
			t.Errorf("the console producer's write to u was not refused with TopicAuthorizationException:\n%s\n%s", clip(stdout), clip(stderr))
		}
	})

	t.Run("franz-go producer", func(t *testing.T) {
		alice := s.client(t, "alice", alicePass)
		if err := alice.ProduceSync(ctx, &kgo.Record{Topic: "t", Value: []byte("franz line")}).FirstErr(); err != nil {
			t.Fatalf("alice producing to t: %v", err)
		}
		pctx, pcancel := context.WithTimeout(ctx, 20*time.Second)
		defer pcancel()
		if err := alice.ProduceSync(pctx, &kgo.Record{Topic: "u", Value: []byte("refused")}).FirstErr(); !errors.Is(err, kerr.TopicAuthorizationFailed) {
			t.Fatalf("alice producing to u: %v, want TOPIC_AUTHORIZATION_FAILED", err)
		}
	})

	// Everything alice wrote to t, in order: the console producer's lines, then franz-go's.
	want := []string{"java line 1", "java line 2", "franz line"}

	t.Run("bob reads after READ on t and the group", func(t *testing.T) {
		bob := s.client(t, "bob", bobPass, kgo.ConsumeTopics("t"), kgo.ConsumerGroup("bobs"),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
		pctx, pcancel := context.WithTimeout(ctx, 15*time.Second)
		fetches := bob.PollFetches(pctx)
		pcancel()
		var refused error
		fetches.EachError(func(_ string, _ int32, err error) {
			if errors.Is(err, kerr.TopicAuthorizationFailed) || errors.Is(err, kerr.GroupAuthorizationFailed) {
				refused = err
			}
		})
		if refused == nil || fetches.NumRecords() > 0 {
			t.Fatalf("bob without ACLs: %d records, errors %v; want an authorization failure", fetches.NumRecords(), fetches.Errors())
		}
		bob.Close()

		javaTool(t, "", aclCommand, "--bootstrap-server", s.sasl, "--command-config", adminProps,
			"--add", "--allow-principal", "User:bob", "--operation", "Read", "--topic", "t", "--group", "bobs")

		bob = s.client(t, "bob", bobPass, kgo.ConsumeTopics("t"), kgo.ConsumerGroup("bobs"),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
		var got []string
		waitFor(t, 60*time.Second, "bob reads t", func() error {
			pctx, pcancel := context.WithTimeout(ctx, 5*time.Second)
			defer pcancel()
			fetches := bob.PollFetches(pctx)
			for _, e := range fetches.Errors() {
				if !errors.Is(e.Err, context.DeadlineExceeded) {
					return fmt.Errorf("fetch error on %s/%d: %w", e.Topic, e.Partition, e.Err)
				}
			}
			fetches.EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
			if len(got) < len(want) {
				return fmt.Errorf("read %q so far", got)
			}
			return nil
		})
		if strings.Join(got, "|") != strings.Join(want, "|") {
			t.Fatalf("bob read %q, want %q", got, want)
		}
		if err := bob.CommitUncommittedOffsets(ctx); err != nil {
			t.Fatalf("bob committing offsets: %v", err)
		}
	})

	// Kafka's handleConsumerGroupDescribe: describing a KIP-848 group needs DESCRIBE on the
	// group and on every topic its members are assigned, so a user cannot learn another
	// topic's name or who reads it through a group.
	t.Run("kafka-consumer-groups --describe needs DESCRIBE on the group's topics", func(t *testing.T) {
		reader := s.client(t, "admin", aclAdminPass, kgo.ConsumeTopics("t", "u"), kgo.ConsumerGroup("shared"),
			kgo.ServerSideBalancer(), kgo.Balancers(kgo.RangeBalancer()))
		waitFor(t, 60*time.Second, "the shared group's member is assigned t and u", func() error {
			described, err := admin.DescribeConsumerGroups(ctx, "shared")
			if err != nil {
				return err
			}
			d := described["shared"]
			if d.Err != nil {
				return d.Err
			}
			for _, m := range d.Members {
				if len(m.Assignment) == 2 {
					return nil
				}
			}
			pctx, pcancel := context.WithTimeout(ctx, time.Second)
			reader.PollFetches(pctx) // the consumer heartbeats while it polls
			pcancel()
			return fmt.Errorf("members %+v", d.Members)
		})
		// alice may describe t (her WRITE implies it) and the group, not u. (The ACLs are
		// added with kadm: kafka-acls is tested above, and each JVM costs seconds.)
		allowAlice := func(acl *kadm.ACLBuilder) {
			t.Helper()
			res, err := admin.CreateACLs(ctx, acl.Allow("User:alice").Operations(kadm.OpDescribe).ResourcePatternType(kadm.ACLPatternLiteral))
			if err == nil {
				for _, r := range res {
					if r.Err != nil {
						err = r.Err
					}
				}
			}
			if err != nil {
				t.Fatalf("allowing alice: %v", err)
			}
		}
		allowAlice(kadm.NewACLs().Groups("shared"))
		aliceProps := s.properties(t, "alice", alicePass)
		stdout, stderr, _ := runCmdErr(javaTimeout, "", lookPath(t, "java"), "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC",
			"-cp", filepath.Join(kafkaJars(t), "*"), "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand",
			"--bootstrap-server", s.sasl, "--command-config", aliceProps, "--describe", "--group", "shared", "--members")
		if !strings.Contains(stdout+stderr, "TopicAuthorizationException") ||
			!strings.Contains(stdout+stderr, "The group has described topic(s) that the client is not authorized to describe.") {
			t.Fatalf("alice's --describe of a group assigned u was not refused with Kafka's TopicAuthorizationException:\n%s\n%s", clip(stdout), clip(stderr))
		}
		allowAlice(kadm.NewACLs().Topics("u"))
		out, _ := javaTool(t, "", "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand",
			"--bootstrap-server", s.sasl, "--command-config", aliceProps, "--describe", "--group", "shared", "--members", "--verbose")
		if !strings.Contains(out, "shared") || !strings.Contains(out, "t:0;u:0") {
			t.Fatalf("alice's --describe with DESCRIBE on u does not show the member's assignment:\n%s", out)
		}
	})
}

// TestACLAPIsWithoutAuthorizer: with no authorizer configured every request is allowed, as
// before, and the ACL APIs answer SECURITY_DISABLED, as Kafka's.
func TestACLAPIsWithoutAuthorizer(t *testing.T) {
	b := StartBroker(t)
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr), kgo.AllowAutoTopicCreation())
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	acl := kadm.NewACLs().Allow("User:alice").Topics("t").Operations(kadm.OpWrite).ResourcePatternType(kadm.ACLPatternLiteral)
	res, err := adm.CreateACLs(ctx, acl)
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 1 || !errors.Is(res[0].Err, kerr.SecurityDisabled) {
		t.Fatalf("CreateAcls without an authorizer: %+v, want SECURITY_DISABLED", res)
	}
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "anyone-writes", Value: []byte("v")}).FirstErr(); err != nil {
		t.Fatalf("producing without an authorizer: %v", err)
	}
}
