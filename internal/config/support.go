package config

import (
	"fmt"
	"slices"
	"strings"
)

// Support says what sluice does with a key that is set. Every key of the tables has exactly
// one (TestEveryKeyIsClassified); docs/configuration.md is generated from it.
type Support int8

const (
	// Unclassified is the zero value. No key may keep it: a key added to the tables without a
	// place in supportGroups fails the tests.
	Unclassified Support = iota
	// Honoured keys do what Kafka documents. Some values of an honoured key may need a feature
	// sluice does not have yet; those values are refused (Def.refuseValue).
	Honoured
	// NoEffect keys are accepted so that Kafka's files carry over, but change nothing: tuning
	// hints (thread counts, buffer sizes, purgatory intervals) and settings of machinery a
	// single sluice node does not have or does not need. Setting one is logged once at start.
	NoEffect
	// NotYet keys ask for a feature sluice does not implement yet (authorizers, OAUTHBEARER,
	// Java plugins, delegation tokens). Setting one to anything but its default stops the start
	// (broker keys) or fails CreateTopics / AlterConfigs, with an error naming the key.
	NotYet
)

func (s Support) String() string {
	switch s {
	case Honoured:
		return "honoured"
	case NoEffect:
		return "no effect"
	case NotYet:
		return "not supported yet"
	}
	return "unclassified"
}

// supportGroup classifies keys that share a reason.
type supportGroup struct {
	support Support
	// why is said to the user: for NoEffect in the start-up log line, for NotYet in the error.
	why  string
	keys []string
}

// Reasons shared by several groups.
const (
	whyRaftTiming  = "sluice's metadata quorum (etcd-raft) keeps its own timing: 100 ms ticks, a randomized 1-2 s election timeout, reconnects backing off from 50 ms to 1 s"
	whySecurity    = "Kerberos, TLS and SASL between brokers, OAUTHBEARER token retrieval and security plugins are not implemented yet"
	whyJava        = "sluice cannot load Java classes"
	whyTiered      = "sluice has no tiered storage"
	whyTuning      = "a Kafka tuning setting; sluice sizes this itself"
	whyShare       = "sluice's share groups (KIP-932) use the simple assignor and serve their members from the node that coordinates the group; these choose or tune what sluice does its own way"
	whyQuotas      = "replica moves between log directories are paced by replica.alter.log.dirs.io.max.bytes.per.second directly (a byte rate since the move started), not through Kafka's windowed quota"
	whyMetrics     = "sluice loads no metrics reporters: it serves Prometheus /metrics on --http-addr, where it also exports the client telemetry (KIP-714) clients push, which Kafka hands to a reporter"
	whyMetadataLog = "the metadata log's segmenting and snapshots are sluice's own"
	whyDLQ         = "share-group dead-letter queues (KIP-1191) are not implemented yet"
	whyDecompress  = "sluice does not bound each record's decompressed size yet; it bounds what a whole compressed batch may expand to, at max(64 MiB, 32 × max.message.bytes)"
)

