package migrate

import (
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"

	"sluice/authz"
	"sluice/controller"
	"sluice/internal/config"
	"sluice/internal/telemetry"
	"sluice/logstore"
)

// KafkaMetadataBackup is what Apply renames Kafka's metadata log directory to: kept, so the
// adoption can be undone by hand before sluice has written anything, and skipped by sluice's
// scan of partition directories.
const KafkaMetadataBackup = KafkaMetadataDir + ".kafka"

// Options describe the adoption: Kafka's directories and the sluice node that takes them.
type Options struct {
	// KafkaDirs are the stopped Kafka broker's log.dirs (and metadata.log.dir, if separate).
	KafkaDirs []string
	// LogDir and MetadataDir are the sluice node's log.dirs and metadata.log.dir.
	LogDir, MetadataDir string
	// NodeID is the sluice node's node.id.
	NodeID int32
	// OffsetsTopicPartitions and TransactionTopicPartitions are the node's
	// offsets.topic.num.partitions and transaction.state.log.num.partitions: a group or
	// transactional ID maps to a partition by the partition count, so they must equal the
	// partition counts of Kafka's __consumer_offsets and __transaction_state.
	OffsetsTopicPartitions, TransactionTopicPartitions int32
	// CheckAllCRCs checks every batch's CRC in every segment, not only in the segments Kafka's
	// recovery would scan (those above the recovery point).
	CheckAllCRCs bool
}

// Plan is what Prepare found: what Apply would adopt, and the problems that stop it.
type Plan struct {
	ClusterID   string
	NodeID      int32
	LogDir      string
	MetadataDir string
	// KafkaMetadata is the Kafka metadata log directory the records came from.
	KafkaMetadata string
	Topics        []TopicPlan
	Groups        []string
	// Records are the sluice metadata records of the new cluster (written as bootstrap
	// records: the first controller writes them with the cluster ID).
	Records []controller.Record
	// Problems stop Apply; Notes are information (what is not carried over, and why).
	Problems, Notes []string

	partitions  []partitionPlan
	metaRecords int
}

// TopicPlan is one topic to adopt.
type TopicPlan struct {
	Name       string
	ID         string
	Partitions int
	Segments   int
	Bytes      int64
	Configs    int
}

type partitionPlan struct {
	dir                              string
	topic                            string
	partition                        int32
	recoveryPoint, logStart, cleaner int64
	hasCleaner                       bool
}

