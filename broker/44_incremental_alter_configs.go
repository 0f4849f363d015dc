package broker

// IncrementalAlterConfigs, key 44: v0–v1.
//
// Per key: SET, DELETE (revert to the default), and for LIST keys APPEND (add values not yet
// present) and SUBTRACT (remove values); the list starts from the resource's current dynamic
// value, else the key's default, as Kafka's ConfigurationControlManager computes it. TOPIC
// and BROKER resources (broker: "" for the cluster-wide default, or this node's id). Checked as
// Kafka's ConfigAdminManager.preprocess does: a resource named twice, a key named twice, or a
// null value for anything but DELETE is INVALID_REQUEST; APPEND/SUBTRACT of a non-list key is
// INVALID_CONFIG; a broker key that cannot change dynamically is INVALID_REQUEST. v1 is v0
// with flexible encoding. ValidateOnly checks everything and changes nothing.
//
// BROKER_LOGGER (this node's id): SET a logger's level or DELETE it, applied on this broker
// at once and not persisted, as Kafka's RuntimeLoggerManager does (broker_loggers.go).
//
// GROUP (a group ID): the group config keys sluice honours, checked against this broker's
// group.share.* bounds and stored as ConfigRecords (group_configs.go); other group keys are
// refused INVALID_CONFIG.
//
// CLIENT_METRICS (a subscription name): metrics, interval.ms and match, checked as Kafka's
// ClientMetricsConfigs does and stored as ConfigRecords (client_metrics_configs.go); APPEND
// and SUBTRACT apply to metrics and match.

import (
	"context"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"sluice/controller"
	"sluice/internal/config"
	"sluice/wire"
)

func init() { registerSync(44, 0, 1, (*Broker).handleIncrementalAlterConfigs) }

func (b *Broker) handleIncrementalAlterConfigs(ctx context.Context, conn *wire.ConnInfo, req *kmsg.IncrementalAlterConfigsRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.IncrementalAlterConfigsResponse)
	im := b.ctrl.Image()
	rs := make([]alterResource, len(req.Resources))
	for i, rr := range req.Resources {
		rs[i] = alterResource{resourceType: int8(rr.ResourceType), name: rr.ResourceName}
	}
	duplicateResources(rs)
	b.authorizeAlterResources(conn, rs)
	for i, rr := range req.Resources {
		r := &rs[i]
		names := make([]string, len(rr.Configs))
		var nulls []string
		for j, c := range rr.Configs {
			names[j] = c.Name
			if c.Op != kmsg.IncrementalAlterConfigOpDelete && c.Value == nil {
				nulls = append(nulls, c.Name)
			}
		}
		if r.resourceType == resourceBrokerLogger {
			// Kafka checks these and applies them on the broker, not through the controller.
			if duplicateKeys(names) {
				r.fail(kerr.InvalidRequest.Code, "Error due to duplicate config keys")
			} else if len(nulls) > 0 {
				r.fail(kerr.InvalidRequest.Code, "Null value not supported for : "+strings.Join(nulls, ", "))
			}
			if r.code == 0 {
				if code, msg := b.alterBrokerLoggers(r.name, rr.Configs, req.ValidateOnly); code != 0 {
					r.fail(code, msg)
				}
			}
			r.handled = true
			continue
		}
		b.checkAlterKeys(r, names, nulls)
		if r.code != 0 {
			continue
		}
		var current map[string]string
		if r.resourceType == resourceTopic {
			if t := im.Topics[r.name]; t != nil {
				current = t.Configs
			}
		} else if r.resourceType == resourceGroup {
			current = im.GroupConfigs[r.name]
		} else if r.resourceType == resourceClientMetrics {
			current = im.ClientMetrics[r.name]
		} else {
			current = im.BrokerConfigs[r.name]
		}
		ops, code, msg := incrementalOps(r.resourceType, current, rr.Configs)
		if code != 0 {
			r.fail(code, msg)
			continue
		}
		r.ops = ops
	}
	b.alterConfigs(ctx, rs, req.ValidateOnly)
	for i, rr := range req.Resources {
		out := kmsg.NewIncrementalAlterConfigsResponseResource()
		out.ResourceType, out.ResourceName = rr.ResourceType, rr.ResourceName
		out.ErrorCode, out.ErrorMessage = rs[i].code, rs[i].message
		resp.Resources = append(resp.Resources, out)
	}
	return resp, nil
}

// incrementalOps turns one resource's incremental operations into set/delete operations
// against its current dynamic configs.
func incrementalOps(resourceType int8, current map[string]string, entries []kmsg.IncrementalAlterConfigsRequestResourceConfig) ([]controller.ConfigOp, int16, string) {
	ops := make([]controller.ConfigOp, 0, len(entries))
	for _, e := range entries {
		switch e.Op {
		case kmsg.IncrementalAlterConfigOpSet:
			v := *e.Value
			ops = append(ops, controller.ConfigOp{Key: e.Name, Value: &v})
		case kmsg.IncrementalAlterConfigOpDelete:
			ops = append(ops, controller.ConfigOp{Key: e.Name})
		case kmsg.IncrementalAlterConfigOpAppend, kmsg.IncrementalAlterConfigOpSubtract:
			if resourceType == resourceClientMetrics && clientMetricsListKey(e.Name) {
				v := applyListOp(current[e.Name], *e.Value, e.Op == kmsg.IncrementalAlterConfigOpAppend)
				ops = append(ops, controller.ConfigOp{Key: e.Name, Value: &v})
				continue
			}
			d := configDef(resourceType, e.Name)
			if d == nil || d.Type != config.TypeList {
				// As Kafka's ConfigurationControlManager words it.
				return nil, kerr.InvalidConfig.Code, "Can't " + e.Op.String() + " to key " + e.Name + " because its type is not LIST."
			}
			base, ok := current[e.Name]
			if !ok && d.Default != nil {
				base = *d.Default
			}
			v := applyListOp(base, *e.Value, e.Op == kmsg.IncrementalAlterConfigOpAppend)
			ops = append(ops, controller.ConfigOp{Key: e.Name, Value: &v})
		default:
			return nil, kerr.InvalidRequest.Code, "Unknown operation type " + strconv.Itoa(int(e.Op))
		}
	}
	return ops, 0, ""
}

// configDef looks a key up among the topic or broker keys.
func configDef(resourceType int8, key string) *config.Def {
	var d *config.Def
	var ok bool
	if resourceType == resourceTopic {
		d, ok = config.TopicDef(key)
	} else {
		d, ok = config.BrokerDef(key)
	}
	if !ok {
		return nil
	}
	return d
}

// applyListOp appends the comma-separated values not yet in the list base, or removes them
// from it, keeping base's order; empty elements are dropped, as Kafka's getParts drops them.
func applyListOp(base, values string, appendValues bool) string {
	var list []string
	for _, v := range strings.Split(base, ",") {
		if v != "" {
			list = append(list, v)
		}
	}
	for _, v := range strings.Split(values, ",") {
		if v == "" {
			continue
		}
		idx := -1
		for i, have := range list {
			if have == v {
				idx = i
				break
			}
		}
		switch {
		case appendValues && idx < 0:
			list = append(list, v)
		case !appendValues && idx >= 0:
			list = append(list[:idx], list[idx+1:]...)
		}
	}
	return strings.Join(list, ",")
}