// brokerSupport classifies every broker key.
var brokerSupport = []supportGroup{
	{Honoured, "", []string{
		"node.id", "broker.id", "process.roles", "broker.rack",
		"listeners", "advertised.listeners", "listener.security.protocol.map", "controller.listener.names",
		"controller.quorum.voters", "controller.quorum.bootstrap.servers",
		"log.dir", "log.dirs", "metadata.log.dir",
		"auto.create.topics.enable", "delete.topic.enable", "num.partitions", "default.replication.factor",
		"min.insync.replicas", "message.max.bytes", "compression.type", "log.cleanup.policy",
		"log.retention.ms", "log.retention.minutes", "log.retention.hours", "log.retention.bytes",
		"log.retention.check.interval.ms", "log.roll.ms", "log.roll.hours", "log.roll.jitter.ms",
		"log.roll.jitter.hours", "log.segment.bytes", "log.segment.delete.delay.ms",
		"log.index.interval.bytes", "log.index.size.max.bytes", "log.flush.interval.messages",
		"log.flush.interval.ms", "log.flush.scheduler.interval.ms", "log.message.timestamp.type",
		"log.message.timestamp.after.max.ms", "log.message.timestamp.before.max.ms", "log.preallocate",
		"socket.request.max.bytes", "connections.max.idle.ms", "max.incremental.fetch.session.cache.slots",
		"max.request.partition.size.limit", "fetch.max.bytes", "num.recovery.threads.per.data.dir",
		"max.connections", "max.connections.per.ip", "max.connections.per.ip.overrides", "max.connection.creation.rate",
		"queued.max.request.bytes",
		"offsets.topic.num.partitions", "offsets.topic.replication.factor", "offsets.topic.segment.bytes",
		"offsets.retention.minutes", "offsets.retention.check.interval.ms", "offset.metadata.max.bytes",
		"producer.id.expiration.ms",
		"group.initial.rebalance.delay.ms", "group.min.session.timeout.ms", "group.max.session.timeout.ms",
		"group.max.size", "group.consumer.session.timeout.ms", "group.consumer.heartbeat.interval.ms",
		"group.consumer.max.size", "group.consumer.assignors", "group.coordinator.rebalance.protocols",
		"group.streams.session.timeout.ms", "group.streams.heartbeat.interval.ms", "group.streams.max.size",
		"group.streams.num.standby.replicas", "group.streams.initial.rebalance.delay.ms",
		"remote.log.storage.system.enable",
		"log.cleaner.enable", "log.cleaner.backoff.ms", "log.cleaner.dedupe.buffer.size", "log.cleaner.delete.retention.ms",
		"log.cleaner.io.buffer.load.factor", "log.cleaner.io.max.bytes.per.second",
		"log.cleaner.max.compaction.lag.ms", "log.cleaner.min.cleanable.ratio", "log.cleaner.min.compaction.lag.ms",
		"log.cleaner.threads",
		"replication.quota.window.num", "replication.quota.window.size.seconds",
		"quota.window.num", "quota.window.size.seconds",
	}},
	{Honoured, "", []string{
		"ssl.keystore.location", "ssl.keystore.password", "ssl.keystore.type", "ssl.keystore.key",
		"ssl.keystore.certificate.chain", "ssl.key.password", "ssl.truststore.location",
		"ssl.truststore.password", "ssl.truststore.type", "ssl.truststore.certificates",
		"ssl.client.auth", "ssl.cipher.suites", "ssl.enabled.protocols", "ssl.principal.mapping.rules",
		"sasl.enabled.mechanisms", "sasl.jaas.config", "sasl.server.max.receive.size",
		"connections.max.reauth.ms", "connection.failed.authentication.delay.ms",
		// OAUTHBEARER (wire/sasl_oauth.go, cmd/sluice/security_oauth.go).
		"sasl.server.callback.handler.class", "sasl.oauthbearer.jwks.endpoint.url",
		"sasl.oauthbearer.expected.audience", "sasl.oauthbearer.expected.issuer",
		"sasl.oauthbearer.clock.skew.seconds", "sasl.oauthbearer.jwks.endpoint.refresh.ms",
		"sasl.oauthbearer.jwks.endpoint.retry.backoff.ms", "sasl.oauthbearer.scope.claim.name",
		"sasl.oauthbearer.sub.claim.name",
		"sasl.oauthbearer.allow.unverified.audience", "sasl.oauthbearer.allow.unverified.issuer",
		// The client side of connections between nodes (cmd/sluice/peer_security.go).
		"sasl.mechanism.inter.broker.protocol", "ssl.endpoint.identification.algorithm",
		"sasl.mechanism.controller.protocol",
	}},
	{Honoured, "", []string{"authorizer.class.name", "super.users", "allow.everyone.if.no.acl.found"}},
	{NotYet, whySecurity, []string{
		"sasl.client.callback.handler.class",
		"sasl.login.callback.handler.class", "sasl.login.class", "sasl.kerberos.service.name",
		"ssl.engine.factory.class", "ssl.provider",
		"principal.builder.class", "security.providers",
		"sasl.oauthbearer.token.endpoint.url", "sasl.oauthbearer.jwt.retriever.class", "sasl.oauthbearer.jwt.validator.class",
		"sasl.oauthbearer.client.credentials.client.id", "sasl.oauthbearer.client.credentials.client.secret",
		"sasl.oauthbearer.assertion.file", "sasl.oauthbearer.assertion.private.key.file",
		"sasl.oauthbearer.assertion.private.key.passphrase", "sasl.oauthbearer.assertion.template.file",
		"sasl.oauthbearer.scope", "sasl.kerberos.principal.to.local.rules",
	}},
	{NoEffect, "crypto/tls negotiates the highest version ssl.enabled.protocols allows; there is no SSLContext protocol to choose", []string{
		"ssl.protocol",
	}},
	{NoEffect, "it configures a part of Kafka's security sluice does not have: JSSE key and trust managers, keystore reloading, the broker's own TLS and SASL clients, Kerberos, OAUTHBEARER token retrieval (a client's side)", []string{
		"ssl.allow.dn.changes", "ssl.allow.san.changes",
		"ssl.keymanager.algorithm", "ssl.trustmanager.algorithm", "ssl.secure.random.implementation",
		"sasl.kerberos.kinit.cmd", "sasl.kerberos.min.time.before.relogin", "sasl.kerberos.ticket.renew.jitter",
		"sasl.kerberos.ticket.renew.window.factor", "sasl.login.connect.timeout.ms", "sasl.login.read.timeout.ms",
		"sasl.login.refresh.buffer.seconds", "sasl.login.refresh.min.period.seconds",
		"sasl.login.refresh.window.factor", "sasl.login.refresh.window.jitter", "sasl.login.retry.backoff.max.ms",
		"sasl.login.retry.backoff.ms", "sasl.oauthbearer.assertion.algorithm", "sasl.oauthbearer.assertion.claim.aud",
		"sasl.oauthbearer.assertion.claim.exp.seconds", "sasl.oauthbearer.assertion.claim.iss",
		"sasl.oauthbearer.assertion.claim.jti.include", "sasl.oauthbearer.assertion.claim.nbf.seconds",
		"sasl.oauthbearer.assertion.claim.sub",
	}},
	{NoEffect, "a JWKS reload asked for by an unknown key ID waits sasl.oauthbearer.jwks.endpoint.retry.backoff.ms between attempts, without growing", []string{
		"sasl.oauthbearer.jwks.endpoint.retry.backoff.max.ms",
	}},
	{NotYet, whyJava, []string{
		"alter.config.policy.class.name", "create.topic.policy.class.name", "client.quota.callback.class",
		"remote.log.storage.manager.class.name", "remote.log.metadata.manager.class.name",
	}},
	{Honoured, "", []string{"replica.selector.class"}}, // KIP-392: RackAwareReplicaSelector built in
	{NotYet, "delegation tokens are not implemented yet", []string{"delegation.token.secret.key"}},
	{NoEffect, "delegation tokens are not implemented yet", []string{
		"delegation.token.expiry.check.interval.ms", "delegation.token.expiry.time.ms", "delegation.token.max.lifetime.ms",
	}},
	{Honoured, "", []string{
		"broker.heartbeat.interval.ms", "broker.session.timeout.ms", "initial.broker.registration.timeout.ms",
		"controlled.shutdown.enable", "replica.high.watermark.checkpoint.interval.ms",
	}},
	{Honoured, "", []string{
		"inter.broker.listener.name", "security.inter.broker.protocol", "num.replica.fetchers",
		"replica.fetch.backoff.ms", "replica.fetch.max.bytes", "replica.fetch.min.bytes",
		"replica.fetch.response.max.bytes", "replica.fetch.wait.max.ms", "replica.lag.time.max.ms",
		"offsets.commit.timeout.ms", "unclean.leader.election.enable",
	}},
	{Honoured, "", []string{"auto.leader.rebalance.enable", "leader.imbalance.check.interval.seconds"}},
	{NoEffect, "the active controller looks for leaderless partitions that unclean.leader.election.enable lets it elect every second (controller/elections.go), not at this interval", []string{
		"unclean.leader.election.interval.ms",
	}},
	{NoEffect, "replica fetchers use franz-go's connection handling and the replica.fetch.* bounds", []string{
		"replica.socket.receive.buffer.bytes", "replica.socket.timeout.ms",
	}},
	{NoEffect, whyRaftTiming, []string{
		"controller.quorum.append.linger.ms", "controller.quorum.election.backoff.max.ms",
		"controller.quorum.election.timeout.ms", "controller.quorum.fetch.timeout.ms",
		"controller.quorum.request.timeout.ms", "controller.quorum.retry.backoff.ms", "controller.socket.timeout.ms",
		"request.timeout.ms", "socket.connection.setup.timeout.ms", "socket.connection.setup.timeout.max.ms",
	}},
	{NoEffect, "sluice's metadata quorum (etcd-raft) bounds its own messages: at most 1 MiB of entries per append, snapshots sent whole", []string{
		"controller.quorum.fetch.max.bytes", "controller.quorum.fetch.snapshot.max.bytes",
	}},
	{NotYet, "a controller joining the voter set by itself (KIP-853 auto-join) is not implemented yet; add it with kafka-metadata-quorum add-controller", []string{
		"controller.quorum.auto.join.enable",
	}},
	{NotYet, "sluice loads no ConfigProviders: ${provider:path:key} references would be taken literally", []string{
		"config.providers",
	}},
	{NoEffect, "sluice's cleaner reads a segment through a 1 MiB window and writes each batch as it is filtered", []string{
		"log.cleaner.io.buffer.size",
	}},
	{NoEffect, "only used when the broker recompresses, which sluice does not do yet (compression.type other than producer is refused)", []string{
		"compression.gzip.level", "compression.lz4.level", "compression.zstd.level",
	}},
	{Honoured, "", []string{
		"add.partitions.to.txn.retry.backoff.max.ms", "add.partitions.to.txn.retry.backoff.ms",
		"transaction.abort.timed.out.transaction.cleanup.interval.ms", "transaction.max.timeout.ms",
		"transaction.partition.verification.enable", "transaction.remove.expired.transaction.cleanup.interval.ms",
		"transaction.state.log.min.isr", "transaction.state.log.num.partitions",
		"transaction.state.log.replication.factor", "transaction.state.log.segment.bytes",
		"transactional.id.expiration.ms",
	}},
	{NoEffect, "the transaction coordinator loads __transaction_state in 1 MiB reads", []string{
		"transaction.state.log.load.buffer.size",
	}},
	{NotYet, "cordoning log directories (KIP-1066) is not implemented yet: DescribeLogDirs answers every directory not cordoned", []string{
		"cordoned.log.dirs",
	}},
	{NotYet, "two-phase commit with an external transaction manager (KIP-939) is not implemented yet", []string{
		"transaction.two.phase.commit.enable",
	}},
	{Honoured, "", []string{
		"group.share.delivery.count.limit", "group.share.heartbeat.interval.ms", "group.share.max.share.sessions",
		"group.share.max.size", "group.share.partition.max.record.locks", "group.share.record.lock.duration.ms",
		"group.share.session.timeout.ms",
		// They bound a group's share.* overrides (broker/group_configs.go, group_configs_modern.go).
		"group.share.max.record.lock.duration.ms", "group.share.min.record.lock.duration.ms",
		"group.share.max.delivery.count.limit", "group.share.min.delivery.count.limit",
		"group.share.max.partition.max.record.locks", "group.share.min.partition.max.record.locks",
		"group.share.max.heartbeat.interval.ms", "group.share.min.heartbeat.interval.ms",
		"group.share.max.session.timeout.ms", "group.share.min.session.timeout.ms",
	}},
	{NoEffect, whyShare, []string{
		"group.share.assignors",
		"share.fetch.purgatory.purge.interval.requests",
	}},
	{Honoured, "", []string{
		// The share coordinator on __share_group_state (broker/share_state.go).
		"group.share.persister.class.name",
		"share.coordinator.snapshot.update.records.per.snapshot",
		"share.coordinator.state.topic.min.isr", "share.coordinator.state.topic.num.partitions",
		"share.coordinator.state.topic.replication.factor", "share.coordinator.state.topic.segment.bytes",
		"share.coordinator.write.timeout.ms",
	}},
	{NoEffect, "the share coordinator appends each state write at once, uncompressed, on one event loop per __share_group_state partition, loads in 1 MiB reads, and relies on compaction alone to bound the topic (no periodic pruning or cold-partition snapshots)", []string{
		"share.coordinator.append.linger.ms", "share.coordinator.cold.partition.snapshot.interval.ms",
		"share.coordinator.cached.buffer.max.bytes",
		"share.coordinator.load.buffer.size", "share.coordinator.state.topic.compression.codec",
		"share.coordinator.state.topic.prune.interval.ms", "share.coordinator.threads",
	}},
	{NotYet, whyDLQ, []string{
		"errors.deadletterqueue.auto.create.topics.enable", "errors.deadletterqueue.topic.name.prefix",
		"group.share.dlq.manager.class.name",
	}},
	{NotYet, "sluice computes a group's target assignment at the heartbeat that needs it, in the coordinator: there is no batching interval and nothing to offload", []string{
		"group.consumer.assignment.interval.ms", "group.consumer.assignor.offload.enable",
		"group.share.assignment.interval.ms", "group.share.assignor.offload.enable",
		"group.streams.assignment.interval.ms", "group.streams.assignor.offload.enable",
	}},
	{NoEffect, "sluice does not take the per-group *.assignment.interval.ms overrides, which these bound", []string{
		"group.consumer.max.assignment.interval.ms", "group.consumer.min.assignment.interval.ms",
		"group.share.max.assignment.interval.ms", "group.share.min.assignment.interval.ms",
		"group.streams.max.assignment.interval.ms", "group.streams.min.assignment.interval.ms",
	}},
	{NotYet, "sluice has one built-in streams assignor, without warm-up replicas, task lag or rack awareness", []string{
		"group.streams.assignors", "group.streams.num.warmup.replicas", "group.streams.acceptable.recovery.lag",
		"group.streams.rack.aware.assignment.tags",
	}},
	{NoEffect, "sluice's streams assignor uses no warm-up replicas or task offsets, and sluice does not take the per-group overrides these bound or pace", []string{
		"group.streams.max.warmup.replicas", "group.streams.min.task.offset.interval.ms",
		"group.streams.task.offset.interval.ms",
	}},
	{NotYet, whyJava, []string{"group.streams.topology.description.plugin.class"}},
	{NoEffect, "a persister call sluice makes (share-partition state initialization included) is retried every 20 ms while the share coordinator is not ready (broker/share_state.go), not at this interval", []string{
		"group.share.initialize.retry.interval.ms",
	}},
	{NoEffect, "sluice does not take per-group streams config overrides yet, which these bound", []string{
		"group.streams.max.heartbeat.interval.ms",
		"group.streams.max.session.timeout.ms", "group.streams.max.standby.replicas",
		"group.streams.min.heartbeat.interval.ms", "group.streams.min.session.timeout.ms",
	}},
	{NoEffect, "sluice does not take per-group session and heartbeat overrides yet, which these bound", []string{
		"group.consumer.max.heartbeat.interval.ms", "group.consumer.max.session.timeout.ms",
		"group.consumer.min.heartbeat.interval.ms", "group.consumer.min.session.timeout.ms",
	}},
	{NoEffect, "sluice does not move groups between the classic and consumer protocols yet (it behaves as DISABLED)", []string{
		"group.consumer.migration.policy",
	}},
	{NoEffect, "sluice does not serve regular-expression subscriptions of the consumer protocol yet", []string{
		"group.consumer.regex.refresh.interval.ms",
	}},
	{Honoured, "", []string{"controller.quota.window.num", "controller.quota.window.size.seconds"}}, // broker/quotas_mutation.go
	{Honoured, "", []string{"num.replica.alter.log.dirs.threads", "log.dir.failure.timeout.ms"}},    // broker/log_dir_moves.go
	{NoEffect, whyQuotas, []string{
		"alter.log.dirs.replication.quota.window.num", "alter.log.dirs.replication.quota.window.size.seconds",
	}},
	{NoEffect, whyMetrics, []string{
		"metric.reporters", "metrics.num.samples", "metrics.recording.level", "metrics.sample.window.ms",
		"kafka.metrics.polling.interval.secs", "kafka.metrics.reporters", "controller.performance.always.log.threshold.ms",
		"controller.performance.sample.period.ms",
	}},
	{Honoured, "", []string{"telemetry.max.bytes"}}, // internal/telemetry: TELEMETRY_TOO_LARGE past it
	{NoEffect, whyMetadataLog, []string{
		"metadata.log.max.record.bytes.between.snapshots", "metadata.log.max.snapshot.interval.ms",
		"metadata.log.segment.bytes", "metadata.log.segment.ms", "metadata.max.idle.interval.ms",
		"metadata.max.retention.bytes", "metadata.max.retention.ms", "internal.metadata.log.segment.bytes",
		"internal.metadata.max.batch.size.in.bytes", "internal.metadata.delete.delay.millis",
	}},
	{NotYet, whyTiered, []string{"follower.fetch.last.tiered.offset.enable"}},
	{NotYet, whyDecompress, []string{"max.decompressed.message.bytes"}},
	{NoEffect, whyTiered, []string{
		"log.local.retention.bytes", "log.remote.copy.lag.bytes", "log.remote.copy.lag.ms",
		"remote.log.index.file.cache.ttl.ms", "remote.log.manager.follower.thread.pool.size", "log.local.retention.ms", "remote.fetch.max.wait.ms",
		"remote.list.offsets.request.timeout.ms", "remote.log.index.file.cache.total.size.bytes",
		"remote.log.manager.copier.thread.pool.size", "remote.log.manager.copy.max.bytes.per.second",
		"remote.log.manager.copy.quota.window.num", "remote.log.manager.copy.quota.window.size.seconds",
		"remote.log.manager.expiration.thread.pool.size", "remote.log.manager.fetch.max.bytes.per.second",
		"remote.log.manager.fetch.quota.window.num", "remote.log.manager.fetch.quota.window.size.seconds",
		"remote.log.manager.task.interval.ms", "remote.log.manager.task.retry.backoff.max.ms",
		"remote.log.manager.task.retry.backoff.ms", "remote.log.manager.task.retry.jitter",
		"remote.log.manager.thread.pool.size", "remote.log.metadata.custom.metadata.max.bytes",
		"remote.log.metadata.manager.class.path", "remote.log.metadata.manager.impl.prefix",
		"remote.log.metadata.manager.listener.name", "remote.log.reader.max.pending.tasks", "remote.log.reader.threads",
		"remote.log.storage.manager.class.path", "remote.log.storage.manager.impl.prefix",
	}},
	{NoEffect, whyTuning, []string{
		"background.threads", "num.io.threads", "num.network.threads",
		"group.coordinator.threads", "group.coordinator.append.linger.ms",
		"group.coordinator.background.threads", "group.coordinator.cached.buffer.max.bytes",
		"delete.records.purgatory.purge.interval.requests", "fetch.purgatory.purge.interval.requests",
		"producer.purgatory.purge.interval.requests", "offsets.load.buffer.size", "offsets.topic.compression.codec",
		"queued.max.requests", "socket.listen.backlog.size", "socket.receive.buffer.bytes",
		"socket.send.buffer.bytes", "log.flush.offset.checkpoint.interval.ms",
		"log.flush.start.offset.checkpoint.interval.ms",
		"log.initial.task.delay.ms", "producer.id.expiration.check.interval.ms", "server.max.startup.time.ms",
		"early.start.listeners", "unstable.api.versions.enable", "unstable.feature.versions.enable",
	}},
}

