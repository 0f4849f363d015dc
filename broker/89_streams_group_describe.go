package broker

// StreamsGroupDescribe, key 89: v0–v1 (KIP-1071). The coordinator describes each group: state,
// group and assignment epochs, the topology (internal topics with the partition counts it
// derived) and every member with its current and target tasks. v1 adds the assignor's name;
// IncludeTopologyDescription is answered with no description (sluice keeps none; KIP-1331's
// StreamsGroupTopologyDescriptionUpdate, key 93, is not served).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"sluice/coordinator"
	"sluice/wire"
)

func init() {
	registerGroupAPI(89, 0, 1, func(c *coordinator.Coordinator, ctx context.Context, _ *wire.Request, req *kmsg.StreamsGroupDescribeRequest) (kmsg.Response, error) {
		return c.StreamsGroupDescribe(ctx, req)
	})
}
