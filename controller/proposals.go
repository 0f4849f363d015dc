package controller

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"

	"sluice/internal/config"
	"sluice/internal/telemetry"
)

// The proposal API. Each method validates its items in the driver against the working image
// (the published image plus every proposal not yet applied), proposes the records of the
// valid items as one raft entry, and returns once that entry is applied and the image that
// contains it is published. Per-item problems are Kafka error codes in the results; a Go
// error means the context ended or the controller is closed.

// Config validation, with Kafka's rules and messages (internal/config).
var (
	validateTopicConfig  = config.ValidateTopic
	validateBrokerConfig = config.ValidateBrokerDynamic
)

// CreateTopic is one topic of a CreateTopics call.
type CreateTopic struct {
	Name string
	// NumPartitions must be resolved by the caller (num.partitions for -1) unless Assignments
	// is set, in which case it must be -1 (as Kafka requires).
	NumPartitions int32
	// ReplicationFactor: as NumPartitions (default.replication.factor for -1).
	ReplicationFactor int16
	Assignments       map[int32][]int32 // explicit replica assignment, optional
	Configs           map[string]string // topic overrides; validated with internal/config
	Internal          bool              // e.g. __consumer_offsets
	// MaxReplicasPerBroker, if positive, refuses the topic with POLICY_VIOLATION when a
	// broker would then host more partition replicas than that (see hostedReplicas).
	MaxReplicasPerBroker int
}

// CreateTopicResult is the outcome for one topic. Topic is set when the topic was created
// (or, validate-only, would be created: then it is the planned topic, not in any image).
type CreateTopicResult struct {
	Name    string
	ID      TopicID
	Err     error // *kerr.Error or nil
	Message string
	Topic   *TopicInfo
}

// CreateTopics creates topics.
func (c *Controller) CreateTopics(ctx context.Context, topics []CreateTopic, validateOnly bool) ([]CreateTopicResult, error) {
	results := make([]CreateTopicResult, len(topics))
	counts := make(map[string]int, len(topics))
	for i, t := range topics {
		results[i].Name = t.Name
		counts[t.Name]++
	}
	rng := rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64()))
	req := &request{
		plan: func(w *Image) []Record {
			var recs []Record
			var hosted hostedReplicas
			// Topics planned earlier in this request, by unified name, so later ones cannot
			// collide with them (exact duplicates are refused outright).
			planned := map[string]string{}
			for i, t := range topics {
				if counts[t.Name] > 1 {
					setErr(&results[i].Err, &results[i].Message, fail(kerr.InvalidRequest, "Duplicate topic name %q in request.", t.Name))
					continue
				}
				trecs, verr := planCreateTopic(w, t, rng)
				if verr == nil {
					verr = c.checkReplicationFactor(trecs)
				}
				if verr == nil {
					if other, ok := planned[unifyCollisionChars(t.Name)]; ok {
						verr = fail(kerr.InvalidTopicException, "Topic '%s' collides with existing topic: %s", t.Name, other)
					}
				}
				if verr == nil && len(recs)+len(trecs) > maxRecordsPerRequest {
					verr = fail(kerr.PolicyViolation, "Unable to perform excessively large batch operation.")
				}
				if verr == nil && t.MaxReplicasPerBroker > 0 {
					verr = hosted.admit(w, trecs, t.MaxReplicasPerBroker)
				}
				if verr != nil {
					setErr(&results[i].Err, &results[i].Message, verr)
					continue
				}
				id := trecs[0].(*TopicRecord).TopicID
				results[i].ID = id
				if validateOnly {
					// The topic as it would be created (it is in no image).
					alone, _ := applyRecords(emptyImage(), 0, trecs)
					results[i].Topic = alone.TopicsByID[id]
					continue
				}
				planned[unifyCollisionChars(t.Name)] = t.Name
				recs = append(recs, trecs...)
			}
			return recs
		},
		applied: func(im *Image) {
			for i := range results {
				if results[i].Err == nil && !validateOnly {
					results[i].Topic = im.TopicsByID[results[i].ID]
				}
			}
		},
	}
	return submitEach(ctx, c, req, results, func(r *CreateTopicResult, verr *validationError) {
		if r.Err == nil {
			setErr(&r.Err, &r.Message, verr)
			r.Topic, r.ID = nil, TopicID{}
		}
	})
}

