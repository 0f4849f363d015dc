package broker

// DescribeConfigs, key 32: v0–v4.
//
// Resources: TOPIC (every topic key with its effective value, DYNAMIC_TOPIC_CONFIG for
// overrides, else the broker synonym's source, else DEFAULT_CONFIG; never read-only) and
// BROKER: this node's id lists every broker key (dynamic per-broker, dynamic default, static
// server.properties, default; read-only unless Kafka can change it dynamically), "" lists only
// the cluster-wide dynamic defaults, any other id is INVALID_REQUEST, as Kafka's ConfigHelper
// answers. An empty or null key list means all keys; unknown keys are left out. Sensitive
// values are null, in synonyms too.
//
// v0: IsDefault instead of a source. v1+: Source, and ConfigSynonyms when IncludeSynonyms.
// v3+: ConfigType, and Documentation when IncludeDocumentation. An unknown topic is
// UNKNOWN_TOPIC_OR_PARTITION, an illegal topic name INVALID_TOPIC_EXCEPTION.
//
// BROKER_LOGGER: this node's id lists the root logger and every log component with its
// current level (broker_loggers.go), as Kafka lists its log4j loggers.
//
// GROUP: the group config keys sluice honours (group_configs.go), each with the group's
// override (GROUP_CONFIG) or the default (DEFAULT_CONFIG); the group need not exist.
//
// CLIENT_METRICS: a subscription's metrics, interval.ms and match, each with its value
// (CLIENT_METRICS_CONFIG) or default (DEFAULT_CONFIG); the subscription need not exist
// (client_metrics_configs.go).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"sluice/authz"
	"sluice/controller"
	"sluice/internal/config"
	"sluice/wire"
)

func init() { registerSync(32, 0, 4, (*Broker).handleDescribeConfigs) }

func (b *Broker) handleDescribeConfigs(_ context.Context, conn *wire.ConnInfo, req *kmsg.DescribeConfigsRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.DescribeConfigsResponse)
	im := b.ctrl.Image()
	for _, rr := range req.Resources {
		r := kmsg.NewDescribeConfigsResponseResource()
		r.ResourceType, r.ResourceName = rr.ResourceType, rr.ResourceName
		if code := b.configResourceDenied(conn, authz.OpDescribeConfigs, int8(rr.ResourceType), rr.ResourceName); code != 0 {
			r.ErrorCode, r.ErrorMessage = code, strPtr(kerr.ErrorForCode(code).(*kerr.Error).Description)
			resp.Resources = append(resp.Resources, r)
			continue
		}
		entries, code, msg := b.describeResource(im, int8(rr.ResourceType), rr.ResourceName, rr.ConfigNames)
		r.ErrorCode, r.ErrorMessage = code, msg
		if code == 0 {
			r.Configs = describeConfigsEntries(entries, req)
		}
		resp.Resources = append(resp.Resources, r)
	}
	return resp, nil
}

// describeResource resolves the entries of one resource, or the error to answer it with.
func (b *Broker) describeResource(im *controller.Image, resourceType int8, name string, names []string) ([]configEntry, int16, *string) {
	switch resourceType {
	case resourceTopic:
		if problem := topicNameProblem(name); problem != "" {
			return nil, kerr.InvalidTopicException.Code, &problem
		}
		topic := im.Topics[name]
		if topic == nil {
			// Kafka's ConfigHelper answers the code alone.
			return nil, kerr.UnknownTopicOrPartition.Code, nil
		}
		return b.topicConfigEntries(im, topic.Configs, names), 0, nil
	case resourceBroker:
		if name == "" {
			return b.clusterDefaultConfigEntries(im, names), 0, nil
		}
		// As Kafka's ConfigHelper words these for DescribeConfigs.
		id, err := config.ParseInt32(name)
		if err != nil {
			return nil, kerr.InvalidRequest.Code, strPtr("Broker id must be an integer, but it is: " + name)
		}
		if id != b.nodeID {
			return nil, kerr.InvalidRequest.Code, strPtr("Unexpected broker id, expected " + itoa32(b.nodeID) + " or empty string, but received " + name)
		}
		return b.brokerConfigEntries(im, names), 0, nil
	case resourceBrokerLogger:
		return b.brokerLoggerEntries(name, names)
	case resourceGroup:
		if name == "" {
			return nil, kerr.InvalidRequest.Code, strPtr("Group resource name must not be empty.")
		}
		return b.groupConfigEntries(im.GroupConfigs[name], names), 0, nil
	case resourceClientMetrics:
		if name == "" {
			return nil, kerr.InvalidRequest.Code, strPtr("Client metrics subscription name must not be empty")
		}
		return clientMetricsEntries(im.ClientMetrics[name], names), 0, nil
	default:
		return nil, kerr.InvalidRequest.Code, strPtr("Unsupported resource type: " + kmsg.ConfigResourceType(resourceType).String())
	}
}

// describeConfigsEntries renders entries in the shape of the request's version.
func describeConfigsEntries(entries []configEntry, req *kmsg.DescribeConfigsRequest) []kmsg.DescribeConfigsResponseResourceConfig {
	out := make([]kmsg.DescribeConfigsResponseResourceConfig, 0, len(entries))
	for _, e := range entries {
		c := kmsg.NewDescribeConfigsResponseResourceConfig()
		c.Name, c.Value, c.ReadOnly, c.IsSensitive = e.name, e.value, e.readOnly, e.sensitive
		c.Source = kmsg.ConfigSource(e.source)
		c.IsDefault = e.source == config.SourceDefaultConfig
		c.ConfigType = kmsg.ConfigType(e.typ)
		if req.IncludeDocumentation && req.Version >= 3 {
			doc := e.doc
			c.Documentation = &doc
		}
		if req.IncludeSynonyms && req.Version >= 1 {
			for _, s := range e.synonyms {
				syn := kmsg.NewDescribeConfigsResponseResourceConfigConfigSynonym()
				syn.Name, syn.Value, syn.Source = s.Name, s.Value, kmsg.ConfigSource(s.Source)
				c.ConfigSynonyms = append(c.ConfigSynonyms, syn)
			}
		}
		out = append(out, c)
	}
	return out
}
