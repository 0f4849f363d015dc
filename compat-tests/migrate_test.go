package compattests

import (
	"context"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"sluice/internal/testcluster"
)

// migrateOffsetsPartitions is offsets.topic.num.partitions on both sides: small, so Kafka and
// sluice start quickly, and not sluice's default, so the test shows migrate checks it.
const migrateOffsetsPartitions = "4"

// migrateSettings are the settings both brokers share: the internal topics' partition counts,
// and the authorizer (ACLs are kept and described by it; the PLAINTEXT clients, and Kafka's own
// controller link, are User:ANONYMOUS, a super user).
var migrateSettings = []string{"offsets.topic.num.partitions=" + migrateOffsetsPartitions,
	"transaction.state.log.num.partitions=" + migrateOffsetsPartitions,
	"authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer", "super.users=User:ANONYMOUS"}

// readRecord is what a consumer observes of one record.
type readRecord struct {
	Offset    int64
	Key       string
	Value     string
	Headers   string
	Timestamp int64
}

// TestMigrateFromKafka loads a real Apache Kafka 4.4 broker (KRaft, one node) with a plain, a
// compacted and a multi-partition topic of several segments, records with keys, headers and
// timestamps, a classic and a KIP-848 consumer group with committed offsets, an ACL and a
// topic config; stops it; runs `sluice migrate --from-kafka` on its log directory (a dry run
// first, which must change nothing); starts sluice on the result and checks what a user
// sees: every record at the same offset with the same bytes, the same topic IDs and configs,
// the groups' committed offsets and lag, and a consumer of the group resuming at its
// committed position.
//
// It runs against Kafka 4.4.0; KAFKA_VERSION=3.9.1 (any release scripts/fetch-kafka.sh
// fetches) runs it against that release instead, without the KIP-848 group before 4.0.
func TestMigrateFromKafka(t *testing.T) {
	lib := kafkaJars(t)
	kafka3 := strings.HasPrefix(os.Getenv("KAFKA_VERSION"), "3.")
	base := t.TempDir()
	kc, err := testcluster.StartKafka(testcluster.KafkaOptions{Nodes: 1, Lib: lib, BaseDir: base,
		JVMOpts:  []string{"-Xmx512m", "-Xms256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Djava.awt.headless=true"},
		Settings: migrateSettings})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(kc.Close)
	kafkaDir := kc.Nodes[0].Dir
	// Generous: the test must pass on a loaded machine (Kafka's JVM is slow to warm up).
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()

	adm, cl, err := kc.Admin()
	if err != nil {
		t.Fatal(err)
	}
	topics := map[string]struct {
		partitions int32
		configs    map[string]*string
	}{
		"mig-plain":     {1, nil},
		"mig-txn":       {1, nil},
		"mig-compacted": {3, map[string]*string{"cleanup.policy": kadm.StringPtr("compact")}},
		// 1 MiB is Kafka 4's smallest segment.bytes: ~2.4 MiB a partition makes three segments.
		"mig-multi": {4, map[string]*string{"segment.bytes": kadm.StringPtr("1048576"), "retention.ms": kadm.StringPtr("604800000")}},
	}
	for name, tp := range topics {
		if _, err := adm.CreateTopic(ctx, tp.partitions, 1, tp.configs, name); err != nil {
			t.Fatalf("create %s: %v", name, err)
		}
	}
	created, err := adm.CreateACLs(ctx, kadm.NewACLs().Allow("User:alice").Topics("mig-plain").Groups("mig-").
		Operations(kadm.OpRead).ResourcePatternType(kadm.ACLPatternPrefixed))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range created {
		if c.Err != nil {
			t.Fatalf("create ACL: %v", c.Err)
		}
	}
	scrams, err := adm.AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{{User: "alice", Mechanism: kadm.ScramSha256, Iterations: 8192, Password: "alice-secret"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range scrams {
		if s.Err != nil {
			t.Fatalf("SCRAM credential: %v", s.Err)
		}
	}
	quotas, err := adm.AlterClientQuotas(ctx, []kadm.AlterClientQuotaEntry{{Entity: kadm.ClientQuotaEntity{{Type: "user", Name: kadm.StringPtr("bob")}},
		Ops: []kadm.AlterClientQuotaOp{{Key: "producer_byte_rate", Value: 1 << 20}}}})
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range quotas {
		if q.Err != nil {
			t.Fatalf("client quota: %v", q.Err)
		}
	}
	// A client metrics subscription (config resource type 16), as kafka-client-metrics --alter
	// makes one.
	if err := alterClientMetrics(ctx, cl, "mig-sub", map[string]string{"metrics": "org.apache.kafka.producer.",
		"interval.ms": "60000", "match": "client_id=mig-.*"}); err != nil {
		t.Fatal(err)
	}
	prod, err := kgo.NewClient(kgo.SeedBrokers(kc.Bootstrap()...), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerBatchMaxBytes(64<<10), kgo.ProducerBatchCompression(kgo.NoCompression()))
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	base0 := time.Now().Add(-time.Hour).UnixMilli()
	var recs []*kgo.Record
	for i := range 40 {
		recs = append(recs, &kgo.Record{Topic: "mig-plain", Key: []byte(fmt.Sprintf("k%d", i)), Value: []byte(fmt.Sprintf("plain value %d", i)),
			Headers:   []kgo.RecordHeader{{Key: "h", Value: []byte(fmt.Sprint(i))}, {Key: "empty"}},
			Timestamp: time.UnixMilli(base0 + int64(i))})
	}
	for i := range 60 {
		recs = append(recs, &kgo.Record{Topic: "mig-compacted", Partition: int32(i % 3), Key: []byte(fmt.Sprintf("key-%d", i%7)),
			Value: []byte(fmt.Sprintf("compacted %d", i)), Timestamp: time.UnixMilli(base0 + 1000 + int64(i))})
	}
	recs = append(recs, &kgo.Record{Topic: "mig-compacted", Key: []byte("tombstone")}) // a null value
	big := strings.Repeat("x", 4000)
	for i := range 2400 {
		recs = append(recs, &kgo.Record{Topic: "mig-multi", Partition: int32(i % 4), Key: []byte(fmt.Sprint(i)),
			Value: []byte(fmt.Sprintf("%d %s", i, big)), Headers: []kgo.RecordHeader{{Key: "n", Value: []byte(fmt.Sprint(i))}}})
	}
	if err := prod.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}

	// A committed transaction: __transaction_state is adopted as it is.
	txp, err := kgo.NewClient(kgo.SeedBrokers(kc.Bootstrap()...), kgo.TransactionalID("mig-txn"), kgo.DefaultProduceTopic("mig-txn"))
	if err != nil {
		t.Fatal(err)
	}
	if err := txp.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if err := txp.ProduceSync(ctx, &kgo.Record{Key: []byte(fmt.Sprint(i)), Value: []byte("in a transaction")}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	if err := txp.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatal(err)
	}
	txp.Close()
	// A plain record after the commit marker, so the partition ends with a record a reader
	// sees. Kafka writes the marker after EndTxn answers: wait for the last stable offset to
	// pass it (three records and the marker).
	waitFor(t, 2*time.Minute, "the commit marker of mig-txn", func() error {
		lso, err := adm.ListCommittedOffsets(ctx, "mig-txn")
		if err != nil {
			return err
		}
		if o, _ := lso.Lookup("mig-txn", 0); o.Offset != 4 {
			return fmt.Errorf("last stable offset %d, want 4", o.Offset)
		}
		return nil
	})
	if err := prod.ProduceSync(ctx, &kgo.Record{Topic: "mig-txn", Value: []byte("after the transaction")}).FirstErr(); err != nil {
		t.Fatal(err)
	}

	// Groups: a classic member and a KIP-848 member consume part of their topic and commit.
	consumeAndCommit := func(group, topic string, n int, opts ...kgo.Opt) {
		t.Helper()
		c, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(kc.Bootstrap()...), kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic),
			kgo.DisableAutoCommit(), kgo.FetchMaxBytes(1 << 10)}, opts...)...)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		var got []*kgo.Record
		for len(got) < n {
			fs := c.PollRecords(ctx, n-len(got))
			if err := fs.Err0(); err != nil {
				t.Fatalf("%s: %v", group, err)
			}
			got = append(got, fs.Records()...)
		}
		if err := c.CommitRecords(ctx, got...); err != nil {
			t.Fatalf("%s: commit: %v", group, err)
		}
		c.LeaveGroup()
	}
	consumeAndCommit("mig-classic", "mig-plain", 15)
	groups := []string{"mig-classic", "mig-admin"}
	if !kafka3 {
		consumeAndCommit("mig-848", "mig-multi", 30, kgo.Balancers(kgo.StickyBalancer()), kgo.ServerSideBalancer())
		groups = append(groups, "mig-848")
	}
	// A group that only commits (kadm, no member): offsets for every partition of mig-multi.
	commits := kadm.Offsets{}
	for p := range int32(4) {
		commits.Add(kadm.Offset{Topic: "mig-multi", Partition: p, At: int64(10 + p), LeaderEpoch: -1, Metadata: "meta"})
	}
	if err := adm.CommitAllOffsets(ctx, "mig-admin", commits); err != nil {
		t.Fatal(err)
	}

	want, err := migrateSnapshot(ctx, adm, kc.Bootstrap(), []string{"mig-plain", "mig-compacted", "mig-multi", "mig-txn"}, groups)
	if err != nil {
		t.Fatal(err)
	}
	wantSub, err := describeClientMetrics(ctx, cl, "mig-sub")
	if err != nil {
		t.Fatal(err)
	}
	cl.Close()
	bin := sluiceBinary(t)
	// A running Kafka holds its directory's lock: refused, whatever the flags.
	if out, err := exec.Command(bin, "migrate", "--from-kafka", kafkaDir, "--dry-run").CombinedOutput(); err == nil ||
		!strings.Contains(string(out), "a running Kafka broker?") {
		t.Fatalf("migrate of a running Kafka's directory: err %v\n%s", err, out)
	}
	if !kc.Nodes[0].Stop() {
		t.Fatal("kafka did not stop within its deadline")
	}
	if _, err := os.Stat(filepath.Join(kafkaDir, "__cluster_metadata-0")); err != nil {
		t.Fatal(err)
	}

	setArgs := []string{"--set", "log.dirs=" + kafkaDir, "--set", "node.id=1"}
	for _, s := range migrateSettings {
		setArgs = append(setArgs, "--set", s)
	}
	before := dirListing(t, kafkaDir)
	out, err := exec.Command(bin, append([]string{"migrate", "--from-kafka", kafkaDir, "--dry-run"}, setArgs...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("migrate --dry-run: %v\n%s", err, out)
	}
	t.Logf("dry run:\n%s", out)
	for _, s := range []string{"mig-plain", "mig-compacted", "mig-multi", "__consumer_offsets", "dry run"} {
		if !strings.Contains(string(out), s) {
			t.Errorf("dry run output does not mention %q", s)
		}
	}
	if after := dirListing(t, kafkaDir); !slices.Equal(before, after) {
		t.Fatalf("--dry-run changed the directory:\nbefore %v\nafter  %v", before, after)
	}
	// The node's settings must agree with Kafka's: a different offsets.topic.num.partitions
	// would map groups to other partitions, and is refused.
	if out, err := exec.Command(bin, "migrate", "--from-kafka", kafkaDir, "--set", "log.dirs="+kafkaDir, "--set", "node.id=1",
		"--set", "transaction.state.log.num.partitions="+migrateOffsetsPartitions).CombinedOutput(); err == nil ||
		!strings.Contains(string(out), "offsets.topic.num.partitions") {
		t.Fatalf("migrate with offsets.topic.num.partitions 50 against Kafka's %s: err %v\n%s", migrateOffsetsPartitions, err, out)
	}
	out, err = exec.Command(bin, append([]string{"migrate", "--from-kafka", kafkaDir}, setArgs...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("migrate: %v\n%s", err, out)
	}
	t.Logf("migrate:\n%s", out)

	b := StartBrokerWith(t, BrokerOptions{Dir: kafkaDir}, append([]string{"node.id=1"}, migrateSettings...)...)
	scl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr))
	if err != nil {
		t.Fatal(err)
	}
	defer scl.Close()
	sadm := kadm.NewClient(scl)
	var got migrateState
	waitFor(t, 2*time.Minute, "sluice serves the migrated groups", func() error {
		var err error
		if got, err = migrateSnapshot(ctx, sadm, []string{b.Addr}, []string{"mig-plain", "mig-compacted", "mig-multi", "mig-txn"}, groups); err != nil {
			return err
		}
		if got.GroupOffsets != want.GroupOffsets {
			return fmt.Errorf("group offsets\n got %s\nwant %s", got.GroupOffsets, want.GroupOffsets)
		}
		if got.Txns != want.Txns || !strings.Contains(want.Txns, "CompleteCommit") {
			return fmt.Errorf("transactions\n got %s\nwant %s", got.Txns, want.Txns)
		}
		return nil
	})
	if got.TopicIDs != want.TopicIDs {
		t.Errorf("topic IDs\n got %s\nwant %s", got.TopicIDs, want.TopicIDs)
	}
	if got.Configs != want.Configs {
		t.Errorf("topic configs\n got %s\nwant %s", got.Configs, want.Configs)
	}
	if got.Lag != want.Lag {
		t.Errorf("lag\n got %s\nwant %s", got.Lag, want.Lag)
	}
	if got.ACLs != want.ACLs || !strings.Contains(want.ACLs, "User:alice") {
		t.Errorf("ACLs\n got %s\nwant %s", got.ACLs, want.ACLs)
	}
	if got.Users != want.Users || !strings.Contains(want.Users, "alice") {
		t.Errorf("SCRAM credentials\n got %s\nwant %s", got.Users, want.Users)
	}
	if got.Quotas != want.Quotas || !strings.Contains(want.Quotas, "bob") {
		t.Errorf("client quotas\n got %s\nwant %s", got.Quotas, want.Quotas)
	}
	if gotSub, err := describeClientMetrics(ctx, scl, "mig-sub"); err != nil || gotSub != wantSub || !strings.Contains(wantSub, "interval.ms=60000") {
		t.Errorf("client metrics subscription mig-sub\n got %s (%v)\nwant %s", gotSub, err, wantSub)
	}
	for tp, w := range want.Records {
		g := got.Records[tp]
		if !slices.Equal(g, w) {
			t.Errorf("%s: %d records read back, want %d; first difference: %s", tp, len(g), len(w), firstDiff(g, w))
		}
	}

	// A member of the classic group resumes at the committed position.
	c, err := kgo.NewClient(kgo.SeedBrokers(b.Addr), kgo.ConsumerGroup("mig-classic"), kgo.ConsumeTopics("mig-plain"), kgo.DisableAutoCommit())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fetches := c.PollRecords(ctx, 1)
	if err := fetches.Err0(); err != nil {
		t.Fatal(err)
	}
	if r := fetches.Records(); len(r) == 0 || r[0].Offset != 15 || string(r[0].Key) != "k15" {
		t.Fatalf("the resumed member's first record: %v, want offset 15, key k15", r)
	}
	c.Close()

	// The other way: a record sluice appended to an adopted segment, read by Kafka's
	// DumpLogSegments from the stopped sluice's partition directory.
	if err := scl.ProduceSync(ctx, &kgo.Record{Topic: "mig-plain", Key: []byte("after"), Value: []byte("written by sluice")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	scl.Close()
	if !b.Stop() {
		t.Fatal("sluice did not stop within its deadline")
	}
	dumpClass := "org.apache.kafka.tools.DumpLogSegments"
	if kafka3 {
		dumpClass = "kafka.tools.DumpLogSegments" // moved to tools in 4.0
	}
	dump, _ := javaTool(t, "", dumpClass, "--deep-iteration", "--print-data-log",
		"--files", filepath.Join(kafkaDir, "mig-plain-0", "00000000000000000000.log"))
	for _, s := range []string{"offset: 0 ", "payload: plain value 0", "offset: 40 ", "payload: written by sluice"} {
		if !strings.Contains(dump, s) {
			t.Errorf("DumpLogSegments does not show %q:\n%s", s, clip(dump))
		}
	}
}

// migrateState is what a user sees of a cluster, rendered as comparable text.
type migrateState struct {
	TopicIDs, Configs, GroupOffsets, Lag, ACLs, Users, Quotas, Txns string
	Records                                                         map[string][]readRecord // "topic/partition" → records
}

func migrateSnapshot(ctx context.Context, adm *kadm.Client, seeds []string, topics, groups []string) (migrateState, error) {
	var st migrateState
	td, err := adm.ListTopics(ctx, topics...)
	if err != nil {
		return st, err
	}
	var ids []string
	for _, tp := range td.Sorted() {
		ids = append(ids, fmt.Sprintf("%s=%s/%d", tp.Topic, tp.ID, len(tp.Partitions)))
	}
	st.TopicIDs = strings.Join(ids, " ")
	rc, err := adm.DescribeTopicConfigs(ctx, topics...)
	if err != nil {
		return st, err
	}
	var cfgs []string
	for _, r := range rc {
		for _, c := range r.Configs {
			if c.Source == 1 /* DYNAMIC_TOPIC_CONFIG */ {
				cfgs = append(cfgs, fmt.Sprintf("%s:%s=%s", r.Name, c.Key, c.MaybeValue()))
			}
		}
	}
	slices.Sort(cfgs)
	st.Configs = strings.Join(cfgs, " ")
	var offs, lags []string
	for _, g := range groups {
		fo, err := adm.FetchOffsets(ctx, g)
		if err != nil {
			return st, err
		}
		fo.Each(func(o kadm.OffsetResponse) {
			offs = append(offs, fmt.Sprintf("%s:%s/%d@%d(%s)", g, o.Topic, o.Partition, o.At, o.Metadata))
		})
		lag, err := adm.Lag(ctx, g)
		if err != nil {
			return st, err
		}
		for _, dl := range lag {
			for _, l := range dl.Lag.Sorted() {
				lags = append(lags, fmt.Sprintf("%s:%s/%d lag %d", g, l.Topic, l.Partition, l.Lag))
			}
		}
	}
	slices.Sort(offs)
	slices.Sort(lags)
	st.GroupOffsets, st.Lag = strings.Join(offs, " "), strings.Join(lags, " ")
	acls, err := adm.DescribeACLs(ctx, kadm.NewACLs().AnyResource().Allow().AllowHosts().Deny().DenyHosts().
		Operations(kadm.OpAny).ResourcePatternType(kadm.ACLPatternAny))
	if err != nil {
		return st, err
	}
	var as []string
	for _, r := range acls {
		if r.Err != nil {
			return st, fmt.Errorf("describe ACLs: %v %s", r.Err, r.ErrMessage)
		}
		for _, d := range r.Described {
			as = append(as, fmt.Sprintf("%s %s %s %s %s", d.Type, d.Name, d.Principal, d.Operation, d.Permission))
		}
	}
	slices.Sort(as)
	st.ACLs = strings.Join(as, " ")
	users, err := adm.DescribeUserSCRAMs(ctx)
	if err != nil {
		return st, err
	}
	var us []string
	for _, u := range users {
		for _, c := range u.CredInfos {
			us = append(us, fmt.Sprintf("%s:%s/%d", u.User, c.Mechanism, c.Iterations))
		}
	}
	slices.Sort(us)
	st.Users = strings.Join(us, " ")
	qs, err := adm.DescribeClientQuotas(ctx, false, nil)
	if err != nil {
		return st, err
	}
	var qd []string
	for _, q := range qs {
		qd = append(qd, fmt.Sprintf("%s=%v", q.Entity, q.Values))
	}
	slices.Sort(qd)
	st.Quotas = strings.Join(qd, " ")
	txns, err := adm.DescribeTransactions(ctx, "mig-txn")
	if err != nil {
		return st, err
	}
	for _, tx := range txns {
		st.Txns += fmt.Sprintf("%s %s pid %d epoch %d err %v;", tx.TxnID, tx.State, tx.ProducerID, tx.ProducerEpoch, tx.Err)
	}

	// Every record of every partition, from the log start, with a fresh client.
	ends, err := adm.ListEndOffsets(ctx, topics...)
	if err != nil {
		return st, err
	}
	parts := map[string]map[int32]kgo.Offset{}
	remaining := 0
	ends.Each(func(o kadm.ListedOffset) {
		if parts[o.Topic] == nil {
			parts[o.Topic] = map[int32]kgo.Offset{}
		}
		parts[o.Topic][o.Partition] = kgo.NewOffset().AtStart()
		if o.Offset > 0 {
			remaining++
		}
	})
	st.Records = map[string][]readRecord{}
	rd, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.ConsumePartitions(parts))
	if err != nil {
		return st, err
	}
	defer rd.Close()
	done := map[string]bool{}
	// One attempt reads for at most a minute; a caller that retries gets a fresh one.
	pctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	for len(done) < remaining {
		fs := rd.PollFetches(pctx)
		if err := fs.Err0(); err != nil {
			return st, err
		}
		fs.EachRecord(func(r *kgo.Record) {
			tp := fmt.Sprintf("%s/%d", r.Topic, r.Partition)
			var hs []string
			for _, h := range r.Headers {
				hs = append(hs, h.Key+"="+string(h.Value))
			}
			v := string(r.Value)
			if r.Value == nil {
				v = "<null>"
			}
			st.Records[tp] = append(st.Records[tp], readRecord{r.Offset, string(r.Key), v, strings.Join(hs, ","), r.Timestamp.UnixMilli()})
			if end, ok := ends.Lookup(r.Topic, r.Partition); ok && r.Offset+1 >= end.Offset {
				done[tp] = true
			}
		})
	}
	return st, nil
}