func planCreateTopic(w *Image, t CreateTopic, rng *rand.Rand) ([]Record, *validationError) {
	if err := validateTopicName(t.Name); err != nil {
		return nil, err
	}
	if w.Topics[t.Name] != nil {
		return nil, fail(kerr.TopicAlreadyExists, "Topic '%s' already exists.", t.Name)
	}
	if other := topicCollision(w, t.Name); other != "" {
		return nil, fail(kerr.InvalidTopicException, "Topic '%s' collides with existing topic: %s", t.Name, other)
	}
	var assignments [][]int32
	if len(t.Assignments) > 0 {
		if t.NumPartitions != -1 {
			return nil, fail(kerr.InvalidRequest, "A manual partition assignment was specified, but numPartitions was not set to -1.")
		}
		if t.ReplicationFactor != -1 {
			return nil, fail(kerr.InvalidRequest, "A manual partition assignment was specified, but replicationFactor was not set to -1.")
		}
		if len(t.Assignments) > maxRecordsPerRequest {
			return nil, fail(kerr.PolicyViolation, "Unable to perform excessively large batch operation.")
		}
		assignments = make([][]int32, len(t.Assignments))
		for p := range int32(len(t.Assignments)) {
			replicas, ok := t.Assignments[p]
			if !ok {
				return nil, fail(kerr.InvalidReplicaAssignment, "Partitions should be a consecutive 0-based integer sequence, but partition %d is missing.", p)
			}
			want := 0
			if p > 0 {
				want = len(assignments[0])
			}
			if err := validateAssignment(w, p, replicas, want); err != nil {
				return nil, err
			}
			assignments[p] = replicas
		}
	} else {
		if t.NumPartitions < 1 {
			return nil, fail(kerr.InvalidPartitions, "Number of partitions was set to an invalid non-positive value.")
		}
		if t.NumPartitions > maxRecordsPerRequest {
			return nil, fail(kerr.PolicyViolation, "Unable to perform excessively large batch operation.")
		}
		if t.ReplicationFactor < 1 {
			return nil, fail(kerr.InvalidReplicationFactor, "Replication factor must be larger than 0.")
		}
		brokers := usableBrokers(w)
		if int(t.ReplicationFactor) > len(brokers) {
			return nil, fail(kerr.InvalidReplicationFactor, "Unable to replicate the partition %d time(s): The target replication factor of %d cannot be reached because only %d broker(s) are registered.", t.ReplicationFactor, t.ReplicationFactor, len(brokers))
		}
		assignments = placeReplicas(brokers, 0, t.NumPartitions, t.ReplicationFactor, rng)
	}
	if err := validateTopicConfigs(t.Configs, t.Internal); err != nil {
		return nil, err
	}
	id := newTopicID()
	for w.TopicsByID[id] != nil {
		id = newTopicID()
	}
	recs := []Record{&TopicRecord{Name: t.Name, TopicID: id, Internal: t.Internal}}
	keys := make([]string, 0, len(t.Configs))
	for k := range t.Configs {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		v := t.Configs[k]
		recs = append(recs, &ConfigRecord{ResourceType: ResourceTopic, ResourceName: t.Name, Key: k, Value: &v})
	}
	return append(recs, partitionRecords(id, 0, assignments)...), nil
}

// DeleteTopicResult is the outcome for one topic.
type DeleteTopicResult struct {
	Name    string
	ID      TopicID
	Err     error
	Message string
}

