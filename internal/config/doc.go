// Package config defines every configuration key sluice understands and parses broker
// configuration.
//
// sluice uses Apache Kafka's own configuration names: broker keys as they appear in Kafka's
// server.properties, and topic keys as CreateTopics, AlterConfigs, IncrementalAlterConfigs and
// kafka-configs.sh use them. A Kafka user's files and scripts therefore carry over unchanged.
//
// What lives here:
//
//   - The definitions (Def): name, Type (DescribeConfigs' type codes), default, a short doc
//     string, sensitivity, whether a broker key can be changed dynamically, and validation.
//     Names, types, defaults and validation rules match Kafka 4.4 (LogConfig for topics,
//     KafkaConfig/AbstractKafkaConfig for brokers); see TopicDefs and BrokerDefs.
//   - Validation with Kafka's messages ("Invalid value X for configuration K: reason"),
//     returned as *Error so callers can map them to INVALID_CONFIG: ValidateTopic (one key),
//     ValidateTopicConfigs (a topic's whole set, with Kafka's cross-key checks),
//     ValidateBroker (server.properties), ValidateBrokerDynamic and
//     ValidateBrokerDynamicDefault (AlterConfigs on one broker id / on the default resource).
//   - Java .properties parsing (LoadProperties, ParseProperties) and typed broker
//     configuration (ParseBroker, Broker).
//   - Value resolution for DescribeConfigs and for the storage engine (BrokerValue,
//     BrokerSynonyms, TopicValue): the effective value, its Source and the synonyms Kafka
//     reports; EffectiveTopicValue for hot paths; ResolveTopic for a typed TopicSettings.
//
// Invariants:
//
//   - Unknown keys are errors, never silently ignored. Keys that sluice accepts for
//     compatibility but does not act on are marked Def.NoEffect; ParseBroker reports them in
//     Broker.Warnings when they are set explicitly.
//   - Every default value of a Def passes that Def's own validation (tested).
//   - The tables are immutable after package initialisation; callers must not modify a *Def.
//
// testdata/kafka-4.4.0-configdefs.tsv is a dump of Kafka 4.4.0's ConfigDefs (made with
// testdata/DumpConfigDefs.java); TestDefsMatchKafka keeps the tables equal to it. Keys Kafka
// removed (group.share.enable and internal.metadata.max.fetch.size.in.bytes in 4.2) are unknown
// keys here too: Kafka 4.4's jars do not know them either.
//
// Where sluice's defaults deliberately differ from Kafka's, the Def's doc says so. They differ
// only so that `sluice` with no arguments is a working single-node cluster on 127.0.0.1:9092
// that keeps its data in ./data: node.id (Kafka: required), process.roles (Kafka: required),
// listeners (Kafka: PLAINTEXT://:9092), log.dir (Kafka: /tmp/kafka-logs),
// controller.listener.names (Kafka 4.4: required; sluice: needed only in a multi-node quorum).
package config
