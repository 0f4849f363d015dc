// Package console is sluice's built-in web console (`sluice --console-addr host:port`): server-
// rendered pages for a person looking at a cluster — an overview (brokers, the active
// controller, partition health), topics (partitions, leaders, ISR, sizes, a throughput
// sparkline, configs), a message browser (from an offset, a timestamp or the end; key, value
// and headers; JSON values pretty-printed; a key search), and consumer groups (members,
// assignments, lag per partition).
//
// The console is a Kafka client of the cluster (franz-go's kadm over the node's own client
// listener), so it shows exactly what clients see and works against any Kafka-compatible
// cluster. It is read-only unless Config.AllowWrites is set: then it also creates topics and
// moves an empty group's committed offsets (POST forms, refused with 403 otherwise).
//
// Everything it serves is in the binary (html/template and one embedded stylesheet, no
// JavaScript, no CDN). Each page makes its Kafka requests when it is loaded, bounded by
// Config.RequestTimeout; a background sampler keeps the last hour of each topic's end offsets
// (one sample per SampleInterval) for the sparklines.
package console