// topicSupport classifies every topic key.
var topicSupport = []supportGroup{
	{Honoured, "", []string{
		"cleanup.policy", "compression.type", "file.delete.delay.ms", "flush.messages", "flush.ms",
		"index.interval.bytes", "max.message.bytes", "message.timestamp.after.max.ms",
		"message.timestamp.before.max.ms", "message.timestamp.type", "min.insync.replicas", "preallocate",
		"remote.storage.enable", "retention.bytes", "retention.ms", "segment.bytes", "segment.index.bytes",
		"segment.jitter.ms", "segment.ms", "internal.segment.bytes", "unclean.leader.election.enable",
		"delete.retention.ms", "max.compaction.lag.ms", "min.compaction.lag.ms", "min.cleanable.dirty.ratio",
		"follower.replication.throttled.replicas", "leader.replication.throttled.replicas",
		"retention.consumed.groups", "retention.consumed.require.commit",
	}},
	{NoEffect, "only used when the broker recompresses, which sluice does not do yet (compression.type other than producer is refused)", []string{
		"compression.gzip.level", "compression.lz4.level", "compression.zstd.level",
	}},
	{NoEffect, whyTiered, []string{
		"local.retention.bytes", "local.retention.ms", "remote.log.copy.disable", "remote.log.delete.on.disable",
		"remote.copy.lag.bytes", "remote.copy.lag.ms",
	}},
	{NotYet, whyDLQ, []string{"errors.deadletterqueue.group.enable"}},
	{NotYet, whyDecompress, []string{"max.decompressed.message.bytes"}},
}

