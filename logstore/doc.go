// Package logstore is sluice's storage engine: one partition's segmented log in Apache Kafka's
// on-disk format. (Work in progress: the full format specification follows.)
package logstore