// Prepare reads and checks a stopped Kafka broker's directories and plans their adoption. It
// writes nothing. An error means the directories could not be read at all; everything else
// found wrong is in Plan.Problems.
func Prepare(opts Options) (*Plan, error) {
	if len(opts.KafkaDirs) == 0 {
		return nil, errors.New("no Kafka directory given")
	}
	p := &Plan{LogDir: opts.LogDir, MetadataDir: opts.MetadataDir, NodeID: opts.NodeID}
	problem := func(format string, args ...any) { p.Problems = append(p.Problems, fmt.Sprintf(format, args...)) }
	note := func(format string, args ...any) { p.Notes = append(p.Notes, fmt.Sprintf(format, args...)) }

	// Identity: every directory of one cluster and one node; the metadata log in one of them;
	// partitions in at most one (sluice keeps one log directory).
	var first *metaProps
	var dataDir string
	for _, dir := range opts.KafkaDirs {
		dir = filepath.Clean(dir)
		mp, err := readMetaProperties(dir)
		if err != nil {
			return nil, err
		}
		if first == nil {
			first = &mp
		} else if mp.ClusterID != first.ClusterID || mp.NodeID != first.NodeID {
			return nil, fmt.Errorf("%s belongs to cluster %s node %d, but %s to cluster %s node %d: directories of different brokers are mixed",
				dir, mp.ClusterID, mp.NodeID, opts.KafkaDirs[0], first.ClusterID, first.NodeID)
		}
		if st, err := os.Stat(filepath.Join(dir, KafkaMetadataDir)); err == nil && st.IsDir() {
			if p.KafkaMetadata != "" {
				return nil, fmt.Errorf("both %s and %s hold a metadata log", p.KafkaMetadata, dir)
			}
			p.KafkaMetadata = filepath.Join(dir, KafkaMetadataDir)
		}
		names, err := kafkaPartitionDirs(dir)
		if err != nil {
			return nil, err
		}
		if len(names) > 0 {
			if dataDir != "" {
				return nil, fmt.Errorf("partitions in %s and in %s: sluice keeps one log directory; move the partitions into one with Kafka (kafka-reassign-partitions --reassignment-json-file with log_dirs) before migrating", dataDir, dir)
			}
			dataDir = dir
		}
	}
	p.ClusterID = first.ClusterID
	if p.KafkaMetadata == "" {
		if _, err := os.Stat(filepath.Join(opts.KafkaDirs[0], KafkaMetadataBackup)); err == nil {
			return nil, fmt.Errorf("%s was migrated already (%s is there); start sluice on it", opts.KafkaDirs[0], KafkaMetadataBackup)
		}
		return nil, fmt.Errorf("no %s in %s: not the directory of a KRaft broker, or its metadata.log.dir is elsewhere (give it too, comma-separated)",
			KafkaMetadataDir, strings.Join(opts.KafkaDirs, ", "))
	}
	if dataDir == "" {
		dataDir = filepath.Dir(p.KafkaMetadata)
	}
	if filepath.Clean(opts.LogDir) != dataDir {
		problem("the node's log.dirs is %s, Kafka's partitions are in %s: adoption is in place; set log.dirs=%s", opts.LogDir, dataDir, dataDir)
	}
	if filepath.Clean(opts.MetadataDir) == filepath.Clean(p.KafkaMetadata) {
		problem("metadata.log.dir %s is Kafka's metadata log itself", opts.MetadataDir)
	}
	if opts.NodeID != first.NodeID {
		problem("the node's node.id is %d, Kafka's meta.properties says %d: set node.id=%d", opts.NodeID, first.NodeID, first.NodeID)
	}

	im, err := readKafkaMetadata(p.KafkaMetadata)
	if err != nil {
		problem("metadata log %s: %v", p.KafkaMetadata, err)
		return p, nil
	}
	p.metaRecords = im.records
	if im.openTxnRecords > 0 {
		note("%d metadata records of a metadata transaction Kafka never committed are left out, as Kafka would", im.openTxnRecords)
	}
	for key, n := range im.skipped {
		switch key {
		case keyDelegationToken, keyRemoveDelegationToken:
			note("%d delegation token records: sluice has no delegation tokens; clients must authenticate otherwise", n)
		case keyRegisterBroker, keyUnregisterBroker, keyFenceBroker, keyUnfenceBroker, keyBrokerRegistrationChange,
			keyRegisterController, keyUnregisterController, keyNoOp, keyZkMigrationState:
		default:
			note("%d metadata records of unknown type %d skipped", n, key)
		}
	}
	var feats []string
	for name, level := range im.features {
		feats = append(feats, fmt.Sprintf("%s=%d", name, level))
	}
	slices.Sort(feats)
	if len(feats) > 0 {
		note("Kafka's finalized features (%s) are not copied: the new cluster runs at sluice's levels (kafka-features describe)", strings.Join(feats, ", "))
	}

	// Checkpoints Kafka keeps per log directory; sluice keeps them per partition directory.
	recovery, err := readOffsetCheckpoint(filepath.Join(dataDir, "recovery-point-offset-checkpoint"))
	if err != nil {
		problem("%v", err)
	}
	logStart, err := readOffsetCheckpoint(filepath.Join(dataDir, "log-start-offset-checkpoint"))
	if err != nil {
		problem("%v", err)
	}
	cleaner, err := readOffsetCheckpoint(filepath.Join(dataDir, "cleaner-offset-checkpoint"))
	if err != nil {
		problem("%v", err)
	}
	hws, err := readOffsetCheckpoint(filepath.Join(dataDir, "replication-offset-checkpoint"))
	if err != nil {
		problem("%v", err)
	}
	if _, err := os.Stat(filepath.Join(dataDir, ".kafka_cleanshutdown")); err != nil {
		note("no .kafka_cleanshutdown: Kafka did not stop cleanly; every segment's CRCs are checked, and sluice's recovery scans the segments above the recovery point at its first start")
		opts.CheckAllCRCs = true
	}

	// Topics, by name, with their partitions' directories verified.
	names, err := kafkaPartitionDirs(dataDir)
	if err != nil {
		return nil, err
	}
	onDisk := map[string]bool{}
	for _, n := range names {
		onDisk[n] = true
	}
	var topics []*kTopicState
	for _, t := range im.topics {
		topics = append(topics, t)
	}
	sort.Slice(topics, func(i, j int) bool { return topics[i].Name < topics[j].Name })
	for _, t := range topics {
		tp := TopicPlan{Name: t.Name, ID: base64.RawURLEncoding.EncodeToString(t.ID[:]), Partitions: len(t.partitions)}
		cfg := im.configs[configKey{resourceTypeTopic, t.Name}]
		tp.Configs = len(cfg)
		internal := t.Name == "__consumer_offsets" || t.Name == "__transaction_state" || t.Name == "__share_group_state"
		if v, ok := cfg["compression.type"]; internal && ok && v != "producer" {
			// Kafka gives __transaction_state compression.type=uncompressed; sluice's
			// coordinators write uncompressed batches whatever the setting, and sluice keeps
			// only "producer" (no broker-side recompression).
			cfg["compression.type"] = "producer"
			note("%s: compression.type=%s becomes producer (sluice's coordinators write uncompressed batches)", t.Name, v)
		}
		if err := config.ValidateTopicConfigs(cfg); err != nil {
			problem("topic %s: its configuration is not one sluice takes: %v (change it with kafka-configs before migrating)", t.Name, err)
		}
		if t.Name == "__consumer_offsets" && int32(len(t.partitions)) != opts.OffsetsTopicPartitions {
			problem("__consumer_offsets has %d partitions, the node's offsets.topic.num.partitions is %d: set offsets.topic.num.partitions=%d, or groups map to the wrong partition",
				len(t.partitions), opts.OffsetsTopicPartitions, len(t.partitions))
		}
		if t.Name == "__transaction_state" && int32(len(t.partitions)) != opts.TransactionTopicPartitions {
			problem("__transaction_state has %d partitions, the node's transaction.state.log.num.partitions is %d: set transaction.state.log.num.partitions=%d, or transactional IDs map to the wrong partition",
				len(t.partitions), opts.TransactionTopicPartitions, len(t.partitions))
		}
		p.Records = append(p.Records, &controller.TopicRecord{Name: t.Name, TopicID: controller.TopicID(t.ID), Internal: internal})
		for i := int32(0); i < int32(len(t.partitions)); i++ {
			kp := t.partitions[i]
			name := fmt.Sprintf("%s-%d", t.Name, i)
			if kp == nil {
				problem("topic %s: partition %d is missing from the metadata", t.Name, i)
				continue
			}
			if !slices.Contains(kp.Replicas, first.NodeID) {
				problem("%s: this broker (node %d) holds no replica of it (replicas %v); move a replica here with Kafka first", name, first.NodeID, kp.Replicas)
				continue
			}
			if !slices.Contains(kp.ISR, first.NodeID) && !slices.Contains(kp.ELR, first.NodeID) {
				problem("%s: this broker's replica is neither in the ISR %v nor eligible (ELR %v), so it may lack acknowledged records; let it catch up in Kafka first", name, kp.ISR, kp.ELR)
				continue
			}
			if !onDisk[name] {
				problem("%s: no partition directory in %s", name, dataDir)
				continue
			}
			delete(onDisk, name)
			if len(kp.Replicas) > 1 {
				note("%s: replicas %v become this node alone", name, kp.Replicas)
			}
			rp := recovery[name]
			rep := verifyPartitionDir(filepath.Join(dataDir, name), rp, opts.CheckAllCRCs)
			for _, pr := range rep.Problems {
				problem("%s: %s", name, pr)
			}
			if rep.TopicIDInDir != t.ID && len(rep.Problems) == 0 {
				problem("%s: partition.metadata names topic ID %s, the metadata %s", name,
					base64.RawURLEncoding.EncodeToString(rep.TopicIDInDir[:]), tp.ID)
			}
			if hw, ok := hws[name]; ok && hw > rep.LogEnd {
				problem("%s: the high watermark checkpoint (%d) is past the log end (%d): segments are missing", name, hw, rep.LogEnd)
			}
			tp.Segments += rep.Segments
			tp.Bytes += rep.Bytes
			// The new leader epoch is above every epoch Kafka used, in the metadata and in the
			// log, so appends after the adoption start a new epoch.
			epoch := max(kp.LeaderEpoch, rep.MaxEpoch, 0) + 1
			p.Records = append(p.Records, &controller.PartitionRecord{TopicID: controller.TopicID(t.ID), Partition: i,
				Replicas: []int32{opts.NodeID}, ISR: []int32{opts.NodeID}, Leader: opts.NodeID,
				LeaderEpoch: epoch, PartitionEpoch: max(kp.PartitionEpoch, 0) + 1})
			pp := partitionPlan{dir: filepath.Join(dataDir, name), topic: t.Name, partition: i,
				recoveryPoint: min(rp, rep.LogEnd), logStart: max(logStart[name], rep.LogStart)}
			pp.cleaner, pp.hasCleaner = cleaner[name]
			p.partitions = append(p.partitions, pp)
		}
		p.Topics = append(p.Topics, tp)
	}
	for name := range onDisk {
		if strings.HasSuffix(name, "-delete") || strings.Contains(name, "-delete") || strings.HasSuffix(name, "-stray") || strings.HasSuffix(name, "-future") {
			note("%s: Kafka's leftover (a deletion or a move not finished) is left as it is", name)
			continue
		}
		note("%s: a partition directory of no topic in the metadata; left as it is, not adopted", name)
	}

	// Configs other than topics' (brokers', groups', client metrics subscriptions'), quotas, SCRAM credentials, ACLs, the producer ID block.
	var cfgKeys []configKey
	for k := range im.configs {
		cfgKeys = append(cfgKeys, k)
	}
	sort.Slice(cfgKeys, func(i, j int) bool {
		if cfgKeys[i].resourceType != cfgKeys[j].resourceType {
			return cfgKeys[i].resourceType < cfgKeys[j].resourceType
		}
		return cfgKeys[i].name < cfgKeys[j].name
	})
	for _, k := range cfgKeys {
		switch k.resourceType {
		case controller.ResourceTopic:
			if _, ok := im.topicByName[k.name]; !ok {
				continue
			}
		case controller.ResourceBroker, controller.ResourceGroup:
			if k.resourceType == controller.ResourceBroker && k.name != "" && k.name != strconv.Itoa(int(first.NodeID)) {
				note("dynamic configs of broker %s (another node) are left out", k.name)
				continue
			}
		case controller.ResourceClientMetrics:
			// Client metrics subscriptions (KIP-714), checked key by key as the controller
			// checks an AlterConfigs of them (telemetry.ValidateKey).
			if k.name == "" {
				problem("a client metrics subscription with an empty name (remove it with kafka-client-metrics before migrating)")
				continue
			}
		default:
			note("%d dynamic configs of resource type %d (%s) are left out: sluice does not keep that resource", len(im.configs[k]), k.resourceType, k.name)
			continue
		}
		keys := make([]string, 0, len(im.configs[k]))
		for key := range im.configs[k] {
			keys = append(keys, key)
		}
		slices.Sort(keys)
		for _, key := range keys {
			v := im.configs[k][key]
			if k.resourceType == controller.ResourceBroker {
				if err := config.ValidateBrokerDynamic(key, v); err != nil {
					problem("dynamic broker config %s=%s: %v (remove it with kafka-configs before migrating)", key, v, err)
					continue
				}
			}
			if k.resourceType == controller.ResourceClientMetrics {
				if err := telemetry.ValidateKey(key, v); err != nil {
					problem("client metrics subscription %s: %s=%s: %s (change it with kafka-client-metrics before migrating)", k.name, key, v, err.Message)
					continue
				}
			}
			p.Records = append(p.Records, &controller.ConfigRecord{ResourceType: k.resourceType, ResourceName: k.name, Key: key, Value: &v})
		}
	}
	var quotaKeys []string
	for k := range im.quotas {
		quotaKeys = append(quotaKeys, k)
	}
	slices.Sort(quotaKeys)
	for _, k := range quotaKeys {
		q := im.quotas[k]
		var entity []controller.QuotaEntityPart
		for _, e := range q.entity {
			entity = append(entity, controller.QuotaEntityPart{Type: e.Type, Name: e.Name})
		}
		keys := make([]string, 0, len(q.values))
		for key := range q.values {
			keys = append(keys, key)
		}
		slices.Sort(keys)
		for _, key := range keys {
			p.Records = append(p.Records, &controller.ClientQuotaRecord{Entity: entity, Key: key, Value: q.values[key]})
		}
	}
	var scramKeys []scramKey
	for k := range im.scram {
		scramKeys = append(scramKeys, k)
	}
	sort.Slice(scramKeys, func(i, j int) bool {
		return scramKeys[i].name < scramKeys[j].name || scramKeys[i].name == scramKeys[j].name && scramKeys[i].mechanism < scramKeys[j].mechanism
	})
	for _, k := range scramKeys {
		s := im.scram[k]
		p.Records = append(p.Records, &controller.UserScramCredentialRecord{Name: s.Name, Mechanism: s.Mechanism,
			Salt: s.Salt, StoredKey: s.StoredKey, ServerKey: s.ServerKey, Iterations: s.Iterations})
	}
	var acls []authz.ACL
	for _, a := range im.acls {
		acls = append(acls, authz.ACL{ResourceType: a.ResourceType, ResourceName: a.ResourceName, PatternType: a.PatternType,
			Principal: a.Principal, Host: a.Host, Operation: a.Operation, Permission: a.PermissionType})
	}
	sort.Slice(acls, func(i, j int) bool { return fmt.Sprint(acls[i]) < fmt.Sprint(acls[j]) })
	for _, a := range acls {
		p.Records = append(p.Records, &controller.AccessControlEntryRecord{ACL: a})
	}
	if im.nextProducerID > 0 {
		p.Records = append(p.Records, &controller.ProducerIDsRecord{BrokerID: opts.NodeID, NextProducerID: im.nextProducerID})
	}

	var newProtocol []string
	p.Groups, newProtocol = groupsIn(dataDir, im)
	if len(newProtocol) > 0 {
		note("groups %s use the consumer, streams or share group protocol: their committed offsets are kept, their members join again (sluice does not read Kafka's records of their membership and assignment)",
			strings.Join(newProtocol, " "))
	}
	if _, ok := im.topicByName["__share_group_state"]; ok {
		note("__share_group_state is adopted as a topic but not read: sluice keeps share group state in memory, so share groups start from share.auto.offset.reset")
	}
	if err := checkRecordsApply(p.ClusterID, p.Records); err != nil {
		problem("the translated metadata does not apply: %v", err)
	}
	return p, nil
}

