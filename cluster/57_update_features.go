package cluster

// UpdateFeatures, key 57: v0–v2, as the broker's way to the active controller
// (Link.UpdateFeatures): finalizes feature levels with the checks of controller/features.go.
// The answer carries the refusal's code with Kafka's top-level message (`kafka-features
// --bootstrap-controller` reads it; Link takes the prefix off again, since the broker that
// serves a client adds it) and the metadata offset of the change (tag 0x5C01).

import (
	"context"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"sluice/controller"
)

func init() { register(57, 0, 2, (*Server).handleUpdateFeatures) }

// updateFailedPrefix starts Kafka's UpdateFeatures refusal (QuorumController.updateFeatures).
const updateFailedPrefix = "The update failed for all features since the following feature had an error: "

func (s *Server) handleUpdateFeatures(ctx context.Context, req *kmsg.UpdateFeaturesRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.UpdateFeaturesResponse)
	ctx, cancel := withTimeout(ctx, req.TimeoutMillis)
	defer cancel()
	updates := make([]controller.FeatureUpdate, len(req.FeatureUpdates))
	for i, u := range req.FeatureUpdates {
		updates[i] = controller.FeatureUpdate{Name: u.Feature, Level: u.MaxVersionLevel, UpgradeType: controller.FeatureUpgradeType(u.UpgradeType)}
		if req.Version == 0 {
			updates[i].UpgradeType = controller.FeatureUpgrade
			if u.AllowDowngrade {
				updates[i].UpgradeType = controller.FeatureSafeDowngrade
			}
		}
	}
	code, msg, err := s.cfg.Controller.UpdateFeatures(ctx, updates, req.ValidateOnly)
	switch {
	case err != nil:
		resp.ErrorCode, resp.ErrorMessage = callError(err)
	case code != nil:
		full := updateFailedPrefix + msg
		resp.ErrorCode, resp.ErrorMessage = code.Code, &full
	}
	if code == nil && err == nil && req.Version <= 1 {
		for _, u := range req.FeatureUpdates {
			r := kmsg.NewUpdateFeaturesResponseResult()
			r.Feature = u.Feature
			resp.Results = append(resp.Results, r)
		}
	}
	setOffset(&resp.UnknownTags, s.cfg.Controller.Image().Offset)
	return resp, nil
}

// UpdateFeatures finalizes feature levels through the active controller and returns once the
// local image has the outcome.
func (l *Link) UpdateFeatures(ctx context.Context, updates []controller.FeatureUpdate, validateOnly bool) (*kerr.Error, string, error) {
	var code *kerr.Error
	var msg string
	err := l.withLeader(ctx, func() error {
		var err error
		code, msg, err = l.local.UpdateFeatures(ctx, updates, validateOnly)
		return localRetry(err, code == kerr.NotController)
	}, func(cl *kgo.Client) error {
		req := kmsg.NewPtrUpdateFeaturesRequest()
		req.Version, req.ValidateOnly, req.TimeoutMillis = 2, validateOnly, timeoutMillis(ctx)
		for _, u := range updates {
			fu := kmsg.NewUpdateFeaturesRequestFeatureUpdate()
			fu.Feature, fu.MaxVersionLevel, fu.UpgradeType = u.Name, u.Level, int8(u.UpgradeType)
			req.FeatureUpdates = append(req.FeatureUpdates, fu)
		}
		resp, err := request(ctx, cl, req)
		if err != nil {
			return err
		}
		r := resp.(*kmsg.UpdateFeaturesResponse)
		if r.ErrorCode == kerr.NotController.Code {
			return errRetry
		}
		l.waitOffset(ctx, offsetOf(&r.UnknownTags))
		code, msg = nil, ""
		if r.ErrorCode != 0 {
			code, _ = kerr.ErrorForCode(r.ErrorCode).(*kerr.Error)
			msg = strings.TrimPrefix(deref(r.ErrorMessage), updateFailedPrefix)
		}
		return nil
	})
	return code, msg, err
}
