package share

import (
	"github.com/twmb/franz-go/pkg/kerr"
)

// Share session epochs, as ShareFetch and ShareAcknowledge carry them.
const (
	// InitialEpoch opens a session (replacing the member's old one).
	InitialEpoch int32 = 0
	// FinalEpoch closes the member's session.
	FinalEpoch int32 = -1
)

// nextEpoch follows Kafka's ShareRequestMetadata.nextEpoch: +1, and after
// MaxInt32 back to 1 (0 and -1 are reserved).
func nextEpoch(epoch int32) int32 {
	if epoch < 0 || epoch == 1<<31-1 {
		return 1
	}
	return epoch + 1
}

// TopicIDPartition names a partition by topic ID, as the share APIs do.
type TopicIDPartition struct {
	TopicID   [16]byte
	Partition int32
}

// SessionKey is a share session's identity: one per group member.
type SessionKey struct {
	Group, Member string
}

// Session is one member's share session: the partitions its fetches name
// (requests send only changes to them) and the epoch the next request must
// carry.
type Session struct {
	// Epoch is the epoch the next request must carry.
	Epoch int32
	// Partitions is the session's partitions in the order they were added.
	Partitions []TopicIDPartition
	present    map[TopicIDPartition]bool
}

func (s *Session) add(tps []TopicIDPartition) {
	for _, tp := range tps {
		if !s.present[tp] {
			s.present[tp] = true
			s.Partitions = append(s.Partitions, tp)
		}
	}
}

func (s *Session) forget(tps []TopicIDPartition) {
	if len(tps) == 0 {
		return
	}
	for _, tp := range tps {
		delete(s.present, tp)
	}
	kept := s.Partitions[:0]
	for _, tp := range s.Partitions {
		if s.present[tp] {
			kept = append(kept, tp)
		}
	}
	s.Partitions = kept
}

// Has reports whether tp is in the session.
func (s *Session) Has(tp TopicIDPartition) bool { return s.present[tp] }

// Sessions is a broker's share session cache (Kafka's ShareSessionCache),
// bounded by group.share.max.share.sessions. Not safe for concurrent use.
type Sessions struct {
	max int
	// sessions is bounded by max.
	sessions map[SessionKey]*Session
}

// NewSessions makes a cache holding at most max sessions.
func NewSessions(max int) *Sessions {
	return &Sessions{max: max, sessions: make(map[SessionKey]*Session)}
}

// Len is the number of open sessions.
func (c *Sessions) Len() int { return len(c.sessions) }

// Get returns key's session, or nil.
func (c *Sessions) Get(key SessionKey) *Session { return c.sessions[key] }

// Remove drops key's session and returns it (nil if there was none).
func (c *Sessions) Remove(key SessionKey) *Session {
	s := c.sessions[key]
	delete(c.sessions, key)
	return s
}

// RemoveMember drops every session of member in group (the member left the
// group) and returns them.
func (c *Sessions) RemoveMember(group, member string) *Session {
	return c.Remove(SessionKey{group, member})
}

// FetchOutcome is what a ShareFetch request does to its session.
type FetchOutcome struct {
	// Code is 0, or the top-level error to answer (nothing else happens).
	Code int16
	// Session is the session after the request (for Final, the closed one:
	// the caller releases the member's records on its partitions).
	Session *Session
	// Replaced is the member's previous session an InitialEpoch request
	// replaced, if any (its partitions' records are released).
	Replaced *Session
	// Final is set when the request closed the session.
	Final bool
}

// Fetch applies a ShareFetch request's session part, as Kafka's
// SharePartitionManager.newContext does: add holds the partitions the
// request names (with a non-zero byte budget in v0), forget its forgotten
// topics, hasAcks whether it carries acknowledgements.
//
//	FinalEpoch:    no partitions may be named (INVALID_REQUEST); the session
//	               must exist (SHARE_SESSION_NOT_FOUND); it closes.
//	InitialEpoch:  no acknowledgements (INVALID_REQUEST); a new session with
//	               the named partitions replaces the member's old one;
//	               SHARE_SESSION_LIMIT_REACHED when the cache is full.
//	other:         the session must exist (SHARE_SESSION_NOT_FOUND) and expect
//	               this epoch (INVALID_SHARE_SESSION_EPOCH); partitions are
//	               added and forgotten, the epoch moves on.
func (c *Sessions) Fetch(key SessionKey, epoch int32, add, forget []TopicIDPartition, hasAcks bool) FetchOutcome {
	switch {
	case epoch == FinalEpoch:
		if len(add) > 0 {
			return FetchOutcome{Code: kerr.InvalidRequest.Code}
		}
		s := c.sessions[key]
		if s == nil {
			return FetchOutcome{Code: kerr.ShareSessionNotFound.Code}
		}
		delete(c.sessions, key)
		return FetchOutcome{Session: s, Final: true}
	case epoch == InitialEpoch:
		if hasAcks {
			return FetchOutcome{Code: kerr.InvalidRequest.Code}
		}
		old := c.sessions[key]
		if old == nil && len(c.sessions) >= c.max {
			return FetchOutcome{Code: kerr.ShareSessionLimitReached.Code}
		}
		s := &Session{Epoch: nextEpoch(InitialEpoch), present: make(map[TopicIDPartition]bool)}
		s.add(add)
		c.sessions[key] = s
		return FetchOutcome{Session: s, Replaced: old}
	case epoch < FinalEpoch:
		return FetchOutcome{Code: kerr.InvalidShareSessionEpoch.Code}
	default:
		s := c.sessions[key]
		if s == nil {
			return FetchOutcome{Code: kerr.ShareSessionNotFound.Code}
		}
		if s.Epoch != epoch {
			return FetchOutcome{Code: kerr.InvalidShareSessionEpoch.Code}
		}
		s.add(add)
		s.forget(forget)
		s.Epoch = nextEpoch(s.Epoch)
		return FetchOutcome{Session: s}
	}
}

// Acknowledge applies a ShareAcknowledge request's session part, as Kafka's
// acknowledgeSessionUpdate does: InitialEpoch is INVALID_SHARE_SESSION_EPOCH,
// a missing session SHARE_SESSION_NOT_FOUND, FinalEpoch closes the session
// (after the acknowledgements are applied), any other epoch must be the
// expected one (INVALID_SHARE_SESSION_EPOCH) and moves it on.
func (c *Sessions) Acknowledge(key SessionKey, epoch int32) FetchOutcome {
	if epoch == InitialEpoch || epoch < FinalEpoch {
		return FetchOutcome{Code: kerr.InvalidShareSessionEpoch.Code}
	}
	s := c.sessions[key]
	if s == nil {
		return FetchOutcome{Code: kerr.ShareSessionNotFound.Code}
	}
	if epoch == FinalEpoch {
		delete(c.sessions, key)
		return FetchOutcome{Session: s, Final: true}
	}
	if s.Epoch != epoch {
		return FetchOutcome{Code: kerr.InvalidShareSessionEpoch.Code}
	}
	s.Epoch = nextEpoch(s.Epoch)
	return FetchOutcome{Session: s}
}