// DeleteTopics deletes topics by name, and the topics in ids by ID. Results are in the order
// names then ids.
func (c *Controller) DeleteTopics(ctx context.Context, names []string, ids []TopicID) ([]DeleteTopicResult, error) {
	results := make([]DeleteTopicResult, len(names)+len(ids))
	for i, n := range names {
		results[i].Name = n
	}
	for i, id := range ids {
		results[len(names)+i].ID = id
	}
	req := &request{
		plan: func(w *Image) []Record {
			var recs []Record
			removed := map[TopicID]bool{}
			for i := range results {
				r := &results[i]
				var t *TopicInfo
				if i < len(names) {
					t = w.Topics[r.Name]
					if t == nil {
						setErr(&r.Err, &r.Message, fail(kerr.UnknownTopicOrPartition, "This server does not host this topic-partition."))
						continue
					}
				} else {
					t = w.TopicsByID[r.ID]
					if t == nil {
						setErr(&r.Err, &r.Message, fail(kerr.UnknownTopicID, "This server does not host this topic ID."))
						continue
					}
				}
				r.Name, r.ID = t.Name, t.ID
				if removed[t.ID] {
					setErr(&r.Err, &r.Message, fail(kerr.InvalidRequest, "Duplicate topic %q in request.", t.Name))
					continue
				}
				removed[t.ID] = true
				recs = append(recs, &RemoveTopicRecord{TopicID: t.ID})
			}
			return recs
		},
	}
	return submitEach(ctx, c, req, results, failUnfailed)
}

// CreatePartitions is one topic of a CreatePartitions call: grow Topic to Count partitions,
// with Assignments (one replica list per new partition) or automatic placement.
type CreatePartitions struct {
	Topic       string
	Count       int32
	Assignments [][]int32
	// MaxReplicasPerBroker: as CreateTopic's.
	MaxReplicasPerBroker int
}

// CreatePartitionsResult is the outcome for one topic.
type CreatePartitionsResult struct {
	Topic   string
	Err     error
	Message string
}

// CreatePartitions adds partitions to existing topics; it never removes any.
func (c *Controller) CreatePartitions(ctx context.Context, reqs []CreatePartitions, validateOnly bool) ([]CreatePartitionsResult, error) {
	results := make([]CreatePartitionsResult, len(reqs))
	counts := make(map[string]int, len(reqs))
	for i, r := range reqs {
		results[i].Topic = r.Topic
		counts[r.Topic]++
	}
	rng := rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64()))
	req := &request{
		plan: func(w *Image) []Record {
			var recs []Record
			var hosted hostedReplicas
			for i, cp := range reqs {
				if counts[cp.Topic] > 1 {
					setErr(&results[i].Err, &results[i].Message, fail(kerr.InvalidRequest, "Duplicate topic name %q in request.", cp.Topic))
					continue
				}
				precs, verr := planCreatePartitions(w, cp, rng)
				if verr == nil {
					verr = c.checkReplicationFactor(precs)
				}
				if verr == nil && len(recs)+len(precs) > maxRecordsPerRequest {
					verr = fail(kerr.PolicyViolation, "Unable to perform excessively large batch operation.")
				}
				if verr == nil && cp.MaxReplicasPerBroker > 0 {
					verr = hosted.admit(w, precs, cp.MaxReplicasPerBroker)
				}
				if verr != nil {
					setErr(&results[i].Err, &results[i].Message, verr)
					continue
				}
				if !validateOnly {
					recs = append(recs, precs...)
				}
			}
			return recs
		},
	}
	return submitEach(ctx, c, req, results, failUnfailed)
}

func planCreatePartitions(w *Image, cp CreatePartitions, rng *rand.Rand) ([]Record, *validationError) {
	t := w.Topics[cp.Topic]
	if t == nil {
		return nil, fail(kerr.UnknownTopicOrPartition, "This server does not host this topic-partition.")
	}
	current := int32(len(t.Partitions))
	switch {
	case cp.Count < current:
		return nil, fail(kerr.InvalidPartitions, "The topic %s currently has %d partition(s); %d would not be an increase.", cp.Topic, current, cp.Count)
	case cp.Count == current:
		return nil, fail(kerr.InvalidPartitions, "Topic already has %d partition(s).", current)
	case cp.Count-current > maxRecordsPerRequest:
		return nil, fail(kerr.PolicyViolation, "Unable to perform excessively large batch operation.")
	}
	add := cp.Count - current
	replicationFactor := 1
	if current > 0 {
		replicationFactor = len(t.Partitions[0].Replicas)
	}
	var assignments [][]int32
	if cp.Assignments != nil {
		if int32(len(cp.Assignments)) != add {
			return nil, fail(kerr.InvalidReplicaAssignment, "Attempted to add %d additional partition(s), but only %d assignment(s) were specified.", add, len(cp.Assignments))
		}
		for i, replicas := range cp.Assignments {
			if err := validateAssignment(w, current+int32(i), replicas, replicationFactor); err != nil {
				return nil, err
			}
		}
		assignments = cp.Assignments
	} else {
		brokers := usableBrokers(w)
		if replicationFactor > len(brokers) || replicationFactor > math.MaxInt16 {
			return nil, fail(kerr.InvalidReplicationFactor, "Unable to replicate the partition %d time(s): The target replication factor of %d cannot be reached because only %d broker(s) are registered.", replicationFactor, replicationFactor, len(brokers))
		}
		assignments = placeReplicas(brokers, current, add, int16(replicationFactor), rng)
	}
	return partitionRecords(t.ID, current, assignments), nil
}

