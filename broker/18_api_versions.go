package broker

// ApiVersions, key 18: v0–v4.
//
// The list comes from the API table, so the versions advertised are exactly those implemented.
// An unsupported ApiVersions version never reaches here: the wire layer answers it at v0 with
// UNSUPPORTED_VERSION, as Kafka does. v3+ carries the client's software name and version, which
// Kafka validates (INVALID_REQUEST for illegal characters) — so do we.
//
// v3+ also carries features (KIP-584): sluice supports and finalizes transaction.version at
// transactionVersion (2, KIP-890 part 2, as a Kafka 4.x cluster finalizes it), which clients
// read to choose between the TV1 and TV2 transaction protocols. It also supports and finalizes
// eligible.leader.replicas.version at 1 (KIP-966), as Kafka finalizes it on new clusters since
// 4.1: the controller tracks eligible leader replicas (controller/elections.go) and leaders
// hold the HW while the ISR is below min.insync.replicas (broker/replica).

import (
	"context"
	"regexp"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"sluice/wire"
)

func init() { registerSync(18, 0, 4, (*Broker).handleApiVersions) }

// eligibleLeaderReplicasVersion is the eligible.leader.replicas.version sluice finalizes.
const eligibleLeaderReplicasVersion = 1

// clientSoftwarePattern is Kafka's rule for ClientSoftwareName and ClientSoftwareVersion.
var clientSoftwarePattern = regexp.MustCompile(`^[a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?$`)

func (b *Broker) handleApiVersions(_ context.Context, _ *wire.ConnInfo, req *kmsg.ApiVersionsRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.ApiVersionsResponse)
	if req.Version >= 3 && (!clientSoftwarePattern.MatchString(req.ClientSoftwareName) || !clientSoftwarePattern.MatchString(req.ClientSoftwareVersion)) {
		resp.ErrorCode = kerr.InvalidRequest.Code
	}
	for _, v := range Versions() {
		resp.ApiKeys = append(resp.ApiKeys, kmsg.ApiVersionsResponseApiKey{ApiKey: v.Key, MinVersion: v.Min, MaxVersion: v.Max})
	}
	if req.Version >= 3 {
		resp.SupportedFeatures = append(resp.SupportedFeatures,
			kmsg.ApiVersionsResponseSupportedFeature{Name: "transaction.version", MinVersion: 0, MaxVersion: transactionVersion},
			kmsg.ApiVersionsResponseSupportedFeature{Name: "eligible.leader.replicas.version", MinVersion: 0, MaxVersion: eligibleLeaderReplicasVersion})
		resp.FinalizedFeaturesEpoch = -1
		if transactionVersion > 0 {
			// The epoch only has to grow when the finalized set changes; it never does.
			resp.FinalizedFeaturesEpoch = 1
			resp.FinalizedFeatures = append(resp.FinalizedFeatures,
				kmsg.ApiVersionsResponseFinalizedFeature{Name: "transaction.version", MinVersionLevel: transactionVersion, MaxVersionLevel: transactionVersion},
				kmsg.ApiVersionsResponseFinalizedFeature{Name: "eligible.leader.replicas.version",
					MinVersionLevel: eligibleLeaderReplicasVersion, MaxVersionLevel: eligibleLeaderReplicasVersion})
		}
	}
	return resp, nil
}
