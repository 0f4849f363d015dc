package controller

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"

	"sluice/authz"
)

// ErrInvalidRecord is returned (and the record skipped) when a committed record does not fit
// the state it is applied to, e.g. a PartitionRecord for an unknown topic. Skipping is
// deterministic, so every node still computes the same image.
var ErrInvalidRecord = errors.New("controller: record does not apply")

// emptyImage is the image before any record.
func emptyImage() *Image {
	return &Image{
		ControllerID:  -1,
		Brokers:       map[int32]*BrokerInfo{},
		Topics:        map[string]*TopicInfo{},
		TopicsByID:    map[TopicID]*TopicInfo{},
		BrokerConfigs: map[string]map[string]string{},
		changed:       make(chan struct{}),
	}
}

// applyRecords is the metadata state machine: it returns the image that results from
// applying recs to base, with Offset set to offset. base is not modified; the result shares
// every unchanged map, topic and broker with base. Records that do not apply are skipped and
// reported in errs.
func applyRecords(base *Image, offset int64, recs []Record) (next *Image, errs []error) {
	b := newImageBuilder(base)
	b.offset = offset
	for _, r := range recs {
		if err := b.apply(r); err != nil {
			errs = append(errs, err)
		}
	}
	return b.finish(offset), errs
}

// imageBuilder applies records to a copy-on-write copy of an image. Invariant: a map or
// object is mutated only if this builder created it (the ...Owned flags and ownedTopics);
// everything else is shared with base and read-only.
type imageBuilder struct {
	img *Image // shallow copy of the base image
	// offset is the raft index of the entry whose records are being applied (the working
	// image's builder leaves it at the base's offset: it is not known before commit).
	offset int64

	topicsOwned, topicsByIDOwned, brokersOwned, brokerConfigsOwned bool
	aclsOwned                                                      bool
	ownedTopics                                                    map[*TopicInfo]bool
	ownedTopicConfigs                                              map[*TopicInfo]bool
	ownedBrokerConfigs                                             map[string]bool
	// scramOwned and quotasOwned: Image.Scram and Image.Quotas were cloned by this builder
	// (their inner maps are cloned on every change, never shared for writing).
	scramOwned, quotasOwned bool
	// featuresOwned: Image.FeatureLevels was cloned by this builder.
	featuresOwned bool
}

func newImageBuilder(base *Image) *imageBuilder {
	img := *base
	img.changed = nil
	return &imageBuilder{
		img:                &img,
		offset:             base.Offset,
		ownedTopics:        map[*TopicInfo]bool{},
		ownedTopicConfigs:  map[*TopicInfo]bool{},
		ownedBrokerConfigs: map[string]bool{},
	}
}

func (b *imageBuilder) finish(offset int64) *Image {
	img := b.img
	if offset > img.Offset {
		img.Offset = offset
	}
	img.changed = make(chan struct{})
	b.img = nil // the builder must not be used again
	return img
}

func (b *imageBuilder) topicsForWrite() {
	if !b.topicsOwned {
		b.img.Topics = cloneMap(b.img.Topics)
		b.topicsOwned = true
	}
	if !b.topicsByIDOwned {
		b.img.TopicsByID = cloneMap(b.img.TopicsByID)
		b.topicsByIDOwned = true
	}
}

// topicForWrite returns a mutable copy of the topic (installed in both maps).
func (b *imageBuilder) topicForWrite(t *TopicInfo) *TopicInfo {
	if b.ownedTopics[t] {
		return t
	}
	c := *t
	c.Partitions = slices.Clone(t.Partitions)
	b.topicsForWrite()
	b.img.Topics[c.Name] = &c
	b.img.TopicsByID[c.ID] = &c
	b.ownedTopics[&c] = true
	return &c
}