// kafkaPartitionDirs lists dir's partition directories: "<topic>-<n>" directories other
// than the metadata log.
func kafkaPartitionDirs(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range entries {
		if !e.IsDir() || e.Name() == KafkaMetadataDir || e.Name() == KafkaMetadataBackup {
			continue
		}
		if _, _, ok := splitPartitionDirName(e.Name()); ok || strings.Contains(e.Name(), "-delete") || strings.HasSuffix(e.Name(), "-stray") || strings.HasSuffix(e.Name(), "-future") {
			out = append(out, e.Name())
		}
	}
	return out, nil
}

// checkRecordsApply replays the planned records on an empty image, as the first controller
// will, so a record sluice would refuse is a problem now rather than a failed start.
func checkRecordsApply(clusterID string, recs []controller.Record) error {
	all := append([]controller.Record{&controller.ClusterIDRecord{ClusterID: clusterID}}, recs...)
	_, err := controller.ReplayRecords(all)
	return err
}

// Report writes the plan as an operator reads it.
func (p *Plan) Report(w io.Writer, dryRun bool) {
	if dryRun {
		fmt.Fprintln(w, "dry run: nothing is changed")
	}
	fmt.Fprintf(w, "Kafka cluster %s, node %d: metadata %s (%d records)\n", p.ClusterID, p.NodeID, p.KafkaMetadata, p.metaRecords)
	var parts, segs int
	var bytes int64
	fmt.Fprintf(w, "%-40s %-22s %10s %8s %14s %7s\n", "TOPIC", "TOPIC ID", "PARTITIONS", "SEGMENTS", "BYTES", "CONFIGS")
	for _, t := range p.Topics {
		fmt.Fprintf(w, "%-40s %-22s %10d %8d %14d %7d\n", t.Name, t.ID, t.Partitions, t.Segments, t.Bytes, t.Configs)
		parts += t.Partitions
		segs += t.Segments
		bytes += t.Bytes
	}
	fmt.Fprintf(w, "%d topics, %d partitions, %d segments, %d bytes\n", len(p.Topics), parts, segs, bytes)
	fmt.Fprintf(w, "%d groups with committed offsets or state: %s\n", len(p.Groups), strings.Join(p.Groups, " "))
	fmt.Fprintf(w, "%d sluice metadata records (topics, partitions, configs, quotas, SCRAM credentials, ACLs, producer IDs)\n", len(p.Records))
	for _, n := range p.Notes {
		fmt.Fprintln(w, "note:", n)
	}
	for _, pr := range p.Problems {
		fmt.Fprintln(w, "problem:", pr)
	}
}

