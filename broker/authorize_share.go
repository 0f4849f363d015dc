package broker

// Authorization of the share group APIs, as Kafka's KafkaApis checks them: ShareGroupHeartbeat,
// ShareFetch, ShareAcknowledge and AlterShareGroupOffsets need READ on the group,
// ShareGroupDescribe and DescribeShareGroupOffsets DESCRIBE, DeleteShareGroupOffsets DELETE
// (GROUP_AUTHORIZATION_FAILED otherwise); a heartbeat's subscribed topics need DESCRIBE and
// the topics a ShareFetch or ShareAcknowledge names READ (TOPIC_AUTHORIZATION_FAILED, per
// partition for the data APIs, which then neither fetch nor acknowledge there).

import (
	"sluice/authz"
	"sluice/wire"
)

// shareGroupDenied reports whether conn lacks op on group.
func (b *Broker) shareGroupDenied(conn *wire.ConnInfo, op int8, group string) bool {
	return b.authzOn() && !b.allowedGroup(conn, op, group)
}

// shareTopicsDenied reports whether conn lacks DESCRIBE on any of topics.
func (b *Broker) shareTopicsDenied(conn *wire.ConnInfo, topics []string) bool {
	if !b.authzOn() {
		return false
	}
	for _, t := range topics {
		if !b.allowedTopic(conn, authz.OpDescribe, t) {
			return true
		}
	}
	return false
}

// shareTopicReadable reports whether conn may READ the topic with this ID (an unknown topic
// is left to the handler's UNKNOWN_TOPIC_ID).
func (b *Broker) shareTopicReadable(conn *wire.ConnInfo, id [16]byte) bool {
	if !b.authzOn() {
		return true
	}
	name := topicNameOf(b.ctrl.Image(), id)
	return name == "" || b.allowedTopic(conn, authz.OpRead, name)
}