func (b *imageBuilder) apply(r Record) error {
	img := b.img
	switch r := r.(type) {
	case *ClusterIDRecord:
		if img.ClusterID != "" && img.ClusterID != r.ClusterID {
			return fmt.Errorf("%w: cluster ID %q already set, not %q", ErrInvalidRecord, img.ClusterID, r.ClusterID)
		}
		img.ClusterID = r.ClusterID

	case *RegisterBrokerRecord:
		if old := img.Brokers[r.BrokerID]; old != nil && old.Epoch >= r.BrokerEpoch {
			return fmt.Errorf("%w: broker %d epoch %d not above %d", ErrInvalidRecord, r.BrokerID, r.BrokerEpoch, old.Epoch)
		}
		if !b.brokersOwned {
			img.Brokers = cloneMap(img.Brokers)
			b.brokersOwned = true
		}
		img.Brokers[r.BrokerID] = &BrokerInfo{
			ID:               r.BrokerID,
			Epoch:            r.BrokerEpoch,
			Endpoints:        slices.Clone(r.Endpoints),
			Rack:             cloneStringPtr(r.Rack),
			Fenced:           r.Fenced,
			IncarnationID:    r.IncarnationID,
			RegisteredOffset: b.offset,
			LogDirs:          slices.Clone(r.LogDirs),
		}

	case *BrokerChangeRecord:
		old := img.Brokers[r.BrokerID]
		if old == nil || old.Epoch != r.BrokerEpoch {
			return fmt.Errorf("%w: change of broker %d epoch %d, not the registered one", ErrInvalidRecord, r.BrokerID, r.BrokerEpoch)
		}
		if !b.brokersOwned {
			img.Brokers = cloneMap(img.Brokers)
			b.brokersOwned = true
		}
		next := *old
		if r.Fenced != nil {
			next.Fenced = *r.Fenced
		}
		if r.InControlledShutdown != nil {
			next.InControlledShutdown = *r.InControlledShutdown
		}
		if r.LogDirOffline != nil {
			next.LogDirOffline = *r.LogDirOffline
		}
		if r.OfflineLogDirs != nil {
			next.OfflineLogDirs = cloneNonEmptyDirs(*r.OfflineLogDirs)
		}
		img.Brokers[r.BrokerID] = &next

	case *ReplicaDirsRecord:
		if old := img.Brokers[r.BrokerID]; old == nil || old.Epoch != r.BrokerEpoch {
			return fmt.Errorf("%w: replica directories of broker %d epoch %d, not the registered one", ErrInvalidRecord, r.BrokerID, r.BrokerEpoch)
		}
		for _, rp := range r.Partitions {
			t := img.TopicsByID[rp.TopicID]
			if t == nil || rp.Partition < 0 || int(rp.Partition) >= len(t.Partitions) {
				return fmt.Errorf("%w: replica directory of unknown partition %s/%d", ErrInvalidRecord, rp.TopicID, rp.Partition)
			}
			t = b.topicForWrite(t)
			p := &t.Partitions[rp.Partition]
			dirs := make(map[int32][16]byte, len(p.Directories)+1)
			for k, v := range p.Directories {
				dirs[k] = v
			}
			dirs[r.BrokerID] = r.Dir
			p.Directories = dirs
		}

	case *UnregisterBrokerRecord:
		old := img.Brokers[r.BrokerID]
		if old == nil || old.Epoch != r.BrokerEpoch {
			return fmt.Errorf("%w: unregistration of broker %d epoch %d, not the registered one", ErrInvalidRecord, r.BrokerID, r.BrokerEpoch)
		}
		if !b.brokersOwned {
			img.Brokers = cloneMap(img.Brokers)
			b.brokersOwned = true
		}
		delete(img.Brokers, r.BrokerID)

	case *PartitionChangeRecord:
		t := img.TopicsByID[r.TopicID]
		if t == nil || r.Partition < 0 || int(r.Partition) >= len(t.Partitions) {
			return fmt.Errorf("%w: change of unknown partition %s/%d", ErrInvalidRecord, r.TopicID, r.Partition)
		}
		if old := t.Partitions[r.Partition]; r.PartitionEpoch <= old.PartitionEpoch || r.LeaderEpoch < old.LeaderEpoch {
			return fmt.Errorf("%w: change of %s/%d to partition epoch %d leader epoch %d, not above %d/%d", ErrInvalidRecord,
				t.Name, r.Partition, r.PartitionEpoch, r.LeaderEpoch, old.PartitionEpoch, old.LeaderEpoch)
		}
		if r.Replicas != nil {
			if err := checkAssignment(r.Replicas, r.AddingReplicas, r.RemovingReplicas); err != nil {
				return fmt.Errorf("%w: change of %s/%d: %v", ErrInvalidRecord, t.Name, r.Partition, err)
			}
		}
		t = b.topicForWrite(t)
		p := &t.Partitions[r.Partition]
		p.Leader, p.ISR = r.Leader, slices.Clone(r.ISR)
		p.LeaderEpoch, p.PartitionEpoch = r.LeaderEpoch, r.PartitionEpoch
		p.ELR, p.LastKnownELR = cloneNonEmpty(r.ELR), cloneNonEmpty(r.LastKnownELR)
		p.LeaderRecovering = r.LeaderRecovering
		if r.Replicas != nil {
			p.Replicas = slices.Clone(r.Replicas)
			p.AddingReplicas, p.RemovingReplicas = cloneNonEmpty(r.AddingReplicas), cloneNonEmpty(r.RemovingReplicas)
		}

	case *TopicRecord:
		if img.Topics[r.Name] != nil {
			return fmt.Errorf("%w: topic %q exists", ErrInvalidRecord, r.Name)
		}
		if r.TopicID.IsZero() || img.TopicsByID[r.TopicID] != nil {
			return fmt.Errorf("%w: topic ID %s is zero or in use", ErrInvalidRecord, r.TopicID)
		}
		t := &TopicInfo{Name: r.Name, ID: r.TopicID, Internal: r.Internal}
		b.topicsForWrite()
		img.Topics[t.Name] = t
		img.TopicsByID[t.ID] = t
		b.ownedTopics[t] = true

	case *PartitionRecord:
		t := img.TopicsByID[r.TopicID]
		if t == nil {
			return fmt.Errorf("%w: partition %d of unknown topic ID %s", ErrInvalidRecord, r.Partition, r.TopicID)
		}
		if r.Partition < 0 || int(r.Partition) > len(t.Partitions) {
			return fmt.Errorf("%w: partition %d of topic %q with %d partitions", ErrInvalidRecord, r.Partition, t.Name, len(t.Partitions))
		}
		if len(r.AddingReplicas)+len(r.RemovingReplicas) > 0 {
			if err := checkAssignment(r.Replicas, r.AddingReplicas, r.RemovingReplicas); err != nil {
				return fmt.Errorf("%w: partition %d of topic %q: %v", ErrInvalidRecord, r.Partition, t.Name, err)
			}
		}
		t = b.topicForWrite(t)
		p := PartitionInfo{
			Partition:        r.Partition,
			Replicas:         slices.Clone(r.Replicas),
			ISR:              slices.Clone(r.ISR),
			Leader:           r.Leader,
			LeaderEpoch:      r.LeaderEpoch,
			PartitionEpoch:   r.PartitionEpoch,
			AddingReplicas:   cloneNonEmpty(r.AddingReplicas),
			RemovingReplicas: cloneNonEmpty(r.RemovingReplicas),
			ELR:              cloneNonEmpty(r.ELR),
			LastKnownELR:     cloneNonEmpty(r.LastKnownELR),
			LeaderRecovering: r.LeaderRecovering,
		}
		if int(r.Partition) == len(t.Partitions) {
			t.Partitions = append(t.Partitions, p)
		} else {
			t.Partitions[r.Partition] = p
		}

	case *ConfigRecord:
		switch r.ResourceType {
		case ResourceTopic:
			t := img.Topics[r.ResourceName]
			if t == nil {
				return fmt.Errorf("%w: config for unknown topic %q", ErrInvalidRecord, r.ResourceName)
			}
			t = b.topicForWrite(t)
			if !b.ownedTopicConfigs[t] {
				t.Configs = cloneMap(t.Configs)
				b.ownedTopicConfigs[t] = true
			}
			setOrDelete(t.Configs, r.Key, r.Value)
		case ResourceBroker:
			if !b.brokerConfigsOwned {
				img.BrokerConfigs = cloneMap(img.BrokerConfigs)
				b.brokerConfigsOwned = true
			}
			if !b.ownedBrokerConfigs[r.ResourceName] {
				img.BrokerConfigs[r.ResourceName] = cloneMap(img.BrokerConfigs[r.ResourceName])
				b.ownedBrokerConfigs[r.ResourceName] = true
			}
			m := img.BrokerConfigs[r.ResourceName]
			setOrDelete(m, r.Key, r.Value)
			if len(m) == 0 {
				delete(img.BrokerConfigs, r.ResourceName)
				delete(b.ownedBrokerConfigs, r.ResourceName)
			}
		case ResourceGroup:
			if r.ResourceName == "" {
				return fmt.Errorf("%w: config for an empty group ID", ErrInvalidRecord)
			}
			gc := make(map[string]map[string]string, len(img.GroupConfigs)+1)
			for k, v := range img.GroupConfigs {
				gc[k] = v
			}
			m := cloneMap(gc[r.ResourceName])
			if m == nil {
				m = map[string]string{}
			}
			setOrDelete(m, r.Key, r.Value)
			if len(m) == 0 {
				delete(gc, r.ResourceName)
			} else {
				gc[r.ResourceName] = m
			}
			img.GroupConfigs = gc
		case ResourceClientMetrics:
			if r.ResourceName == "" {
				return fmt.Errorf("%w: config for an empty client metrics subscription name", ErrInvalidRecord)
			}
			img.ClientMetrics = withNamedConfig(img.ClientMetrics, r.ResourceName, r.Key, r.Value)
		default:
			return fmt.Errorf("%w: config resource type %d", ErrInvalidRecord, r.ResourceType)
		}

	case *RemoveTopicRecord:
		t := img.TopicsByID[r.TopicID]
		if t == nil {
			return fmt.Errorf("%w: removing unknown topic ID %s", ErrInvalidRecord, r.TopicID)
		}
		b.topicsForWrite()
		delete(img.Topics, t.Name)
		delete(img.TopicsByID, t.ID)

	case *ProducerIDsRecord:
		if r.NextProducerID <= img.NextProducerID {
			return fmt.Errorf("%w: next producer ID %d not above %d", ErrInvalidRecord, r.NextProducerID, img.NextProducerID)
		}
		img.NextProducerID = r.NextProducerID

	case *UserScramCredentialRecord, *RemoveUserScramCredentialRecord:
		if err := b.applyScram(r); err != nil {
			return fmt.Errorf("%w: SCRAM credential record %T for an unknown mechanism or user", ErrInvalidRecord, r)
		}

	case *ClientQuotaRecord:
		return b.applyQuota(r)
	case *FeatureLevelRecord:
		return b.applyFeatureLevel(r)
	case *AccessControlEntryRecord, *RemoveAccessControlEntryRecord:
		return b.applyACL(r)

	default:
		return fmt.Errorf("%w: unknown record %T", ErrInvalidRecord, r)
	}
	return nil
}

