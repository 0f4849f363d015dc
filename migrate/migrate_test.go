package migrate

import (
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sluice/controller"
	"sluice/internal/batch"
)

// kafkaEnc writes metadata records as Kafka's generated code does (flexible versions), for
// tests: the frame, then the body.
type kafkaEnc struct{ b []byte }

func frame(apiKey, version uint64) *kafkaEnc {
	e := &kafkaEnc{}
	e.b = binary.AppendUvarint(e.b, 1)
	e.b = binary.AppendUvarint(e.b, apiKey)
	e.b = binary.AppendUvarint(e.b, version)
	return e
}

func (e *kafkaEnc) str(s string) *kafkaEnc {
	e.b = binary.AppendUvarint(e.b, uint64(len(s)+1))
	e.b = append(e.b, s...)
	return e
}
func (e *kafkaEnc) null() *kafkaEnc     { e.b = append(e.b, 0); return e }
func (e *kafkaEnc) i8(v int8) *kafkaEnc { e.b = append(e.b, byte(v)); return e }
func (e *kafkaEnc) i16(v int16) *kafkaEnc {
	e.b = binary.BigEndian.AppendUint16(e.b, uint16(v))
	return e
}
func (e *kafkaEnc) i32(v int32) *kafkaEnc {
	e.b = binary.BigEndian.AppendUint32(e.b, uint32(v))
	return e
}
func (e *kafkaEnc) i64(v int64) *kafkaEnc {
	e.b = binary.BigEndian.AppendUint64(e.b, uint64(v))
	return e
}
func (e *kafkaEnc) uuid(u kafkaUUID) *kafkaEnc { e.b = append(e.b, u[:]...); return e }
func (e *kafkaEnc) i32s(vs ...int32) *kafkaEnc {
	e.b = binary.AppendUvarint(e.b, uint64(len(vs)+1))
	for _, v := range vs {
		e.i32(v)
	}
	return e
}
func (e *kafkaEnc) noTags() []byte { return append(e.b, 0) }

var (
	topicA = kafkaUUID{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}
	aclID  = kafkaUUID{9, 9, 9}
)

func topicRec(name string, id kafkaUUID) []byte {
	return frame(keyTopic, 0).str(name).uuid(id).noTags()
}

func partitionRec(id kafkaUUID, p int32, leaderEpoch int32) []byte {
	return frame(keyPartition, 1).i32(p).uuid(id).i32s(1).i32s(1).i32s().i32s().i32(1).i32(leaderEpoch).i32(3).
		uuids(kafkaUUID{7}).noTags()
}

func (e *kafkaEnc) uuids(us ...kafkaUUID) *kafkaEnc {
	e.b = binary.AppendUvarint(e.b, uint64(len(us)+1))
	for _, u := range us {
		e.uuid(u)
	}
	return e
}

// partitionChangeRec changes the ISR (tag 0) and the leader (tag 1).
func partitionChangeRec(id kafkaUUID, p int32, isr []int32, leader int32) []byte {
	e := frame(keyPartitionChange, 0).i32(p).uuid(id)
	isrField := (&kafkaEnc{}).i32s(isr...).b
	e.b = append(e.b, 2) // two tagged fields
	e.b = append(e.b, 0, byte(len(isrField)))
	e.b = append(e.b, isrField...)
	e.b = append(e.b, 1, 4)
	e.i32(leader)
	return e.b
}

func configRec(typ int8, name, key string, value *string) []byte {
	e := frame(keyConfig, 0).i8(typ).str(name).str(key)
	if value == nil {
		e.null()
	} else {
		e.str(*value)
	}
	return e.noTags()
}

func quotaRec(user, key string, v float64) []byte {
	e := frame(keyClientQuota, 0)
	e.b = append(e.b, 2) // one entity part
	e.str("user").str(user)
	e.b = append(e.b, 0) // the part's tags
	return e.str(key).i64(int64(math.Float64bits(v))).i8(0).noTags()
}

func scramRec(name string) []byte {
	e := frame(keyUserScramCredential, 0).str(name).i8(2)
	for _, b := range [][]byte{[]byte("salt"), []byte("stored"), []byte("server")} {
		e.b = binary.AppendUvarint(e.b, uint64(len(b)+1))
		e.b = append(e.b, b...)
	}
	return e.i32(4096).noTags()
}

