package broker

// UpdateFeatures, key 57: v0–v2.
//
// Finalizes feature levels (`kafka-features upgrade --feature x=N`, `downgrade`, `disable`)
// through the active controller, with the checks of controller/features.go (Kafka's
// FeatureControlManager): a level outside what sluice supports, a downgrade sent as an
// upgrade, an upgrade sent as a downgrade or an unknown upgrade type is INVALID_UPDATE_VERSION
// and fails every update of the request, with Kafka's top-level message ("The update failed
// for all features since the following feature had an error: ..."). The levels are
// FeatureLevelRecords in the metadata log, so every broker's ApiVersions advertises them
// (18_api_versions.go). The answer waits until this broker applied the change.
//
// v0 says a downgrade with AllowDowngrade (a safe downgrade); v1 carries the UpgradeType and
// ValidateOnly; v1 and older answer a result per feature on success, v2 only the top-level
// code, as Kafka answers. Authorization: ALTER on the cluster (clusterOps).

import (
	"context"
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"sluice/controller"
	"sluice/wire"
)

func init() { registerSync(57, 0, 2, (*Broker).handleUpdateFeatures) }

// featureUpdater is the part of Metadata that finalizes feature levels (controller.Controller
// and cluster.Link have it).
type featureUpdater interface {
	UpdateFeatures(ctx context.Context, updates []controller.FeatureUpdate, validateOnly bool) (*kerr.Error, string, error)
}

func (b *Broker) handleUpdateFeatures(ctx context.Context, _ *wire.ConnInfo, req *kmsg.UpdateFeaturesRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.UpdateFeaturesResponse)
	ctx, cancel := adminTimeout(ctx, req.TimeoutMillis)
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
	var code *kerr.Error
	var msg string
	err := errors.New("this broker's metadata cannot update features")
	if u, ok := b.ctrl.(featureUpdater); ok {
		code, msg, err = u.UpdateFeatures(ctx, updates, req.ValidateOnly)
	}
	if err != nil {
		resp.ErrorCode, resp.ErrorMessage = controllerCallError(err)
		return resp, nil
	}
	if code != nil {
		resp.ErrorCode = code.Code
		full := "The update failed for all features since the following feature had an error: " + msg
		resp.ErrorMessage = &full
		return resp, nil
	}
	if req.Version <= 1 {
		for _, u := range req.FeatureUpdates {
			r := kmsg.NewUpdateFeaturesResponseResult()
			r.Feature = u.Feature
			resp.Results = append(resp.Results, r)
		}
	}
	if !req.ValidateOnly {
		b.waitForImage(ctx, b.ctrl.Image().Offset)
	}
	return resp, nil
}