func setOrDelete(m map[string]string, key string, value *string) {
	if value == nil {
		delete(m, key)
	} else {
		m[key] = *value
	}
}

// cloneMap copies m; the result is never nil.
// cloneNonEmptyDirs clones dirs, nil when empty.
func cloneNonEmptyDirs(dirs [][16]byte) [][16]byte {
	if len(dirs) == 0 {
		return nil
	}
	return slices.Clone(dirs)
}

func cloneMap[K comparable, V any](m map[K]V) map[K]V {
	if m == nil {
		return map[K]V{}
	}
	// maps.Clone copies the table wholesale, several times faster than re-inserting.
	return maps.Clone(m)
}

func cloneStringPtr(s *string) *string {
	if s == nil {
		return nil
	}
	c := *s
	return &c
}

// imageSnapshotVersion versions the JSON encoding of a state machine snapshot.
const imageSnapshotVersion = 1

// imageSnapshot is the serialized form of an Image kept in snapshot files.
type imageSnapshot struct {
	Version       int                          `json:"version"`
	Offset        int64                        `json:"offset"`
	ClusterID     string                       `json:"cluster_id"`
	Brokers       []*BrokerInfo                `json:"brokers"`
	Topics        []*TopicInfo                 `json:"topics"`
	BrokerConfigs map[string]map[string]string `json:"broker_configs"`
	// GroupConfigs were added after version 1 without a version change, as ACLs were.
	GroupConfigs   map[string]map[string]string `json:"group_configs,omitempty"`
	ClientMetrics  map[string]map[string]string `json:"client_metrics,omitempty"`
	NextProducerID int64                        `json:"next_producer_id"`
	VoterEndpoints []VoterEndpoint              `json:"voter_endpoints,omitempty"`
	// Scram: user -> mechanism -> credential; Quotas: every entity's quota values.
	Scram  map[string]map[int8]ScramInfo `json:"scram,omitempty"`
	Quotas []snapshotQuota               `json:"quotas,omitempty"`
	// ACLs were added after version 1 without a version change: an older reader ignores
	// them, a newer one reads their absence as no ACLs.
	ACLs []authz.ACL `json:"acls,omitempty"`
	// FeatureLevels were added the same way: absent is no FeatureLevelRecord yet.
	FeatureLevels map[string]int16 `json:"feature_levels,omitempty"`
}