func aclRec(id kafkaUUID) []byte {
	return frame(keyAccessControlEntry, 0).uuid(id).i8(2).str("a").i8(3).str("User:alice").str("*").i8(3).i8(3).noTags()
}

func producerIDsRec(next int64) []byte {
	return frame(keyProducerIDs, 0).i32(1).i64(5).i64(next).noTags()
}

// metadataBatch is a data batch of records at base.
func metadataBatch(base int64, recs ...[]byte) []byte {
	var rs []batch.Record
	for _, r := range recs {
		rs = append(rs, batch.Record{Value: r})
	}
	b := batch.Build(batch.Header{BaseOffset: base, LastOffsetDelta: int32(len(recs) - 1), ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1}, rs)
	return b
}

func TestDecodeMetadataRecords(t *testing.T) {
	im := newKafkaImage()
	recs := [][]byte{
		topicRec("a", topicA),
		partitionRec(topicA, 0, 4),
		partitionRec(topicA, 1, 0),
		partitionChangeRec(topicA, 1, []int32{1}, 1),
		configRec(2, "a", "retention.ms", ptr("1000")),
		configRec(2, "a", "segment.ms", ptr("5")),
		configRec(2, "a", "segment.ms", nil),
		quotaRec("bob", "producer_byte_rate", 1024),
		scramRec("alice"),
		aclRec(aclID),
		producerIDsRec(2000),
		frame(keyNoOp, 0).noTags(),
		frame(keyClearElr, 0).str("").noTags(),
		frame(99, 0).noTags(), // a record type from a newer Kafka
	}
	for i, r := range recs {
		rec, err := decodeMetadataRecord(r)
		if err != nil {
			t.Fatalf("record %d: %v", i, err)
		}
		if err := im.apply(rec); err != nil {
			t.Fatalf("record %d: %v", i, err)
		}
	}
	ta := im.topics[topicA]
	if ta == nil || ta.Name != "a" || len(ta.partitions) != 2 {
		t.Fatalf("topic: %+v", ta)
	}
	if p := ta.partitions[0]; p.LeaderEpoch != 4 || p.Leader != 1 || fmt.Sprint(p.Replicas) != "[1]" {
		t.Errorf("partition 0: %+v", p)
	}
	if p := ta.partitions[1]; p.LeaderEpoch != 0 || p.PartitionEpoch != 4 || fmt.Sprint(p.ISR) != "[1]" {
		t.Errorf("partition 1 after a change that kept its leader: %+v", p)
	}
	if got := fmt.Sprint(im.configs[configKey{2, "a"}]); got != "map[retention.ms:1000]" {
		t.Errorf("configs %s", got)
	}
	if q := im.quotas[`user="bob"`]; q == nil || q.values["producer_byte_rate"] != 1024 {
		t.Errorf("quotas %v", im.quotas)
	}
	if s := im.scram[scramKey{"alice", 2}]; s == nil || string(s.StoredKey) != "stored" || s.Iterations != 4096 {
		t.Errorf("scram %+v", s)
	}
	if a := im.acls[aclID]; a == nil || a.Principal != "User:alice" || a.Operation != 3 {
		t.Errorf("acl %+v", a)
	}
	if im.nextProducerID != 2000 || im.skipped[keyNoOp] != 1 || im.skipped[99] != 1 {
		t.Errorf("producer id %d, skipped %v", im.nextProducerID, im.skipped)
	}
	// Every truncation of every record is an error, never a panic.
	for i, r := range recs {
		for n := range len(r) - 1 {
			if _, err := decodeMetadataRecord(r[:n]); err == nil && n > 3 {
				if rec, _ := decodeMetadataRecord(r[:n]); rec != nil {
					if _, skipped := rec.(*kSkipped); !skipped {
						t.Errorf("record %d cut to %d bytes decoded", i, n)
					}
				}
			}
		}
	}
}

func ptr(s string) *string { return &s }

