// Package cluster connects brokers to the metadata quorum over the network, with the Kafka
// protocol itself, as KRaft does: Server answers the controller listener's Kafka requests
// from the local *controller.Controller, and Link is a broker's side of it.
//
// # Server
//
// Server is the wire.Handler of the controller listener. It serves ApiVersions (18),
// BrokerRegistration (62), BrokerHeartbeat (63), CreateTopics (19), DeleteTopics (20),
// CreatePartitions (37), AlterConfigs (33), IncrementalAlterConfigs (44), AllocateProducerIds
// (67), AlterPartition (56), AlterPartitionReassignments (45), ListPartitionReassignments (46),
// UnregisterBroker (64), AlterClientQuotas (49), AlterUserScramCredentials (51),
// DescribeQuorum (55), DescribeCluster (60) and ElectLeaders (43), at the versions in
// ServerVersions (one file per API, NN_name.go, notes on top). Requests that change metadata
// are proposals: a node that is not the active controller answers NOT_CONTROLLER, and
// clients (Link, Kafka's tools) find the active one. The listener also carries raft between voters; the process
// tells the two apart by the first four bytes ("SLCR", controller.NetTransport.ServeConn) and
// gives Kafka frames to this handler.
//
// With an authorizer (ServerConfig.Authorizer), every request is authorized first as Kafka's
// ControllerApis authorizes it (authorize.go).
//
// A response to a forwarded proposal carries, in tagged field 0x5C01 (a tag number Kafka does
// not use; Kafka clients skip unknown tags), the metadata offset at which the active
// controller published the change, 8 bytes big endian. Link waits until its local image has
// reached that offset before it answers the broker, so a broker sees its own changes, as it
// does when it calls the local controller.
//
// # Link
//
// Link is the broker's view of the quorum (it has the method set of broker.Metadata). Image
// is the local controller's image: a voter's in combined mode, and on a broker-only node
// (process.roles=broker) an observer's, which follows the log as a raft learner once the active
// controller has added it (at its registration; see the controller package doc, "Observers").
// Such a node's log is empty before it registered, so its Link asks the voters for the
// cluster ID (DescribeCluster) and calls LinkConfig.Registered once registered, when its
// transport starts dialling the voters. A proposal runs
// on the local controller when it leads and is otherwise sent with franz-go to the
// controller listener of the active controller (from the image's ControllerID, else each
// voter in turn), retrying on NOT_CONTROLLER and connection errors with a backoff from 50 ms
// doubling to 1 s, bounded by the caller's context. Register registers the broker with an
// incarnation ID made at New and LinkConfig.PreviousBrokerEpoch (its clean shutdown file's,
// KIP-966), and returns once it is registered and unfenced; then a
// goroutine heartbeats every HeartbeatInterval (broker.heartbeat.interval.ms), registering
// again when the controller answers STALE_BROKER_EPOCH or BROKER_ID_NOT_REGISTERED. Every
// heartbeat carries the log directories SetOfflineLogDirs last named (the broker's storage
// failed), and a change of them sends one at once. Registrations carry LinkConfig.LogDirs, and
// AssignReplicaDirs tells the active controller which of them holds each replica (API 73).
// ControlledShutdown heartbeats with WantShutDown until ShouldShutDown.
package cluster
