// Package broker serves the Kafka APIs over sluice's partitions.
//
// It owns the partition replicas hosted on this node (each a logstore.Log plus its high
// watermark and leader epoch), reads cluster metadata from the controller's immutable image, and
// turns each Kafka request into work on those replicas. One file per Kafka API, named by key
// (00_produce.go, 01_fetch.go, ...); each opens with the versions it serves and registers itself
// in the API table (registry.go), which is also what ApiVersions advertises, so the versions
// advertised are exactly the versions implemented.
//
// Two error channels, as CONVENTIONS.md says: a Kafka-level problem becomes an error code in the
// response, per partition where the protocol has one (mapped from storage errors in errors.go);
// a Go error from a handler closes the connection.
//
// Requests that wait — a long-poll fetch, an acks=all produce — do not block the connection's
// handler: they park a waiter on the partitions they need and answer when an append or a high
// watermark move wakes them, or when their timeout fires.
package broker