// TestRealKafkaMetadata replays a metadata log and bootstrap snapshot written by Apache Kafka
// 4.4.0 (testdata, from the compat test's broker): three topics and __consumer_offsets, topic
// configs, a cluster-wide broker config, the finalized features, a producer ID block.
func TestRealKafkaMetadata(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"00000000000000000000.log", "00000000000000000000-0000000000.checkpoint"} {
		data, err := os.ReadFile(filepath.Join("testdata", "kafka-4.4.0-metadata", name))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	im, err := readKafkaMetadata(dir)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, name := range []string{"__consumer_offsets", "mig-compacted", "mig-multi", "mig-plain"} {
		id, ok := im.topicByName[name]
		if !ok {
			t.Fatalf("no topic %s in %v", name, im.topicByName)
		}
		got = append(got, fmt.Sprintf("%s:%d", name, len(im.topics[id].partitions)))
	}
	if s := strings.Join(got, " "); s != "__consumer_offsets:4 mig-compacted:3 mig-multi:4 mig-plain:1" {
		t.Errorf("topics %s", s)
	}
	if id := im.topicByName["mig-plain"]; base64.RawURLEncoding.EncodeToString(id[:]) != "8iIBLoW9QUKLHuzTUvZYhw" {
		t.Errorf("mig-plain's topic ID %x", id)
	}
	if v := im.configs[configKey{2, "mig-compacted"}]["cleanup.policy"]; v != "compact" {
		t.Errorf("mig-compacted's cleanup.policy %q", v)
	}
	if v := im.configs[configKey{4, ""}]["min.insync.replicas"]; v != "1" || im.features["metadata.version"] != 33 || im.nextProducerID != 1000 {
		t.Errorf("cluster config %q, features %v, next producer ID %d", v, im.features, im.nextProducerID)
	}
}

// kafkaDir builds a minimal stopped Kafka KRaft broker directory: topic "a" (topicA) with one
// partition of two records, and its metadata log.
func kafkaDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	write := func(rel, content string) {
		t.Helper()
		path := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("meta.properties", "#\nnode.id=1\ndirectory.id=NIoVb0vYvE34OLXuaNg36w\nversion=1\ncluster.id=c2x1aWNlLWJlbmNoLTAwMQ\n")
	write(".kafka_cleanshutdown", `{"version":0,"brokerEpoch":3}`)
	log := metadataBatch(0, topicRec("a", topicA), partitionRec(topicA, 0, 2), configRec(2, "a", "retention.ms", ptr("1000")))
	log = append(log, metadataBatch(3, aclRec(aclID), producerIDsRec(1000))...)
	write("__cluster_metadata-0/00000000000000000000.log", string(log))
	seg := batch.Build(batch.Header{BaseOffset: 0, LastOffsetDelta: 1, PartitionLeaderEpoch: 2, ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1},
		[]batch.Record{{Key: []byte("k0"), Value: []byte("v0")}, {Key: []byte("k1"), Value: []byte("v1")}})
	write("a-0/00000000000000000000.log", string(seg))
	write("a-0/00000000000000000000.index", "")
	write("a-0/00000000000000000000.timeindex", "")
	write("a-0/00000000000000000002.snapshot", "kafka's producer snapshot")
	write("a-0/leader-epoch-checkpoint", "0\n1\n2 0\n")
	write("a-0/partition.metadata", "version: 0\ntopic_id: "+base64.RawURLEncoding.EncodeToString(topicA[:])+"\n")
	write("recovery-point-offset-checkpoint", "0\n1\na 0 2\n")
	write("log-start-offset-checkpoint", "0\n1\na 0 0\n")
	write("replication-offset-checkpoint", "0\n1\na 0 2\n")
	write("cleaner-offset-checkpoint", "")
	return dir
}

func prepare(t *testing.T, dirs ...string) (*Plan, error) {
	t.Helper()
	return Prepare(Options{KafkaDirs: dirs, LogDir: dirs[0], MetadataDir: dirs[0], NodeID: 1, OffsetsTopicPartitions: 50, TransactionTopicPartitions: 50})
}

