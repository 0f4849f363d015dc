package controller

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"

	"sluice/internal/config"
)

// maxTopicNameLength is Kafka's Topic.MAX_NAME_LENGTH.
const maxTopicNameLength = 249

// maxRecordsPerRequest bounds the records one proposal may produce (e.g. partitions created by
// one CreateTopics), as Kafka's controller bounds a user operation (MAX_RECORDS_PER_USER_OP),
// so that one raft entry stays well below maxWALFrame.
const maxRecordsPerRequest = 10000

// validationError is a per-item failure: a Kafka error code and a message.
type validationError struct {
	code *kerr.Error
	msg  string
}

func (e *validationError) Error() string { return e.code.Message + ": " + e.msg }

// Unwrap makes errors.Is(err, kerr.X) work on validation errors.
func (e *validationError) Unwrap() error { return e.code }

func fail(code *kerr.Error, format string, args ...any) *validationError {
	return &validationError{code: code, msg: fmt.Sprintf(format, args...)}
}

// validateTopicName applies Kafka's Topic.validate rules.
func validateTopicName(name string) *validationError {
	switch {
	case name == "":
		return fail(kerr.InvalidTopicException, "Topic name is illegal, it can't be empty")
	case name == "." || name == "..":
		return fail(kerr.InvalidTopicException, "Topic name cannot be \".\" or \"..\"")
	case len(name) > maxTopicNameLength:
		return fail(kerr.InvalidTopicException, "Topic name is illegal, it can't be longer than %d characters, topic name: %s", maxTopicNameLength, name)
	}
	for i := 0; i < len(name); i++ {
		ch := name[i]
		if !(ch >= 'a' && ch <= 'z' || ch >= 'A' && ch <= 'Z' || ch >= '0' && ch <= '9' || ch == '.' || ch == '_' || ch == '-') {
			return fail(kerr.InvalidTopicException, "Topic name %q is illegal, it contains a character other than ASCII alphanumerics, '.', '_' and '-'", name)
		}
	}
	return nil
}

// unifyCollisionChars maps '.' to '_': Kafka treats topics differing only there as colliding
// because both become the same metric name.
func unifyCollisionChars(name string) string { return strings.ReplaceAll(name, ".", "_") }

// topicCollision returns an existing topic whose name collides with name, or "".
func topicCollision(im *Image, name string) string {
	if !strings.ContainsAny(name, "._") {
		return ""
	}
	unified := unifyCollisionChars(name)
	for existing := range im.Topics {
		if existing != name && strings.ContainsAny(existing, "._") && unifyCollisionChars(existing) == unified {
			return existing
		}
	}
	return ""
}

// usableBrokers returns the IDs of registered, unfenced brokers not in controlled shutdown,
// sorted: the brokers new replicas are placed on, as Kafka places only on active brokers.
func usableBrokers(im *Image) []int32 {
	ids := make([]int32, 0, len(im.Brokers))
	for id, b := range im.Brokers {
		if b.active() {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	return ids
}

// placeReplicas assigns count partitions numbered from firstPartition with replicationFactor
// replicas each: round-robin over the usable brokers from a random start, each partition's
// replicas consecutive brokers, the first one the preferred leader.
func placeReplicas(brokers []int32, firstPartition, count int32, replicationFactor int16, rng *rand.Rand) [][]int32 {
	out := make([][]int32, count)
	n := len(brokers)
	start := rng.IntN(n)
	for i := range out {
		replicas := make([]int32, replicationFactor)
		for j := range replicas {
			replicas[j] = brokers[(start+int(firstPartition)+i+j)%n]
		}
		out[i] = replicas
	}
	return out
}

// validateAssignment checks one manual replica list against the registered brokers.
func validateAssignment(im *Image, partition int32, replicas []int32, wantReplicas int) *validationError {
	if len(replicas) == 0 {
		return fail(kerr.InvalidReplicaAssignment, "The manual partition assignment includes an empty replica list for partition %d.", partition)
	}
	if wantReplicas > 0 && len(replicas) != wantReplicas {
		return fail(kerr.InvalidReplicaAssignment, "The manual partition assignment includes a partition with %d replica(s), but this is not consistent with previous partitions, which have %d replica(s).", len(replicas), wantReplicas)
	}
	seen := make(map[int32]bool, len(replicas))
	for _, id := range replicas {
		if seen[id] {
			return fail(kerr.InvalidReplicaAssignment, "The manual partition assignment includes the broker %d more than once.", id)
		}
		seen[id] = true
		if b := im.Brokers[id]; !b.active() {
			return fail(kerr.InvalidReplicaAssignment, "The manual partition assignment includes broker %d, but no such broker is registered.", id)
		}
	}
	return nil
}

// validateTopicConfigs checks topic config overrides with internal/config. Internal topics
// (sluice's own __consumer_offsets) may use values users may not yet (cleanup.policy=compact).
func validateTopicConfigs(configs map[string]string, internal bool) *validationError {
	validate := validateTopicConfig
	if internal {
		validate = config.ValidateTopicValue
	}
	keys := make([]string, 0, len(configs))
	for k := range configs {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		if err := validate(k, configs[k]); err != nil {
			return fail(kerr.InvalidConfig, "%v", err)
		}
	}
	return nil
}

// partitionRecords builds the records of new partitions of topic id, leader the first
// replica, ISR all replicas, epochs 0 (as Kafka's controller creates them).
func partitionRecords(id TopicID, firstPartition int32, assignments [][]int32) []Record {
	recs := make([]Record, 0, len(assignments))
	for i, replicas := range assignments {
		recs = append(recs, &PartitionRecord{
			TopicID:   id,
			Partition: firstPartition + int32(i),
			Replicas:  slices.Clone(replicas),
			ISR:       slices.Clone(replicas),
			Leader:    replicas[0],
		})
	}
	return recs
}