// Apply adopts the directories in place. REQUIRES: Prepare found no problem. Segments,
// indexes, leader-epoch-checkpoint, partition.metadata, producer snapshots and Kafka's
// replication-offset-checkpoint stay as they are (sluice reads them as Kafka wrote them). It
// writes, in order: each partition's own recovery-point, log-start and cleaner offset
// checkpoints (Kafka keeps these per log directory, sluice per partition), then
// writeBootstrap (the caller's: meta.properties and the metadata records for the first
// controller), and last renames Kafka's metadata log to KafkaMetadataBackup, which marks the
// directory as adopted. Each step can be repeated if one fails.
func (p *Plan) Apply(writeBootstrap func(*Plan) error) error {
	if len(p.Problems) > 0 {
		return fmt.Errorf("%d problems; nothing adopted", len(p.Problems))
	}
	for _, pp := range p.partitions {
		files := map[string]int64{"recovery-point-offset-checkpoint": pp.recoveryPoint, "log-start-offset-checkpoint": pp.logStart}
		if pp.hasCleaner {
			files["cleaner-offset-checkpoint"] = pp.cleaner
		}
		for name, off := range files {
			data := fmt.Sprintf("0\n1\n%s %d %d\n", pp.topic, pp.partition, off)
			if err := logstore.WriteFileAtomic(logstore.OSFS{}, pp.dir, name, []byte(data)); err != nil {
				return err
			}
		}
		if err := removeKafkaProducerSnapshots(pp.dir); err != nil {
			return err
		}
	}
	if err := writeBootstrap(p); err != nil {
		return err
	}
	return os.Rename(p.KafkaMetadata, filepath.Join(filepath.Dir(p.KafkaMetadata), KafkaMetadataBackup))
}

// removeKafkaProducerSnapshots removes Kafka's producer-state snapshots (<offset>.snapshot in
// Kafka's layout) from a partition directory. They are derived state: sluice's own layout
// differs, and without one it rebuilds the producer state from the log (as Kafka does without
// its snapshots), so leaving them only makes the first start log each as unreadable.
func removeKafkaProducerSnapshots(dir string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		name := e.Name()
		if !strings.HasSuffix(name, ".snapshot") || len(name) != len("00000000000000000000.snapshot") {
			continue
		}
		path := filepath.Join(dir, name)
		head, err := readFileLimit(path, 1<<30)
		if err != nil {
			return err
		}
		if len(head) >= 4 && string(head[:4]) == sluiceSnapshotMagic {
			continue
		}
		if err := os.Remove(path); err != nil {
			return err
		}
	}
	return nil
}

// sluiceSnapshotMagic starts sluice's producer snapshots (logstore/doc.go).
const sluiceSnapshotMagic = "SLPS"