// encodeImage serializes the state machine (not ControllerID, which is not replicated state).
func encodeImage(im *Image) []byte {
	s := imageSnapshot{
		Version:        imageSnapshotVersion,
		Offset:         im.Offset,
		ClusterID:      im.ClusterID,
		BrokerConfigs:  im.BrokerConfigs,
		GroupConfigs:   im.GroupConfigs,
		ClientMetrics:  im.ClientMetrics,
		NextProducerID: im.NextProducerID,
		Scram:          im.Scram,
		Quotas:         snapshotQuotas(im.Quotas),
		ACLs:           im.ACLs.All(),
		FeatureLevels:  im.FeatureLevels,
	}
	for _, ep := range im.VoterEndpoints {
		s.VoterEndpoints = append(s.VoterEndpoints, ep)
	}
	slices.SortFunc(s.VoterEndpoints, func(a, b VoterEndpoint) int { return int(a.NodeID) - int(b.NodeID) })
	for _, b := range im.Brokers {
		s.Brokers = append(s.Brokers, b)
	}
	slices.SortFunc(s.Brokers, func(a, b *BrokerInfo) int { return int(a.ID) - int(b.ID) })
	for _, t := range im.Topics {
		s.Topics = append(s.Topics, t)
	}
	slices.SortFunc(s.Topics, func(a, b *TopicInfo) int {
		switch {
		case a.Name < b.Name:
			return -1
		case a.Name > b.Name:
			return 1
		}
		return 0
	})
	out, err := json.Marshal(&s)
	if err != nil {
		panic(fmt.Sprintf("controller: encoding image: %v", err))
	}
	return out
}