// hostedReplicas counts the partition replicas each broker hosts: those of the working image
// plus those admitted so far in one request, for a broker that sets a bound on them (the
// broker's Config.MaxHostedPartitions; none by default, as Kafka has none). A create past it is
// refused as Kafka refuses creates past its own limits (MAX_PARTITIONS_PER_BATCH):
// POLICY_VIOLATION, creating nothing of the topic.
type hostedReplicas map[int32]int

// admit adds the replicas of recs' PartitionRecords, or refuses them all if a broker would
// host more than limit.
func (h *hostedReplicas) admit(w *Image, recs []Record, limit int) *validationError {
	if *h == nil {
		*h = hostedReplicas{}
		for _, t := range w.Topics {
			for i := range t.Partitions {
				for _, r := range t.Partitions[i].Replicas {
					(*h)[r]++
				}
			}
		}
	}
	adding := map[int32]int{}
	for _, rec := range recs {
		if pr, ok := rec.(*PartitionRecord); ok {
			for _, r := range pr.Replicas {
				adding[r]++
			}
		}
	}
	for broker, n := range adding {
		if have := (*h)[broker]; have+n > limit {
			return fail(kerr.PolicyViolation, "Unable to add %d partition replica(s) to broker %d: it hosts %d and its limit is %d.", n, broker, have, limit)
		}
	}
	for broker, n := range adding {
		(*h)[broker] += n
	}
	return nil
}

// ConfigOp sets (Value non-nil) or deletes (Value nil: revert to the default) one key.
type ConfigOp struct {
	Key   string
	Value *string
}

// AlterConfigs is one resource of an AlterConfigs or IncrementalAlterConfigs call.
// ResourceType is Kafka's: 2 = TOPIC, 4 = BROKER (name "" = cluster default, or a node ID).
type AlterConfigs struct {
	ResourceType int8
	ResourceName string
	Ops          []ConfigOp
	ReplaceAll   bool // legacy AlterConfigs: keys not in Ops are removed
}

// AlterConfigsResult is the outcome for one resource.
type AlterConfigsResult struct {
	ResourceType int8
	ResourceName string
	Err          error
	Message      string
}

// AlterConfigs changes dynamic topic and broker configs.
func (c *Controller) AlterConfigs(ctx context.Context, reqs []AlterConfigs, validateOnly bool) ([]AlterConfigsResult, error) {
	results := make([]AlterConfigsResult, len(reqs))
	for i, r := range reqs {
		results[i].ResourceType, results[i].ResourceName = r.ResourceType, r.ResourceName
	}
	req := &request{
		plan: func(w *Image) []Record {
			var recs []Record
			for i, ac := range reqs {
				crecs, verr := planAlterConfigs(w, ac)
				if verr == nil && len(recs)+len(crecs) > maxRecordsPerRequest {
					verr = fail(kerr.PolicyViolation, "Unable to perform excessively large batch operation.")
				}
				if verr != nil {
					setErr(&results[i].Err, &results[i].Message, verr)
					continue
				}
				if !validateOnly {
					recs = append(recs, crecs...)
				}
			}
			return recs
		},
	}
	return submitEach(ctx, c, req, results, failUnfailed)
}

