package broker

// ApiVersions, key 18: v0–v5.
//
// The list comes from the API table, so the versions advertised are exactly those implemented.
// An unsupported ApiVersions version never reaches here: the wire layer answers it at v0 with
// UNSUPPORTED_VERSION, as Kafka does. v3+ carries the client's software name and version, which
// Kafka validates (INVALID_REQUEST for illegal characters) — so do we.
//
// v3+ also carries features (KIP-584): the supported range of each feature sluice knows
// (controller.Features: metadata.version, kraft.version, transaction.version, group.version,
// eligible.leader.replicas.version, streams.version at the levels sluice implements,
// share.version at 0 since share groups are not served) and the finalized levels from the
// metadata image (FeatureLevelRecords, or each feature's default), with the image's offset as
// the finalized epoch, as Kafka's brokers answer. Clients read them: transaction.version 2
// makes Java producers use KIP-890 part 2 transactions (broker/transactions.go), group.version
// 1 lets them use the consumer group protocol. A finalized level of 0 is left out, as Kafka
// leaves it out.

import (
	"context"
	"regexp"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"sluice/controller"
	"sluice/wire"
)

func init() { registerSync(18, 0, 5, (*Broker).handleApiVersions) }

// clientSoftwarePattern is Kafka's rule for ClientSoftwareName and ClientSoftwareVersion.
var clientSoftwarePattern = regexp.MustCompile(`^[a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?$`)

func (b *Broker) handleApiVersions(_ context.Context, conn *wire.ConnInfo, req *kmsg.ApiVersionsRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.ApiVersionsResponse)
	if req.Version >= 3 && (!clientSoftwarePattern.MatchString(req.ClientSoftwareName) || !clientSoftwarePattern.MatchString(req.ClientSoftwareVersion)) {
		resp.ErrorCode = kerr.InvalidRequest.Code
		return resp, nil
	}
	if req.Version >= 3 && conn != nil {
		// Telemetry subscriptions match on these (client_software_name/version).
		conn.SetClientSoftware(req.ClientSoftwareName, req.ClientSoftwareVersion)
	}
	if req.Version >= 5 {
		if (req.ClusterID == nil) != (req.NodeID == -1) {
			resp.ErrorCode = kerr.InvalidRequest.Code
			return resp, nil
		}
		if req.ClusterID != nil && (*req.ClusterID != b.ctrl.Image().ClusterID || req.NodeID != b.nodeID) {
			resp.ErrorCode = kerr.RebootstrapRequired.Code
			return resp, nil
		}
	}
	for _, v := range Versions() {
		resp.ApiKeys = append(resp.ApiKeys, kmsg.ApiVersionsResponseApiKey{ApiKey: v.Key, MinVersion: v.Min, MaxVersion: v.Max})
	}
	if req.Version >= 3 {
		im := b.ctrl.Image()
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