// valueRefusals are the values of honoured keys that need a feature sluice lacks; each returns
// why the value is refused, "" when it is fine. Checks involving several keys (listeners and
// their protocols, voters naming other nodes) are in Broker.checkSupported.
var valueRefusals = map[string]func(value string) string{
	"compression.type": refuseRecompression,
	"sasl.server.callback.handler.class": func(v string) string {
		switch strings.TrimSpace(v) {
		case "", "org.apache.kafka.common.security.oauthbearer.OAuthBearerUnsecuredValidatorCallbackHandler",
			"org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallbackHandler",
			"org.apache.kafka.common.security.oauthbearer.secured.OAuthBearerValidatorCallbackHandler":
			return ""
		}
		return "sluice cannot load Java classes; it has Kafka's two OAUTHBEARER validators built in: org.apache.kafka.common.security.oauthbearer.OAuthBearerUnsecuredValidatorCallbackHandler and org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallbackHandler"
	},
	"authorizer.class.name": func(v string) string {
		switch strings.TrimSpace(v) {
		case "", "org.apache.kafka.metadata.authorizer.StandardAuthorizer":
			return ""
		}
		return "sluice cannot load Java classes; the built-in authorizer is org.apache.kafka.metadata.authorizer.StandardAuthorizer (or leave it unset: every request is allowed)"
	},
	"transaction.partition.verification.enable": func(v string) string {
		if b, _ := ParseBool(v); !b {
			return "transactional produce is always verified with the transaction coordinator (KIP-890); turning verification off is not supported"
		}
		return ""
	},
	"group.share.persister.class.name": func(v string) string {
		switch strings.TrimSpace(v) {
		case "", "org.apache.kafka.server.share.persister.DefaultStatePersister", "org.apache.kafka.server.share.persister.NoOpStatePersister":
			return ""
		}
		return "sluice cannot load Java classes; the built-in persisters are org.apache.kafka.server.share.persister.DefaultStatePersister (share state on __share_group_state) and NoOpStatePersister or empty (share state in memory only)"
	},
	"replica.selector.class": func(v string) string {
		switch strings.TrimSpace(v) {
		case "", "org.apache.kafka.common.replica.RackAwareReplicaSelector":
			return ""
		}
		return "sluice cannot load Java classes; the built-in selector is org.apache.kafka.common.replica.RackAwareReplicaSelector (or leave it unset: consumers fetch from the leader)"
	},
	"group.consumer.assignors": func(v string) string {
		if list := ParseList(v); len(list) > 0 && list[0] != "uniform" {
			return "sluice's default server-side assignor is uniform; choosing another default is not supported yet (clients may still ask for range)"
		}
		return ""
	},
	"group.coordinator.rebalance.protocols": func(v string) string {
		for _, p := range ParseList(v) {
			switch p {
			case "share":
				return "share groups (KIP-932) are served without being listed here; listing \"share\" is not supported"
			}
		}
		if !slices.Contains(ParseList(v), "consumer") {
			return "turning off the consumer protocol (KIP-848) is not supported yet"
		}
		return ""
	},
}

