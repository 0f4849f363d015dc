package broker

// DescribeClientQuotas, key 48: v0–v1.
//
// Answered from this broker's metadata image, as Kafka's brokers answer it
// (controller.DescribeClientQuotas, Kafka's ClientQuotasImage.describe): each filter
// component matches one entity type by exact name (0), default (1) or any specified name (2);
// Strict leaves out entities with types the filter does not name. An unknown or repeated
// entity type in the filter, or ip combined with user or client-id, is INVALID_REQUEST for the
// whole request. v1 is v0 with flexible encoding.
//
// Not done: authorization (DESCRIBE_CONFIGS on the cluster).

import (
	"context"
	"maps"
	"slices"

	"github.com/twmb/franz-go/pkg/kmsg"

	"sluice/controller"
	"sluice/wire"
)

func init() { registerSync(48, 0, 1, (*Broker).handleDescribeClientQuotas) }

func (b *Broker) handleDescribeClientQuotas(_ context.Context, _ *wire.ConnInfo, req *kmsg.DescribeClientQuotasRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.DescribeClientQuotasResponse)
	comps := make([]controller.QuotaFilterComponent, 0, len(req.Components))
	for _, c := range req.Components {
		comps = append(comps, controller.QuotaFilterComponent{EntityType: c.EntityType, MatchType: int8(c.MatchType), Match: c.Match})
	}
	found, code, msg := controller.DescribeClientQuotas(b.ctrl.Image(), comps, req.Strict)
	if code != nil {
		resp.ErrorCode, resp.ErrorMessage = code.Code, &msg
		return resp, nil
	}
	// Entries is nullable: null only with an error (Kafka's admin client fails on a null list).
	resp.Entries = []kmsg.DescribeClientQuotasResponseEntry{}
	for _, d := range found {
		e := kmsg.NewDescribeClientQuotasResponseEntry()
		for _, p := range d.Entity.Parts() {
			re := kmsg.NewDescribeClientQuotasResponseEntryEntity()
			re.Type, re.Name = p.Type, p.Name
			e.Entity = append(e.Entity, re)
		}
		for _, k := range slices.Sorted(maps.Keys(d.Values)) {
			v := kmsg.NewDescribeClientQuotasResponseEntryValue()
			v.Key, v.Value = k, d.Values[k]
			e.Values = append(e.Values, v)
		}
		resp.Entries = append(resp.Entries, e)
	}
	return resp, nil
}
