package config

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"sluice/internal/telemetry"
)

// WriteReference writes docs/configuration.md: every broker and topic key, grouped by what
// sluice does with it (Support), with its default and the reason for keys that are refused or
// have no effect. TestConfigurationDocIsCurrent keeps the committed file equal to it.
func WriteReference(w io.Writer) error {
	var b strings.Builder
	b.WriteString("# sluice configuration reference\n\n")
	b.WriteString("Generated from internal/config (`go test ./internal/config -run TestConfigurationDocIsCurrent -update`); do not edit by hand.\n\n")
	b.WriteString("sluice reads Apache Kafka's own keys, those of Kafka 4.4.0 (types, defaults and validation checked against its jars). Each key is one of:\n\n")
	b.WriteString("- **honoured**: it does what Kafka documents. A few values of an honoured key need a feature sluice does not have yet; those values are refused, as noted.\n")
	b.WriteString("- **not supported yet**: setting it to anything but its default stops the start (broker keys) or fails CreateTopics / AlterConfigs (topic keys) with an error naming the key.\n")
	b.WriteString("- **no effect**: accepted so that Kafka's files carry over; setting it is logged once at start, with the reason.\n\n")
	b.WriteString("Unknown keys are always an error. Keys Kafka has removed are unknown too, as they are to Kafka 4.4: `group.share.enable` and `internal.metadata.max.fetch.size.in.bytes` (removed in 4.2). Listener-prefixed keys (`listener.name.NAME.key`) follow the key they prefix.\n")
	for _, part := range []struct {
		title string
		defs  []*Def
	}{{"Broker keys", BrokerDefs()}, {"Topic keys", TopicDefs()}} {
		for _, s := range []Support{Honoured, NotYet, NoEffect} {
			fmt.Fprintf(&b, "\n## %s: %s\n\n", part.title, s)
			b.WriteString("| key | default | note |\n|---|---|---|\n")
			for _, d := range part.defs {
				if d.Support != s {
					continue
				}
				note := d.supportWhy
				if s == Honoured {
					note = refusedValuesNote[d.Name]
				}
				if d.Internal {
					note = strings.TrimPrefix(note+"; internal (not listed by DescribeConfigs)", "; ")
				}
				if ownTopicKeys[d.Name] {
					note = strings.TrimPrefix(note+"; sluice's own, not a Kafka key (README, \"Retention until consumed\")", "; ")
				}
				fmt.Fprintf(&b, "| `%s` | %s | %s |\n", d.Name, defaultCell(d), note)
			}
		}
	}
	b.WriteString("\n## Dynamic-only broker keys\n\n")
	b.WriteString("Kafka defines these only as dynamic broker configs: set them per broker id or as the cluster default with AlterConfigs (`kafka-configs --entity-type brokers`, `kafka-reassign-partitions --throttle`), not in server.properties.\n\n")
	b.WriteString("| key | default | support | note |\n|---|---|---|---|\n")
	names := make([]string, 0, len(dynamicOnlyBrokerDefs))
	for n := range dynamicOnlyBrokerDefs {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		d := dynamicOnlyBrokerDefs[n]
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s |\n", d.Name, defaultCell(d), d.Support, d.supportWhy)
	}
	b.WriteString("\n## Client metrics subscription keys\n\n")
	b.WriteString("The keys of a CLIENT_METRICS config resource (KIP-714; `kafka-client-metrics --alter --name N`, `kafka-configs --entity-type client-metrics`), all honoured: clients whose attributes match every `match` entry (client_instance_id, client_id, client_software_name, client_software_version, client_source_address, client_source_port, each `name=regex`) push the metrics named by the `metrics` prefixes (`*`: all) every `interval.ms` (100 to 3600000); the broker exports them on /metrics. Stored in the metadata log.\n\n")
	b.WriteString("| key | type | default | doc |\n|---|---|---|---|\n")
	for _, d := range telemetry.KeyDocs {
		def := "\"\""
		if d.Default != "" {
			def = "`" + d.Default + "`"
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s |\n", d.Name, d.Type, def, d.Doc)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// refusedValuesNote says, for honoured keys with refused values (valueRefusals, and the
// several-key checks of Broker.checkSupported), which values those are.
var refusedValuesNote = map[string]string{
	"compression.type":                                 "only `producer` is accepted: the broker does not recompress yet",
	"sasl.server.callback.handler.class":               "only Kafka's OAUTHBEARER validators (`OAuthBearerUnsecuredValidatorCallbackHandler`, `OAuthBearerValidatorCallbackHandler`, for `listener.name.NAME.oauthbearer.`); other classes are refused",
	"authorizer.class.name":                            "unset (every request allowed) or `org.apache.kafka.metadata.authorizer.StandardAuthorizer` (the ACLs of the metadata log); other classes are refused",
	"replica.selector.class":                           "unset (consumers fetch from the leader) or `org.apache.kafka.common.replica.RackAwareReplicaSelector` (KIP-392: a leader points a consumer whose `client.rack` is another rack's at an in-sync follower in that rack); other classes are refused",
	"group.consumer.assignors":                         "the first (default) assignor must be `uniform`",
	"group.coordinator.rebalance.protocols":            "`share` is refused, and `consumer` must be listed (without `streams`, StreamsGroupHeartbeat answers UNSUPPORTED_VERSION)",
	"listeners":                                        "PLAINTEXT, SSL, SASL_PLAINTEXT and SASL_SSL listeners, the controller and inter-broker listeners included (SASL between nodes with PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512)",
	"offsets.topic.replication.factor":                 "capped at the number of brokers when the offsets topic is created",
	"transaction.state.log.replication.factor":         "capped at the number of brokers when the transaction state topic is created",
	"transaction.state.log.min.isr":                    "capped at the topic's replication factor when the transaction state topic is created",
	"share.coordinator.state.topic.replication.factor": "capped at the number of brokers when the share group state topic is created",
	"share.coordinator.state.topic.min.isr":            "capped at the topic's replication factor when the share group state topic is created",
	"group.share.persister.class.name":                 "`org.apache.kafka.server.share.persister.DefaultStatePersister` (share state on `__share_group_state`), or empty / `org.apache.kafka.server.share.persister.NoOpStatePersister` (state in memory only, lost at a restart); other classes are refused",
	"transaction.partition.verification.enable":        "only `true`: transactional produce is always verified (KIP-890)",
	"controller.quorum.bootstrap.servers":              "a dynamic quorum (KIP-853): a node asks the servers listed for the voters at start; a controller not in the quorum yet follows the log as an observer until AddRaftVoter (kafka-metadata-quorum add-controller) promotes it. See sluice format",
	"remote.log.storage.system.enable":                 "only `false`: sluice has no tiered storage",
	"remote.storage.enable":                            "only `false`: sluice has no tiered storage",
}

func defaultCell(d *Def) string {
	switch {
	case d.Default == nil:
		return "null"
	case *d.Default == "":
		return `""`
	case d.Sensitive:
		return "[hidden]"
	}
	return "`" + *d.Default + "`"
}
