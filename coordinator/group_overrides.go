package coordinator

import "time"

// GroupOverrides are the dynamic group configs (the GROUP config resource, KIP-848/KIP-1071) of
// one group that the coordinator honours, each already clamped to the broker's bounds, as
// Kafka 4.4's GroupConfig.evaluate clamps them. A zero (nil) field takes the broker's value.
type GroupOverrides struct {
	// ConsumerSessionTimeout is consumer.session.timeout.ms, ConsumerHeartbeatInterval
	// consumer.heartbeat.interval.ms (KIP-848 consumer groups).
	ConsumerSessionTimeout, ConsumerHeartbeatInterval time.Duration
	// StreamsSessionTimeout is streams.session.timeout.ms, StreamsHeartbeatInterval
	// streams.heartbeat.interval.ms (KIP-1071 streams groups).
	StreamsSessionTimeout, StreamsHeartbeatInterval time.Duration
	// StreamsNumStandbyReplicas is streams.num.standby.replicas.
	StreamsNumStandbyReplicas *int
	// StreamsInitialRebalanceDelay is streams.initial.rebalance.delay.ms.
	StreamsInitialRebalanceDelay *time.Duration
}

// overrides reads a group's overrides; none without Config.GroupOverrides.
func (s *shard) overrides(group string) GroupOverrides {
	if s.cfg.GroupOverrides == nil {
		return GroupOverrides{}
	}
	return s.cfg.GroupOverrides(group)
}

func (s *shard) consumerSessionTimeout(group string) time.Duration {
	if d := s.overrides(group).ConsumerSessionTimeout; d > 0 {
		return d
	}
	return s.cfg.ConsumerGroupSessionTimeout
}

func (s *shard) consumerHeartbeatInterval(group string) time.Duration {
	if d := s.overrides(group).ConsumerHeartbeatInterval; d > 0 {
		return d
	}
	return s.cfg.ConsumerGroupHeartbeatInterval
}

func (s *shard) streamsSessionTimeout(group string) time.Duration {
	if d := s.overrides(group).StreamsSessionTimeout; d > 0 {
		return d
	}
	return s.cfg.StreamsGroupSessionTimeout
}

func (s *shard) streamsHeartbeatInterval(group string) time.Duration {
	if d := s.overrides(group).StreamsHeartbeatInterval; d > 0 {
		return d
	}
	return s.cfg.StreamsGroupHeartbeatInterval
}

func (s *shard) streamsNumStandbyReplicas(group string) int {
	if n := s.overrides(group).StreamsNumStandbyReplicas; n != nil {
		return *n
	}
	return s.cfg.StreamsGroupNumStandbyReplicas
}

func (s *shard) streamsInitialRebalanceDelay(group string) time.Duration {
	if d := s.overrides(group).StreamsInitialRebalanceDelay; d != nil {
		return *d
	}
	return s.cfg.StreamsGroupInitialRebalanceDelay
}
