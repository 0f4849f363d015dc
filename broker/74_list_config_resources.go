package broker

// ListConfigResources, key 74: v0–v1 (KIP-1000's ListClientMetricsResources, renamed and
// widened by KIP-1142).
//
// As Kafka 4.4 answers it: CLUSTER_AUTHORIZATION_FAILED without DESCRIBE_CONFIGS on the
// cluster. v0 lists the CLIENT_METRICS subscriptions. v1 lists the resources of the asked
// types (none asked: every type it knows — TOPIC, BROKER, BROKER_LOGGER, CLIENT_METRICS,
// GROUP): groups with a group config, subscriptions, each unfenced broker with an endpoint on
// this listener as BROKER_LOGGER and as BROKER, and every topic; a type it does not know is
// UNSUPPORTED_VERSION for the whole request.

import (
	"context"
	"maps"
	"slices"
	"strconv"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"sluice/authz"
	"sluice/wire"
)

func init() { registerSync(74, 0, 1, (*Broker).handleListConfigResources) }

// listableConfigResourceTypes are the types ListConfigResources v1 lists.
var listableConfigResourceTypes = []int8{resourceTopic, resourceBroker, resourceBrokerLogger, resourceClientMetrics, resourceGroup}

func (b *Broker) handleListConfigResources(_ context.Context, conn *wire.ConnInfo, req *kmsg.ListConfigResourcesRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.ListConfigResourcesResponse)
	if b.authzOn() && !b.allowedCluster(conn, authz.OpDescribeConfigs) {
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
		return resp, nil
	}
	im := b.ctrl.Image()
	types := []int8{resourceClientMetrics}
	if req.Version >= 1 {
		types = req.ResourceTypes
		if len(types) == 0 {
			types = listableConfigResourceTypes
		}
		for _, t := range types {
			if !slices.Contains(listableConfigResourceTypes, t) {
				resp.ErrorCode = kerr.UnsupportedVersion.Code
				return resp, nil
			}
		}
	}
	add := func(typ int8, names []string) {
		if !slices.Contains(types, typ) {
			return
		}
		for _, n := range names {
			r := kmsg.NewListConfigResourcesResponseConfigResource()
			r.Name, r.Type = n, typ
			resp.ConfigResources = append(resp.ConfigResources, r)
		}
	}
	var brokers []string
	for _, br := range brokersFor(im, conn.ListenerName) {
		brokers = append(brokers, strconv.Itoa(int(br.NodeID)))
	}
	// In Kafka's order.
	add(resourceGroup, slices.Sorted(maps.Keys(im.GroupConfigs)))
	add(resourceClientMetrics, slices.Sorted(maps.Keys(im.ClientMetrics)))
	add(resourceBrokerLogger, brokers)
	add(resourceBroker, brokers)
	add(resourceTopic, slices.Sorted(maps.Keys(im.Topics)))
	return resp, nil
}