func refuseRecompression(v string) string {
	if strings.TrimSpace(v) != "producer" {
		return "recompressing batches on the broker is not implemented yet; use producer (batches are stored as the producer compressed them)"
	}
	return ""
}

// notSupported is the error for a key, or a value of it, that sluice does not implement.
func notSupported(key, value, why string, topic bool) *Error {
	return &Error{Key: key, Value: value, Topic: topic,
		Message: fmt.Sprintf("%s=%s is not supported by sluice yet: %s", key, value, why)}
}

// CheckSupported returns an *Error when setting the key to value asks for something sluice
// does not implement yet: a NotYet key set to anything but its default, or a refused value of
// an honoured key. REQUIRES: value passed Check.
func (d *Def) CheckSupported(value string) error {
	switch d.Support {
	case NotYet:
		if d.Default != nil && Canonical(d.Type, value) == Canonical(d.Type, *d.Default) {
			return nil
		}
		if d.Default == nil && strings.TrimSpace(value) == "" {
			return nil
		}
		shown := value
		if d.Sensitive {
			shown = "[hidden]"
		}
		return notSupported(d.Name, shown, d.supportWhy, d.topic)
	case Honoured:
		if d.refuseValue != nil {
			if why := d.refuseValue(value); why != "" {
				return notSupported(d.Name, value, why, d.topic)
			}
		}
	}
	return nil
}

// SupportNote is the reason given with the key's classification ("" for honoured keys).
func (d *Def) SupportNote() string { return d.supportWhy }

// classify sets Support (and its reason) on every Def of table from groups. It panics on a
// name in groups that is not in the table or is listed twice: both are programming errors
// that package initialisation must catch.
func classify(table []*Def, groups []supportGroup, topic bool) {
	byName := make(map[string]*Def, len(table))
	for _, d := range table {
		byName[d.Name] = d
		d.topic = topic
	}
	for _, g := range groups {
		for _, name := range g.keys {
			d, ok := byName[name]
			if !ok {
				panic("config: support table names unknown key " + name)
			}
			if d.Support != Unclassified {
				panic("config: support table lists " + name + " twice")
			}
			d.Support, d.supportWhy = g.support, g.why
			if g.support == Honoured {
				d.refuseValue = valueRefusals[name]
			}
		}
	}
}

func init() {
	classify(brokerTable, brokerSupport, false)
	classify(topicTable, topicSupport, true)
}