// validateGroupConfig admits only the group keys sluice honours, with a value of the right
// shape, so a request that reaches the controller without the broker's checks (the controller
// listener) cannot store a key nothing reads. The broker checks the group.share.* bounds.
func validateGroupConfig(key, value string) error {
	switch key {
	case "share.auto.offset.reset":
		if value != "earliest" && value != "latest" {
			return fmt.Errorf("sluice takes share.auto.offset.reset earliest or latest, not %q", value)
		}
	case "share.record.lock.duration.ms":
		n, err := strconv.ParseInt(strings.TrimSpace(value), 10, 32)
		if err != nil || n < 1000 {
			return fmt.Errorf("share.record.lock.duration.ms must be an integer of at least 1000, not %q", value)
		}
	case "share.isolation.level":
		if value != "read_committed" && value != "read_uncommitted" {
			return fmt.Errorf("share.isolation.level must be read_committed or read_uncommitted, not %q", value)
		}
	case "consumer.session.timeout.ms", "consumer.heartbeat.interval.ms", "streams.session.timeout.ms",
		"streams.heartbeat.interval.ms", "streams.num.standby.replicas", "streams.initial.rebalance.delay.ms",
		"share.session.timeout.ms", "share.heartbeat.interval.ms", "share.delivery.count.limit",
		"share.partition.max.record.locks":
		// The broker checks them against its group.consumer.* / group.streams.* /
		// group.share.* bounds.
		n, err := strconv.ParseInt(strings.TrimSpace(value), 10, 32)
		if err != nil || n < 0 {
			return fmt.Errorf("%s must be a non-negative integer, not %q", key, value)
		}
	default:
		return fmt.Errorf("sluice does not honour the group config %s, so it refuses to store it", key)
	}
	return nil
}

func planAlterConfigs(w *Image, ac AlterConfigs) ([]Record, *validationError) {
	var current map[string]string
	validate := validateTopicConfig
	switch ac.ResourceType {
	case ResourceTopic:
		t := w.Topics[ac.ResourceName]
		if t == nil {
			return nil, fail(kerr.UnknownTopicOrPartition, "The topic '%s' does not exist.", ac.ResourceName)
		}
		current = t.Configs
	case ResourceBroker:
		if ac.ResourceName != "" {
			id, err := strconv.ParseInt(ac.ResourceName, 10, 32)
			if err != nil || id < 0 {
				return nil, fail(kerr.InvalidRequest, "Invalid broker name %q.", ac.ResourceName)
			}
		}
		current = w.BrokerConfigs[ac.ResourceName]
		validate = validateBrokerConfig
	case ResourceGroup:
		// The broker validates group configs against its group.* bounds before it asks
		// (GroupConfig.validate in Kafka needs the broker's config); here only the name.
		if ac.ResourceName == "" {
			return nil, fail(kerr.InvalidRequest, "Group resource name must not be empty.")
		}
		current = w.GroupConfigs[ac.ResourceName]
		validate = validateGroupConfig
	case ResourceClientMetrics:
		// Kafka's ClientMetricsConfigs.validate, with its codes (INVALID_REQUEST for an
		// unknown key or an interval out of range, INVALID_CONFIG for a malformed value).
		if ac.ResourceName == "" {
			return nil, fail(kerr.InvalidRequest, "Subscription name can't be empty")
		}
		for _, op := range ac.Ops {
			if op.Value == nil {
				continue
			}
			if err := telemetry.ValidateKey(op.Key, *op.Value); err != nil {
				return nil, fail(kerr.ErrorForCode(err.Code).(*kerr.Error), "%s", err.Message)
			}
		}
		current = w.ClientMetrics[ac.ResourceName]
		validate = func(string, string) error { return nil }
	default:
		return nil, fail(kerr.InvalidRequest, "Unexpected resource type %d.", ac.ResourceType)
	}
	inOps := make(map[string]bool, len(ac.Ops))
	var recs []Record
	for _, op := range ac.Ops {
		if inOps[op.Key] {
			return nil, fail(kerr.InvalidRequest, "Duplicate config key %q.", op.Key)
		}
		inOps[op.Key] = true
		if op.Value != nil {
			if err := validate(op.Key, *op.Value); err != nil {
				return nil, fail(kerr.InvalidConfig, "%v", err)
			}
			if old, ok := current[op.Key]; ok && old == *op.Value {
				continue
			}
			v := *op.Value
			recs = append(recs, &ConfigRecord{ResourceType: ac.ResourceType, ResourceName: ac.ResourceName, Key: op.Key, Value: &v})
		} else if _, ok := current[op.Key]; ok {
			recs = append(recs, &ConfigRecord{ResourceType: ac.ResourceType, ResourceName: ac.ResourceName, Key: op.Key})
		}
	}
	if ac.ReplaceAll {
		keys := make([]string, 0, len(current))
		for k := range current {
			if !inOps[k] {
				keys = append(keys, k)
			}
		}
		slices.Sort(keys)
		for _, k := range keys {
			recs = append(recs, &ConfigRecord{ResourceType: ac.ResourceType, ResourceName: ac.ResourceName, Key: k})
		}
	}
	return recs, nil
}