func TestPrepareAndApply(t *testing.T) {
	dir := kafkaDir(t)
	before := listing(t, dir)
	p, err := prepare(t, dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Problems) > 0 {
		t.Fatalf("problems: %v", p.Problems)
	}
	if after := listing(t, dir); after != before {
		t.Fatalf("Prepare changed the directory:\n%s\n%s", before, after)
	}
	var kinds []string
	for _, r := range p.Records {
		kinds = append(kinds, fmt.Sprintf("%T", r))
	}
	if got := strings.Join(kinds, " "); got != "*controller.TopicRecord *controller.PartitionRecord *controller.ConfigRecord *controller.AccessControlEntryRecord *controller.ProducerIDsRecord" {
		t.Fatalf("records: %s", got)
	}
	if pr := p.Records[1].(*controller.PartitionRecord); pr.LeaderEpoch != 3 || pr.Leader != 1 || pr.TopicID != controller.TopicID(topicA) {
		t.Errorf("partition record %+v: want leader 1 at epoch 3 (above Kafka's 2)", pr)
	}
	var bootstrapped *Plan
	if err := p.Apply(func(p *Plan) error { bootstrapped = p; return nil }); err != nil {
		t.Fatal(err)
	}
	if bootstrapped != p {
		t.Fatal("Apply did not write the bootstrap")
	}
	for name, want := range map[string]string{
		"a-0/recovery-point-offset-checkpoint":            "0\n1\na 0 2\n",
		"a-0/log-start-offset-checkpoint":                 "0\n1\na 0 0\n",
		KafkaMetadataBackup + "/00000000000000000000.log": "",
	} {
		data, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Errorf("%s: %v", name, err)
		} else if want != "" && string(data) != want {
			t.Errorf("%s: %q, want %q", name, data, want)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "a-0", "00000000000000000002.snapshot")); !os.IsNotExist(err) {
		t.Errorf("Kafka's producer snapshot is still there: %v", err)
	}
	if _, err := prepare(t, dir); err == nil || !strings.Contains(err.Error(), "migrated already") {
		t.Errorf("a second migrate: %v", err)
	}
}

