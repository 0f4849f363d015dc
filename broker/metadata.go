package broker

import (
	"context"

	"sluice/controller"
)

// Metadata is all the broker needs of the metadata quorum: the newest published image, and the
// proposals its APIs make. *controller.Controller implements it on the node that runs the
// controller; in a cluster, a node that is not the active controller gives the broker an
// implementation that forwards proposals to the active one (as Kafka forwards with Envelope),
// so the broker never depends on where the quorum's leader is.
//
// Per-item problems are Kafka error codes in the results; a Go error means the proposal could
// not be made or answered (context ended, quorum closed).
type Metadata interface {
	Image() *controller.Image
	CreateTopics(ctx context.Context, topics []controller.CreateTopic, validateOnly bool) ([]controller.CreateTopicResult, error)
	DeleteTopics(ctx context.Context, names []string, ids []controller.TopicID) ([]controller.DeleteTopicResult, error)
	CreatePartitions(ctx context.Context, reqs []controller.CreatePartitions, validateOnly bool) ([]controller.CreatePartitionsResult, error)
	AlterConfigs(ctx context.Context, reqs []controller.AlterConfigs, validateOnly bool) ([]controller.AlterConfigsResult, error)
	AllocateProducerIDs(ctx context.Context, brokerID int32, count int32) (firstID int64, err error)
	// AlterPartition commits ISR changes a partition leader proposes (Kafka's API 56).
	AlterPartition(ctx context.Context, reqs []controller.AlterPartition) ([]controller.AlterPartitionResult, error)
	// AlterPartitionReassignments starts or cancels partition reassignments (Kafka's API 45).
	AlterPartitionReassignments(ctx context.Context, reqs []controller.Reassignment, allowReplicationFactorChange bool) ([]controller.ReassignmentResult, error)
}

var _ Metadata = (*controller.Controller)(nil)