// maxProducerIDBlock bounds one AllocateProducerIDs call (Kafka hands out blocks of 1000).
const maxProducerIDBlock = 1 << 20

// AllocateProducerIDs reserves count consecutive producer IDs for a broker and returns the
// first. Per-call problems are returned as *kerr.Error values.
func (c *Controller) AllocateProducerIDs(ctx context.Context, brokerID int32, count int32) (firstID int64, err error) {
	var verr *validationError
	req := &request{
		plan: func(w *Image) []Record {
			b := w.Brokers[brokerID]
			switch {
			case count < 1 || count > maxProducerIDBlock:
				verr = fail(kerr.InvalidRequest, "Invalid producer ID block size %d.", count)
			case b == nil:
				verr = fail(kerr.BrokerIDNotRegistered, "Broker %d is not registered.", brokerID)
			case w.NextProducerID > math.MaxInt64-int64(count):
				verr = fail(kerr.UnknownServerError, "Producer IDs are exhausted.")
			}
			if verr != nil {
				return nil
			}
			firstID = w.NextProducerID
			return []Record{&ProducerIDsRecord{BrokerID: brokerID, BrokerEpoch: b.Epoch, NextProducerID: firstID + int64(count)}}
		},
	}
	if err := c.submit(ctx, req); err != nil {
		if rerr, ok := err.(*validationError); ok {
			return 0, rerr.code
		}
		return 0, err
	}
	if verr != nil {
		return 0, verr.code
	}
	return firstID, nil
}

// submitEach submits req and returns results. A validation error that fails the whole
// proposal (an oversized entry, say) becomes the error of the items failItem gives it to;
// other errors (ctx done, controller closed) are returned as Go errors.
func submitEach[T any](ctx context.Context, c *Controller, req *request, results []T, failItem func(*T, *validationError)) ([]T, error) {
	if err := c.submit(ctx, req); err != nil {
		verr, ok := err.(*validationError)
		if !ok {
			return nil, err
		}
		for i := range results {
			failItem(&results[i], verr)
		}
	}
	return results, nil
}

// failUnfailed gives verr to an item that has no error of its own.
func failUnfailed[R any, P interface {
	*R
	errFields() (*error, *string)
}](r P, verr *validationError) {
	if err, msg := r.errFields(); *err == nil {
		setErr(err, msg, verr)
	}
}

func (r *DeleteTopicResult) errFields() (*error, *string)      { return &r.Err, &r.Message }
func (r *CreatePartitionsResult) errFields() (*error, *string) { return &r.Err, &r.Message }
func (r *AlterConfigsResult) errFields() (*error, *string)     { return &r.Err, &r.Message }

func setErr(err *error, msg *string, v *validationError) {
	*err, *msg = v.code, v.msg
}

// checkReplicationFactor refuses partitions with more replicas than Config.MaxReplicationFactor
// (0: no bound). cmd/sluice sets it to 1 while partitions are not replicated between brokers:
// a replica that never receives the leader's data would hold the high watermark (and every
// acks=all produce) back for ever.
func (c *Controller) checkReplicationFactor(recs []Record) *validationError {
	max := c.cfg.MaxReplicationFactor
	if max <= 0 {
		return nil
	}
	for _, r := range recs {
		if pr, ok := r.(*PartitionRecord); ok && len(pr.Replicas) > max {
			return fail(kerr.InvalidReplicationFactor, "Replication factor %d is not supported: sluice does not replicate partitions between brokers yet; use replication factor %d.", len(pr.Replicas), max)
		}
	}
	return nil
}
