package broker

// AlterClientQuotas, key 49: v0–v1.
//
// Sets and removes client quotas (`kafka-configs --alter --entity-type clients|users|ips
// --add-config producer_byte_rate=1024`) through the active controller, with the rules of
// controller/quotas.go (Kafka's ClientQuotaControlManager): entity types user, client-id
// and ip (a null name is the default entity); keys producer_byte_rate, consumer_byte_rate,
// request_percentage, controller_mutation_rate for users and client ids,
// connection_creation_rate for ips; INVALID_REQUEST per entry otherwise. ValidateOnly checks
// and changes nothing. The answer waits until this broker applied the change, so its quota
// enforcement (quotas.go) uses the new values from the next request on. v1 is v0 with
// flexible encoding.
//
// Enforcement: quotas.go (byte rates), quotas_request.go (request_percentage),
// quotas_conn.go (connection_creation_rate), quotas_mutation.go (controller_mutation_rate).

import (
	"context"
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"sluice/controller"
	"sluice/wire"
)

func init() { registerSync(49, 0, 1, (*Broker).handleAlterClientQuotas) }

// quotaAlterer is the part of Metadata that changes client quotas (controller.Controller and
// cluster.Link have it).
type quotaAlterer interface {
	AlterClientQuotas(ctx context.Context, alts []controller.QuotaAlteration, validateOnly bool) ([]controller.QuotaResult, error)
}

func (b *Broker) handleAlterClientQuotas(ctx context.Context, _ *wire.ConnInfo, req *kmsg.AlterClientQuotasRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.AlterClientQuotasResponse)
	ctx, cancel := adminTimeout(ctx, 0)
	defer cancel()
	alts := make([]controller.QuotaAlteration, len(req.Entries))
	for i, e := range req.Entries {
		for _, p := range e.Entity {
			alts[i].Entity = append(alts[i].Entity, controller.QuotaEntityPart{Type: p.Type, Name: p.Name})
		}
		for _, op := range e.Ops {
			alts[i].Ops = append(alts[i].Ops, controller.QuotaOp{Key: op.Key, Value: op.Value, Remove: op.Remove})
		}
	}
	var results []controller.QuotaResult
	err := errors.New("this broker's metadata cannot change client quotas")
	if a, ok := b.ctrl.(quotaAlterer); ok {
		results, err = a.AlterClientQuotas(ctx, alts, req.ValidateOnly)
	}
	for i, e := range req.Entries {
		out := kmsg.NewAlterClientQuotasResponseEntry()
		for _, p := range e.Entity {
			re := kmsg.NewAlterClientQuotasResponseEntryEntity()
			re.Type, re.Name = p.Type, p.Name
			out.Entity = append(out.Entity, re)
		}
		switch {
		case err != nil:
			out.ErrorCode, out.ErrorMessage = controllerCallError(err)
		case i >= len(results):
			out.ErrorCode = kerr.UnknownServerError.Code
		default:
			out.ErrorCode, out.ErrorMessage = itemError(results[i].Err, results[i].Message)
		}
		resp.Entries = append(resp.Entries, out)
	}
	if err == nil && !req.ValidateOnly {
		b.waitForImage(ctx, b.ctrl.Image().Offset)
	}
	return resp, nil
}
