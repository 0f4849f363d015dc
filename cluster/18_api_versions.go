package cluster

// ApiVersions, key 18: v0–v4.
//
// The list is ServerVersions: exactly the APIs this listener serves. v3+ client software
// names are not validated here (the broker listener does); an unsupported ApiVersions version
// is answered by the wire layer. v3+ carries the features as the broker listener does
// (controller.Features, finalized levels from the image), for kafka-features
// --bootstrap-controller.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"sluice/controller"
)

func init() { register(18, 0, 4, (*Server).handleApiVersions) }

func (s *Server) handleApiVersions(_ context.Context, req *kmsg.ApiVersionsRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.ApiVersionsResponse)
	for _, v := range ServerVersions() {
		resp.ApiKeys = append(resp.ApiKeys, kmsg.ApiVersionsResponseApiKey{ApiKey: v.Key, MinVersion: v.Min, MaxVersion: v.Max})
	}
	if req.Version >= 3 {
		im := s.cfg.Controller.Image()
		resp.FinalizedFeaturesEpoch = im.FinalizedFeaturesEpoch()
		for _, f := range controller.Features {
			if req.Version >= 4 || f.MinLevel > 0 {
				resp.SupportedFeatures = append(resp.SupportedFeatures,
					kmsg.ApiVersionsResponseSupportedFeature{Name: f.Name, MinVersion: f.MinLevel, MaxVersion: f.MaxLevel})
			}
			if l := im.FinalizedLevel(f.Name); l > 0 {
				resp.FinalizedFeatures = append(resp.FinalizedFeatures,
					kmsg.ApiVersionsResponseFinalizedFeature{Name: f.Name, MinVersionLevel: l, MaxVersionLevel: l})
			}
		}
	}
	return resp, nil
}