func firstDiff(got, want []readRecord) string {
	for i := range min(len(got), len(want)) {
		if got[i] != want[i] {
			return fmt.Sprintf("at %d: got %+v, want %+v", i, got[i], want[i])
		}
	}
	return "one is a prefix of the other"
}

// dirListing is every file under dir with its size and modification time.
func dirListing(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		out = append(out, fmt.Sprintf("%s %d %d", path, info.Size(), info.ModTime().UnixNano()))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// alterClientMetrics sets a client metrics subscription's keys (IncrementalAlterConfigs SET on
// resource type 16).
func alterClientMetrics(ctx context.Context, cl *kgo.Client, name string, cfg map[string]string) error {
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	res := kmsg.NewIncrementalAlterConfigsRequestResource()
	res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeClientMetrics, name
	for _, k := range slices.Sorted(maps.Keys(cfg)) {
		c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
		c.Name, c.Value, c.Op = k, kmsg.StringPtr(cfg[k]), kmsg.IncrementalAlterConfigOpSet
		res.Configs = append(res.Configs, c)
	}
	req.Resources = append(req.Resources, res)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return err
	}
	for _, r := range resp.Resources {
		if err := kerr.ErrorForCode(r.ErrorCode); err != nil {
			return fmt.Errorf("alter client metrics %s: %v %v", name, err, r.ErrorMessage)
		}
	}
	return nil
}

// describeClientMetrics renders a subscription's keys that are set, as "k=v" sorted.
func describeClientMetrics(ctx context.Context, cl *kgo.Client, name string) (string, error) {
	req := kmsg.NewPtrDescribeConfigsRequest()
	res := kmsg.NewDescribeConfigsRequestResource()
	res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeClientMetrics, name
	req.Resources = append(req.Resources, res)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return "", err
	}
	var kv []string
	for _, r := range resp.Resources {
		if err := kerr.ErrorForCode(r.ErrorCode); err != nil {
			return "", fmt.Errorf("describe client metrics %s: %v", name, err)
		}
		for _, c := range r.Configs {
			if c.Value != nil && c.Source == kmsg.ConfigSourceClientMetricsConfig {
				kv = append(kv, c.Name+"="+*c.Value)
			}
		}
	}
	slices.Sort(kv)
	return strings.Join(kv, " "), nil
}