// TestPrepareRefuses: each kind of bad input is reported, naming the file, and nothing is
// adopted.
func TestPrepareRefuses(t *testing.T) {
	for _, tc := range []struct {
		name    string
		damage  func(t *testing.T, dir string) []string // returns extra dirs for --from-kafka
		want    string
		isError bool
	}{
		{"zookeeper directory", func(t *testing.T, dir string) []string {
			rewrite(t, filepath.Join(dir, "meta.properties"), "version=0\nbroker.id=1\ncluster.id=x\n")
			return nil
		}, "ZooKeeper-mode Kafka directory. Migrate the cluster to KRaft first", true},
		{"another cluster's directory mixed in", func(t *testing.T, dir string) []string {
			other := t.TempDir()
			rewrite(t, filepath.Join(other, "meta.properties"), "node.id=1\nversion=1\ncluster.id=AAAAAAAAAAAAAAAAAAAAAA\n")
			return []string{other}
		}, "directories of different brokers are mixed", true},
		{"truncated segment", func(t *testing.T, dir string) []string {
			path := filepath.Join(dir, "a-0", "00000000000000000000.log")
			data, _ := os.ReadFile(path)
			rewrite(t, path, string(data[:len(data)-5]))
			return nil
		}, "a-0: 00000000000000000000.log: truncated", false},
		{"missing index", func(t *testing.T, dir string) []string {
			os.Remove(filepath.Join(dir, "a-0", "00000000000000000000.timeindex"))
			return nil
		}, "a-0: 00000000000000000000.timeindex: missing index", false},
		{"corrupt segment", func(t *testing.T, dir string) []string {
			flipLastByte(t, filepath.Join(dir, "a-0", "00000000000000000000.log"))
			return nil
		}, "CRC mismatch", false},
		{"corrupt metadata log", func(t *testing.T, dir string) []string {
			flipLastByte(t, filepath.Join(dir, KafkaMetadataDir, "00000000000000000000.log"))
			return nil
		}, "corrupt Kafka metadata record", false},
		{"another topic's directory", func(t *testing.T, dir string) []string {
			rewrite(t, filepath.Join(dir, "a-0", "partition.metadata"), "version: 0\ntopic_id: AAAAAAAAAAAAAAAAAAAAAA\n")
			return nil
		}, "partition.metadata names topic ID AAAAAAAAAAAAAAAAAAAAAA", false},
		{"missing partition directory", func(t *testing.T, dir string) []string {
			os.RemoveAll(filepath.Join(dir, "a-0"))
			return nil
		}, "a-0: no partition directory", false},
		{"replica out of the ISR", func(t *testing.T, dir string) []string {
			path := filepath.Join(dir, KafkaMetadataDir, "00000000000000000000.log")
			data, _ := os.ReadFile(path)
			rewrite(t, path, string(append(data, metadataBatch(5, partitionChangeRec(topicA, 0, []int32{2}, 2))...)))
			return nil
		}, "a-0: this broker's replica is neither in the ISR [2] nor eligible", false},
		{"no metadata log", func(t *testing.T, dir string) []string {
			os.RemoveAll(filepath.Join(dir, KafkaMetadataDir))
			return nil
		}, "no __cluster_metadata-0", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := kafkaDir(t)
			extra := tc.damage(t, dir)
			before := listing(t, dir)
			p, err := prepare(t, append([]string{dir}, extra...)...)
			if tc.isError {
				if err == nil || !strings.Contains(err.Error(), tc.want) {
					t.Fatalf("error %v, want one containing %q", err, tc.want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			requireRefused(t, p, dir, before, tc.want)
		})
	}
}

// requireRefused checks that p names a problem containing want, that Apply refuses to run, and
// that dir is as it was (listing before).
func requireRefused(t *testing.T, p *Plan, dir, before, want string) {
	t.Helper()
	if !strings.Contains(strings.Join(p.Problems, "\n"), want) {
		t.Fatalf("problems %q, want one containing %q", p.Problems, want)
	}
	if err := p.Apply(func(*Plan) error { t.Fatal("bootstrap written despite problems"); return nil }); err == nil {
		t.Fatal("Apply ran despite problems")
	}
	if after := listing(t, dir); after != before {
		t.Fatal("the directory changed")
	}
}

func rewrite(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func flipLastByte(t *testing.T, path string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	data[len(data)-1] ^= 0xff
	rewrite(t, path, string(data))
}

func listing(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	filepath.Walk(dir, func(path string, info os.FileInfo, err error) error {
		if err == nil {
			fmt.Fprintf(&b, "%s %d %d\n", path, info.Size(), info.ModTime().UnixNano())
		}
		return nil
	})
	return b.String()
}

func FuzzDecodeMetadataRecord(f *testing.F) {
	for _, r := range [][]byte{topicRec("a", topicA), partitionRec(topicA, 3, 1), partitionChangeRec(topicA, 0, []int32{1, 2}, 2),
		configRec(2, "t", "k", ptr("v")), quotaRec("u", "k", 1), scramRec("s"), aclRec(aclID), producerIDsRec(7)} {
		f.Add(r)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		rec, err := decodeMetadataRecord(b)
		if err == nil {
			newKafkaImage().apply(rec) // may refuse, must not panic
		}
	})
}

func FuzzReplayMetadataBatches(f *testing.F) {
	f.Add(metadataBatch(0, topicRec("a", topicA), partitionRec(topicA, 0, 1)))
	f.Fuzz(func(t *testing.T, data []byte) {
		im := newKafkaImage()
		replayBatches("fuzz", data, 0, im.apply)
	})
}

// A Kafka broker with its metadata.log.dir apart from log.dirs: both are given, the metadata
// log is found in one and the partitions in the other.
func TestPrepareSeparateMetadataDir(t *testing.T) {
	data := kafkaDir(t)
	meta := t.TempDir()
	if err := os.Rename(filepath.Join(data, KafkaMetadataDir), filepath.Join(meta, KafkaMetadataDir)); err != nil {
		t.Fatal(err)
	}
	props, _ := os.ReadFile(filepath.Join(data, "meta.properties"))
	rewrite(t, filepath.Join(meta, "meta.properties"), string(props))
	p, err := Prepare(Options{KafkaDirs: []string{meta, data}, LogDir: data, MetadataDir: data, NodeID: 1, OffsetsTopicPartitions: 50, TransactionTopicPartitions: 50})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Problems) > 0 || len(p.Topics) != 1 || p.KafkaMetadata != filepath.Join(meta, KafkaMetadataDir) {
		t.Fatalf("problems %v, topics %v, metadata %s", p.Problems, p.Topics, p.KafkaMetadata)
	}
	// Without the metadata directory: what to give is said.
	if _, err := prepare(t, data); err == nil || !strings.Contains(err.Error(), "metadata.log.dir is elsewhere") {
		t.Fatalf("error %v", err)
	}
}

func FuzzParseOffsetCheckpoint(f *testing.F) {
	f.Add([]byte("0\n2\na 0 5\nb-c 3 7\n"))
	f.Add([]byte(""))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := parseOffsetCheckpoint("fuzz", data)
		if err == nil {
			for k, v := range m {
				if v < 0 || !strings.Contains(k, "-") {
					t.Fatalf("entry %q=%d", k, v)
				}
			}
		}
		parseProperties(string(data))
		parseColonProperties(string(data))
	})
}