// decodeImage is the inverse of encodeImage.
func decodeImage(data []byte) (*Image, error) {
	var s imageSnapshot
	if err := json.Unmarshal(data, &s); err != nil {
		return nil, fmt.Errorf("%w: image snapshot: %v", ErrCorruptRecord, err)
	}
	if s.Version != imageSnapshotVersion {
		return nil, fmt.Errorf("%w: image snapshot version %d", ErrCorruptRecord, s.Version)
	}
	im := emptyImage()
	im.Offset = s.Offset
	im.ClusterID = s.ClusterID
	im.NextProducerID = s.NextProducerID
	for _, ep := range s.VoterEndpoints {
		if im.VoterEndpoints == nil {
			im.VoterEndpoints = map[int32]VoterEndpoint{}
		}
		im.VoterEndpoints[ep.NodeID] = ep
	}
	for _, b := range s.Brokers {
		if b == nil {
			return nil, fmt.Errorf("%w: image snapshot: null broker", ErrCorruptRecord)
		}
		im.Brokers[b.ID] = b
	}
	for _, t := range s.Topics {
		if t == nil || im.Topics[t.Name] != nil || im.TopicsByID[t.ID] != nil {
			return nil, fmt.Errorf("%w: image snapshot: null or duplicate topic", ErrCorruptRecord)
		}
		im.Topics[t.Name] = t
		im.TopicsByID[t.ID] = t
	}
	for k, v := range s.BrokerConfigs {
		im.BrokerConfigs[k] = v
	}
	if len(s.GroupConfigs) > 0 {
		im.GroupConfigs = s.GroupConfigs
	}
	if len(s.ClientMetrics) > 0 {
		im.ClientMetrics = s.ClientMetrics
	}
	if len(s.Scram) > 0 {
		im.Scram = s.Scram
	}
	im.Quotas = restoreQuotas(s.Quotas)
	if len(s.FeatureLevels) > 0 {
		im.FeatureLevels = s.FeatureLevels
	}
	if len(s.ACLs) > 0 {
		acls := im.ACLs.Clone()
		for _, a := range s.ACLs {
			acls.Add(a)
		}
		im.ACLs = acls
	}
	return im, nil
}

// withNamedConfig returns a copy of configs (resource name -> key -> value) with one key set
// (value non-nil) or deleted; a resource left without keys is removed. The maps of a
// published image are never written, so the outer map and the changed inner one are copied.
func withNamedConfig(configs map[string]map[string]string, name, key string, value *string) map[string]map[string]string {
	out := make(map[string]map[string]string, len(configs)+1)
	for k, v := range configs {
		out[k] = v
	}
	m := cloneMap(out[name])
	if m == nil {
		m = map[string]string{}
	}
	setOrDelete(m, key, value)
	if len(m) == 0 {
		delete(out, name)
	} else {
		out[name] = m
	}
	return out
}

// ReplayRecords applies recs to an empty image, as the first controller of a new log applies
// its bootstrap records, and returns the image and the records that did not apply (joined).
// For tools that prepare bootstrap records (sluice migrate) to check them before a start.
func ReplayRecords(recs []Record) (*Image, error) {
	im, errs := applyRecords(emptyImage(), 0, recs)
	return im, errors.Join(errs...)
}
