package broker

// Authorized operations: the bit fields a client asks for with IncludeTopicAuthorizedOperations
// (Metadata v8+), IncludeClusterAuthorizedOperations (Metadata v8–v10, DescribeCluster) and
// IncludeAuthorizedOperations (DescribeGroups v3+, ConsumerGroupDescribe, StreamsGroupDescribe,
// ShareGroupDescribe), and that DescribeTopicPartitions always carries. Kafka's
// AuthHelper.authorizedOperations: bit N is set when the caller may perform operation N on the
// resource, over the operations Kafka's AclEntry.supportedOperations lists for its type; with no
// authorizer every supported operation is set. The cluster's field is 0 for a caller that may not
// DESCRIBE the cluster. A field not asked for stays at the schema's default, MinInt32.
//
// It is filled in once the handler has answered (fillAuthorizedOperations, called from Handle
// for these APIs only), so the handlers and the group coordinator need not know about it.

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"sluice/authz"
	"sluice/wire"
)

// supportedOperations are Kafka's AclEntry.supportedOperations per resource type.
var supportedOperations = map[int8][]int8{
	authz.ResourceTopic: {authz.OpRead, authz.OpWrite, authz.OpCreate, authz.OpDescribe, authz.OpDelete,
		authz.OpAlter, authz.OpDescribeConfigs, authz.OpAlterConfigs},
	authz.ResourceGroup: {authz.OpRead, authz.OpDescribe, authz.OpDelete, authz.OpDescribeConfigs, authz.OpAlterConfigs},
	authz.ResourceCluster: {authz.OpCreate, authz.OpClusterAction, authz.OpDescribeConfigs, authz.OpAlterConfigs,
		authz.OpIdempotentWrite, authz.OpAlter, authz.OpDescribe},
}

// authorizedOperationsKeys are the APIs whose answers fillAuthorizedOperations completes.
var authorizedOperationsKeys = map[int16]bool{3: true, 15: true, 60: true, 69: true, 75: true, 77: true, 89: true}

// authorizedOperations is the bit field of the supported operations conn may perform on the
// resource.
func (b *Broker) authorizedOperations(conn *wire.ConnInfo, resourceType int8, name string) int32 {
	var bits int32
	for _, op := range supportedOperations[resourceType] {
		if b.allowed(conn, op, resourceType, name) {
			bits |= 1 << op
		}
	}
	return bits
}

// clusterAuthorizedOperations is the cluster's field: 0 for a caller that may not DESCRIBE it.
func (b *Broker) clusterAuthorizedOperations(conn *wire.ConnInfo) int32 {
	if !b.allowedCluster(conn, authz.OpDescribe) {
		return 0
	}
	return b.authorizedOperations(conn, authz.ResourceCluster, authz.ClusterName)
}

// fillAuthorizedOperations completes resp, the answer to req, with the authorized operations
// req asked for.
func (b *Broker) fillAuthorizedOperations(conn *wire.ConnInfo, req kmsg.Request, resp kmsg.Response) {
	switch r := req.(type) {
	case *kmsg.MetadataRequest:
		m, ok := resp.(*kmsg.MetadataResponse)
		if !ok || r.Version < 8 {
			return
		}
		if r.Version <= 10 && r.IncludeClusterAuthorizedOperations {
			m.AuthorizedOperations = b.clusterAuthorizedOperations(conn)
		}
		if r.IncludeTopicAuthorizedOperations {
			for i := range m.Topics {
				if t := &m.Topics[i]; t.Topic != nil {
					t.AuthorizedOperations = b.authorizedOperations(conn, authz.ResourceTopic, *t.Topic)
				}
			}
		}
	case *kmsg.DescribeTopicPartitionsRequest:
		if d, ok := resp.(*kmsg.DescribeTopicPartitionsResponse); ok {
			for i := range d.Topics {
				if t := &d.Topics[i]; t.Topic != nil {
					t.AuthorizedOperations = b.authorizedOperations(conn, authz.ResourceTopic, *t.Topic)
				}
			}
		}
	case *kmsg.DescribeClusterRequest:
		if d, ok := resp.(*kmsg.DescribeClusterResponse); ok && r.IncludeClusterAuthorizedOperations && d.ErrorCode == 0 {
			d.ClusterAuthorizedOperations = b.clusterAuthorizedOperations(conn)
		}
	case *kmsg.DescribeGroupsRequest:
		if d, ok := resp.(*kmsg.DescribeGroupsResponse); ok && r.Version >= 3 && r.IncludeAuthorizedOperations {
			b.fillGroupOperations(conn, len(d.Groups), func(i int) (int16, string, *int32) {
				return d.Groups[i].ErrorCode, d.Groups[i].Group, &d.Groups[i].AuthorizedOperations
			})
		}
	case *kmsg.ConsumerGroupDescribeRequest:
		if d, ok := resp.(*kmsg.ConsumerGroupDescribeResponse); ok && r.IncludeAuthorizedOperations {
			b.fillGroupOperations(conn, len(d.Groups), func(i int) (int16, string, *int32) {
				return d.Groups[i].ErrorCode, d.Groups[i].Group, &d.Groups[i].AuthorizedOperations
			})
		}
	case *kmsg.StreamsGroupDescribeRequest:
		if d, ok := resp.(*kmsg.StreamsGroupDescribeResponse); ok && r.IncludeAuthorizedOperations {
			b.fillGroupOperations(conn, len(d.Groups), func(i int) (int16, string, *int32) {
				return d.Groups[i].ErrorCode, d.Groups[i].Group, &d.Groups[i].AuthorizedOperations
			})
		}
	case *kmsg.ShareGroupDescribeRequest:
		if d, ok := resp.(*kmsg.ShareGroupDescribeResponse); ok && r.IncludeAuthorizedOperations {
			b.fillGroupOperations(conn, len(d.Groups), func(i int) (int16, string, *int32) {
				return d.Groups[i].ErrorCode, d.Groups[i].GroupID, &d.Groups[i].AuthorizedOperations
			})
		}
	}
}

// fillGroupOperations sets the authorized operations of each of n described groups that was
// answered without an error (Kafka leaves a failed group's field at its default); group(i) is
// the i-th group's code, ID and field.
func (b *Broker) fillGroupOperations(conn *wire.ConnInfo, n int, group func(i int) (code int16, id string, ops *int32)) {
	for i := range n {
		if code, id, ops := group(i); code == 0 {
			*ops = b.authorizedOperations(conn, authz.ResourceGroup, id)
		}
	}
}
