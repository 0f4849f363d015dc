package broker

// AlterConfigs, key 33: v0–v2.
//
// The legacy form: each resource's key list replaces its whole dynamic config, so keys not
// named are removed (prefer IncrementalAlterConfigs). TOPIC, BROKER, GROUP and CLIENT_METRICS
// resources (GROUP and CLIENT_METRICS as IncrementalAlterConfigs checks them, group_configs.go,
// client_metrics_configs.go); a broker resource is "" (cluster-wide default) or this node's id. Checked before the controller, as
// Kafka's ConfigAdminManager.preprocess does: a resource named twice, a key named twice or a
// null value is INVALID_REQUEST; a broker key that cannot change dynamically or an invalid
// broker value is INVALID_REQUEST (Kafka's choice, KAFKA-13609). Topic values are validated
// by the controller (INVALID_CONFIG); an unknown topic is UNKNOWN_TOPIC_OR_PARTITION.
// ValidateOnly checks everything and changes nothing.
//
// Not done: AlterConfigPolicy, authorization.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"sluice/controller"
	"sluice/wire"
)

func init() { registerSync(33, 0, 2, (*Broker).handleAlterConfigs) }

func (b *Broker) handleAlterConfigs(ctx context.Context, conn *wire.ConnInfo, req *kmsg.AlterConfigsRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.AlterConfigsResponse)
	rs := make([]alterResource, len(req.Resources))
	for i, rr := range req.Resources {
		rs[i] = alterResource{resourceType: int8(rr.ResourceType), name: rr.ResourceName, replaceAll: true}
	}
	duplicateResources(rs)
	b.authorizeAlterResources(conn, rs)
	for i, rr := range req.Resources {
		r := &rs[i]
		names := make([]string, len(rr.Configs))
		var nulls []string
		for j, c := range rr.Configs {
			names[j] = c.Name
			if c.Value == nil {
				nulls = append(nulls, c.Name)
			}
		}
		b.checkAlterKeys(r, names, nulls)
		if r.code != 0 {
			continue
		}
		for _, c := range rr.Configs {
			v := *c.Value
			r.ops = append(r.ops, controller.ConfigOp{Key: c.Name, Value: &v})
		}
	}
	b.alterConfigs(ctx, rs, req.ValidateOnly)
	for i, rr := range req.Resources {
		out := kmsg.NewAlterConfigsResponseResource()
		out.ResourceType, out.ResourceName = rr.ResourceType, rr.ResourceName
		out.ErrorCode, out.ErrorMessage = rs[i].code, rs[i].message
		resp.Resources = append(resp.Resources, out)
	}
	return resp, nil
}