// Client metrics subscriptions (config resource type 16) are carried over as the controller
// keeps them, each key checked as an AlterConfigs of it would be; one that does not validate
// is a problem, not silently dropped.
func TestPrepareClientMetrics(t *testing.T) {
	addSubs := func(t *testing.T, dir string, recs ...[]byte) {
		t.Helper()
		path := filepath.Join(dir, KafkaMetadataDir, "00000000000000000000.log")
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		rewrite(t, path, string(append(data, metadataBatch(5, recs...)...)))
	}
	t.Run("valid", func(t *testing.T) {
		dir := kafkaDir(t)
		addSubs(t, dir, configRec(controller.ResourceClientMetrics, "sub1", "metrics", ptr("org.apache.kafka.producer.")),
			configRec(controller.ResourceClientMetrics, "sub1", "interval.ms", ptr("60000")),
			configRec(controller.ResourceClientMetrics, "sub1", "match", ptr("client_id=app-.*")))
		p, err := prepare(t, dir)
		if err != nil {
			t.Fatal(err)
		}
		if len(p.Problems) > 0 {
			t.Fatalf("problems: %v", p.Problems)
		}
		var got []string
		for _, r := range p.Records {
			if c, ok := r.(*controller.ConfigRecord); ok && c.ResourceType == controller.ResourceClientMetrics {
				got = append(got, fmt.Sprintf("%s:%s=%s", c.ResourceName, c.Key, *c.Value))
			}
		}
		if s := strings.Join(got, " "); s != "sub1:interval.ms=60000 sub1:match=client_id=app-.* sub1:metrics=org.apache.kafka.producer." {
			t.Fatalf("client metrics records: %s", s)
		}
		im, err := controller.ReplayRecords(append([]controller.Record{&controller.ClusterIDRecord{ClusterID: p.ClusterID}}, p.Records...))
		if err != nil {
			t.Fatal(err)
		}
		if s := fmt.Sprint(im.ClientMetrics); s != "map[sub1:map[interval.ms:60000 match:client_id=app-.* metrics:org.apache.kafka.producer.]]" {
			t.Fatalf("the new cluster's subscriptions: %s", s)
		}
		if strings.Contains(strings.Join(p.Notes, "\n"), "resource type 16") {
			t.Fatalf("notes still say client metrics are left out: %v", p.Notes)
		}
	})
	for _, tc := range []struct{ name, key, value, want string }{
		{"interval out of range", "interval.ms", "50", "client metrics subscription bad: interval.ms=50: Invalid value 50 for interval.ms"},
		{"unknown key", "colour", "blue", "client metrics subscription bad: colour=blue: Unknown client metrics configuration: colour"},
		{"bad match", "match", "no_such_selector=x", "client metrics subscription bad: match=no_such_selector=x"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := kafkaDir(t)
			addSubs(t, dir, configRec(controller.ResourceClientMetrics, "bad", tc.key, ptr(tc.value)))
			before := listing(t, dir)
			p, err := prepare(t, dir)
			if err != nil {
				t.Fatal(err)
			}
			requireRefused(t, p, dir, before, tc.want)
		})
	}
}

