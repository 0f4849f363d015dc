package cluster

// AlterClientQuotas, key 49: v0–v1.
//
// Sets and removes client quotas with the rules of controller/quotas.go (Kafka's
// ClientQuotaControlManager). v1 is v0 with flexible encoding; the answer carries the
// metadata offset of the change (tag 0x5C01, v1 only). Link.AlterClientQuotas is the broker's
// way here.

import (
	"context"
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"sluice/controller"
)

func init() { register(49, 0, 1, (*Server).handleAlterClientQuotas) }

func (s *Server) handleAlterClientQuotas(ctx context.Context, req *kmsg.AlterClientQuotasRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.AlterClientQuotasResponse)
	ctx, cancel := withTimeout(ctx, 0)
	defer cancel()
	alts := quotaAlterations(req)
	results, err := s.cfg.Controller.AlterClientQuotas(ctx, alts, req.ValidateOnly)
	resp.Entries = quotaResponse(req, results, err)
	if req.Version >= 1 {
		setOffset(&resp.UnknownTags, s.cfg.Controller.Image().Offset)
	}
	return resp, nil
}

// quotaAlterations is the controller form of a request.
func quotaAlterations(req *kmsg.AlterClientQuotasRequest) []controller.QuotaAlteration {
	alts := make([]controller.QuotaAlteration, len(req.Entries))
	for i, e := range req.Entries {
		for _, p := range e.Entity {
			alts[i].Entity = append(alts[i].Entity, controller.QuotaEntityPart{Type: p.Type, Name: p.Name})
		}
		for _, op := range e.Ops {
			alts[i].Ops = append(alts[i].Ops, controller.QuotaOp{Key: op.Key, Value: op.Value, Remove: op.Remove})
		}
	}
	return alts
}

// quotaResponse is the response form of results (or of a failed call).
func quotaResponse(req *kmsg.AlterClientQuotasRequest, results []controller.QuotaResult, err error) []kmsg.AlterClientQuotasResponseEntry {
	out := make([]kmsg.AlterClientQuotasResponseEntry, len(req.Entries))
	for i, e := range req.Entries {
		out[i] = kmsg.NewAlterClientQuotasResponseEntry()
		for _, p := range e.Entity {
			re := kmsg.NewAlterClientQuotasResponseEntryEntity()
			re.Type, re.Name = p.Type, p.Name
			out[i].Entity = append(out[i].Entity, re)
		}
		switch {
		case err != nil:
			out[i].ErrorCode, out[i].ErrorMessage = callError(err)
		case i >= len(results):
			out[i].ErrorCode = kerr.UnknownServerError.Code
		default:
			out[i].ErrorCode, out[i].ErrorMessage = itemError(results[i].Err, results[i].Message)
		}
	}
	return out
}

// AlterClientQuotas changes client quotas through the active controller and returns once the
// local image has the outcome.
func (l *Link) AlterClientQuotas(ctx context.Context, alts []controller.QuotaAlteration, validateOnly bool) ([]controller.QuotaResult, error) {
	var out []controller.QuotaResult
	err := l.withLeader(ctx, func() error {
		var err error
		out, err = l.local.AlterClientQuotas(ctx, alts, validateOnly)
		return localRetry(err, len(out) > 0 && errors.Is(out[0].Err, kerr.NotController))
	}, func(cl *kgo.Client) error {
		req := kmsg.NewPtrAlterClientQuotasRequest()
		req.Version, req.ValidateOnly = 1, validateOnly
		for _, a := range alts {
			e := kmsg.NewAlterClientQuotasRequestEntry()
			for _, p := range a.Entity {
				re := kmsg.NewAlterClientQuotasRequestEntryEntity()
				re.Type, re.Name = p.Type, p.Name
				e.Entity = append(e.Entity, re)
			}
			for _, op := range a.Ops {
				ro := kmsg.NewAlterClientQuotasRequestEntryOp()
				ro.Key, ro.Value, ro.Remove = op.Key, op.Value, op.Remove
				e.Ops = append(e.Ops, ro)
			}
			req.Entries = append(req.Entries, e)
		}
		resp, err := request(ctx, cl, req)
		if err != nil {
			return err
		}
		r := resp.(*kmsg.AlterClientQuotasResponse)
		if len(r.Entries) > 0 && r.Entries[0].ErrorCode == kerr.NotController.Code {
			return errRetry
		}
		l.waitOffset(ctx, offsetOf(&r.UnknownTags))
		out = make([]controller.QuotaResult, len(alts))
		for i := range out {
			if i >= len(r.Entries) {
				out[i].Err = kerr.UnknownServerError
				continue
			}
			out[i].Err, out[i].Message = kerr.ErrorForCode(r.Entries[i].ErrorCode), deref(r.Entries[i].ErrorMessage)
		}
		return nil
	})
	return out, err
}
