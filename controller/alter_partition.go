package controller

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
)

// AlterPartition is one partition of an AlterPartition call (Kafka's API 56): a partition
// leader asks to change its ISR. The controller accepts it only from the current leader at
// the current leader epoch and partition epoch, as Kafka's ReplicationControlManager does.
type AlterPartition struct {
	TopicID        TopicID
	Partition      int32
	LeaderID       int32 // the broker asking: must be the partition's leader
	BrokerEpoch    int64 // the leader's broker epoch (KIP-903); -1 when not known
	LeaderEpoch    int32
	PartitionEpoch int32 // the partition epoch the change is based on
	NewISR         []int32
}

// AlterPartitionResult is the outcome for one partition: Err (a *kerr.Error) or the partition
// as committed.
type AlterPartitionResult struct {
	Err       error
	Message   string
	Partition *PartitionInfo
}

// AlterPartition commits ISR changes proposed by partition leaders.
//
// Placeholder until the replication work implements it: every change is refused with
// UNSUPPORTED_VERSION, which the leader treats as a refusal and retries later.
func (c *Controller) AlterPartition(ctx context.Context, reqs []AlterPartition) ([]AlterPartitionResult, error) {
	out := make([]AlterPartitionResult, len(reqs))
	for i := range out {
		out[i].Err = kerr.UnsupportedVersion
		out[i].Message = "AlterPartition is not implemented yet"
	}
	return out, nil
}