// A flushed segment's batch chain is walked from the batch its offset index's last entry
// points at (so the cost follows segments, not batches); an index entry that does not point at
// a batch holding its offset means a walk from the start; a torn tail is found either way.
func TestWalkSegmentFromIndex(t *testing.T) {
	dir := t.TempDir()
	var seg []byte
	var positions []int64
	for i := range 10 {
		positions = append(positions, int64(len(seg)))
		seg = append(seg, batch.Build(batch.Header{BaseOffset: 100 + int64(3*i), LastOffsetDelta: 2, ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1},
			[]batch.Record{{Value: []byte("a")}, {Value: []byte("b")}, {Value: []byte("c")}})...)
	}
	seg[16] = 9 // batch 0's magic: only a walk from the start reads it
	logPath, idxPath := filepath.Join(dir, "seg.log"), filepath.Join(dir, "seg.index")
	rewrite(t, logPath, string(seg))
	index := func(entries ...[2]int64) {
		var b []byte
		for _, e := range entries {
			b = binary.BigEndian.AppendUint32(b, uint32(e[0]))
			b = binary.BigEndian.AppendUint32(b, uint32(e[1]))
		}
		rewrite(t, idxPath, string(b))
	}
	// Kafka's entry: batch 7's last offset (100+21+2), relative to the base 100, at its start.
	index([2]int64{5, positions[2]}, [2]int64{23, positions[7]})
	if end, size, _, err := walkSegment(logPath, idxPath, 100, false); err != nil || end != 130 || size != int64(len(seg)) {
		t.Fatalf("from the index: end %d size %d err %v, want 130 %d nil", end, size, err, len(seg))
	}
	if _, _, _, err := walkSegment(logPath, idxPath, 100, true); err == nil {
		t.Fatal("checking CRCs walks from the start and must find batch 0's bad magic")
	}
	for name, entry := range map[string][2]int64{
		"position inside a batch": {23, positions[7] + 5},
		"offset of another batch": {2, positions[7]},
		"position past the end":   {23, int64(len(seg)) + 100},
		"zero-filled":             {0, 0},
	} {
		index(entry)
		if _, _, _, err := walkSegment(logPath, idxPath, 100, false); err == nil || !strings.Contains(err.Error(), "batch at byte 0") {
			t.Errorf("%s: err %v, want the walk from the start to find batch 0's bad magic", name, err)
		}
	}
	seg[16] = 2
	rewrite(t, logPath, string(seg[:len(seg)-4]))
	index([2]int64{23, positions[7]})
	if _, _, _, err := walkSegment(logPath, idxPath, 100, false); err == nil || !strings.Contains(err.Error(), "truncated") {
		t.Fatalf("torn tail after the indexed batch: err %v", err)
	}
}

// FuzzWalkSegment: any segment and offset index bytes give an answer or an error, never a
// panic; a walk from the index never ends below the segment's base.
func FuzzWalkSegment(f *testing.F) {
	seg := batch.Build(batch.Header{BaseOffset: 5, LastOffsetDelta: 1, ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1},
		[]batch.Record{{Value: []byte("a")}, {Value: []byte("b")}})
	seg2 := append(append([]byte{}, seg...), batch.Build(batch.Header{BaseOffset: 7, ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1},
		[]batch.Record{{Value: []byte("c")}})...)
	f.Add(seg2, binary.BigEndian.AppendUint32(binary.BigEndian.AppendUint32(nil, 2), uint32(len(seg))))
	f.Add(seg, []byte{})
	f.Fuzz(func(t *testing.T, log, index []byte) {
		dir := t.TempDir()
		logPath, idxPath := filepath.Join(dir, "s.log"), filepath.Join(dir, "s.index")
		if err := os.WriteFile(logPath, log, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(idxPath, index, 0o644); err != nil {
			t.Fatal(err)
		}
		end, size, _, err := walkSegment(logPath, idxPath, 5, false)
		if err == nil && (end < 5 || size != int64(len(log))) {
			t.Fatalf("end %d size %d for a %d-byte segment based at 5", end, size, len(log))
		}
	})
}
