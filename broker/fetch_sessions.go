package broker

// Fetch sessions (KIP-227): a consumer that fetches the same partitions again and again names
// only what changed, and the broker answers only partitions with news. Semantics as Kafka's
// FetchSession:
//   - SessionID 0, epoch -1: a full fetch without a session.
//   - epoch 0 (any SessionID): a full fetch that (closing the named session, if any) opens a new
//     session holding the request's partitions; the response carries the new SessionID, or 0
//     when the cache has no room.
//   - SessionID s, epoch -1: closes s, then a full fetch without a session.
//   - SessionID s, epoch n > 0: incremental; s must exist (FETCH_SESSION_ID_NOT_FOUND) and n
//     must be its expected epoch (INVALID_FETCH_SESSION_EPOCH). Request partitions are added or
//     updated, forgotten topics removed, and the response holds only partitions that have
//     records or an error, or whose high watermark, last stable offset or log start offset
//     changed since last sent.

import (
	"math/rand/v2"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"sluice/controller"
)

// fetchTarget is one partition a fetch reads, with the client's position.
type fetchTarget struct {
	topic              string
	topicID            controller.TopicID
	partition          int32
	fetchOffset        int64
	maxBytes           int32
	currentLeaderEpoch int32
	// lastFetchedEpoch is the epoch of the last batch the fetcher has (v12+, -1 none): a
	// follower whose epoch diverges from the leader's log is answered with DivergingEpoch.
	lastFetchedEpoch int32
	// logStartOffset is the fetcher's log start (v5+, -1 before): a follower's feeds the
	// leader's low watermark (DeleteRecords).
	logStartOffset int64

	// last* are what the session last sent for this partition (-1 before the first time).
	lastHighWatermark, lastStableOffset, lastLogStart int64
}

type sessionKey struct {
	topic     string
	topicID   controller.TopicID
	partition int32
}

type fetchSession struct {
	id int32
	mu struct {
		sync.Mutex
		epoch    int32 // the epoch the next incremental request must carry
		targets  []*fetchTarget
		byKey    map[sessionKey]*fetchTarget
		lastUsed time.Time
	}
}

// fetchSessionCache holds at most max.incremental.fetch.session.cache.slots sessions (Kafka's
// default 1000); the least recently used session is evicted when it is full, and with 0 slots
// no session is ever created (every fetch is a full one).
type fetchSessionCache struct {
	slots    int
	mu       sync.Mutex
	sessions map[int32]*fetchSession // Guarded by mu.
}

func newFetchSessionCache(slots int) *fetchSessionCache {
	return &fetchSessionCache{slots: slots, sessions: make(map[int32]*fetchSession)}
}

func (c *fetchSessionCache) get(id int32) *fetchSession {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.sessions[id]
}

func (c *fetchSessionCache) remove(id int32) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.sessions, id)
}

// create opens a session over targets, evicting the least recently used session when full. It
// returns nil when the cache has no slots at all.
func (c *fetchSessionCache) create(version int16, targets []*fetchTarget) *fetchSession {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.slots <= 0 {
		return nil
	}
	if len(c.sessions) >= c.slots {
		var oldest *fetchSession
		var oldestUse time.Time
		for _, s := range c.sessions {
			s.mu.Lock()
			used := s.mu.lastUsed
			s.mu.Unlock()
			if oldest == nil || used.Before(oldestUse) {
				oldest, oldestUse = s, used
			}
		}
		delete(c.sessions, oldest.id)
	}
	// Random IDs, as Kafka's FetchSessionCache uses: a client still holding a session ID from
	// before a broker restart must not find (and corrupt) another client's new session.
	id := rand.Int32()
	for id == 0 || c.sessions[id] != nil {
		id = rand.Int32()
	}
	s := &fetchSession{id: id}
	s.mu.epoch = 1
	s.mu.lastUsed = time.Now()
	s.mu.byKey = make(map[sessionKey]*fetchTarget, len(targets))
	for _, t := range targets {
		s.mu.targets = append(s.mu.targets, t)
		s.mu.byKey[t.sessionKey(version)] = t
	}
	c.sessions[s.id] = s
	return s
}

// targetsFromRequest lists the request's partitions as fetch targets.
func targetsFromRequest(req *kmsg.FetchRequest, im *controller.Image) []*fetchTarget {
	var out []*fetchTarget
	for _, rt := range req.Topics {
		name := rt.Topic
		if req.Version >= 13 {
			if topic := im.TopicsByID[controller.TopicID(rt.TopicID)]; topic != nil {
				name = topic.Name
			}
		}
		for _, rp := range rt.Partitions {
			out = append(out, &fetchTarget{
				topic: name, topicID: controller.TopicID(rt.TopicID), partition: rp.Partition,
				fetchOffset: rp.FetchOffset, maxBytes: rp.PartitionMaxBytes, currentLeaderEpoch: rp.CurrentLeaderEpoch,
				lastFetchedEpoch:  lastFetchedEpoch(req.Version, rp.LastFetchedEpoch),
				logStartOffset:    requestLogStart(req.Version, rp.LogStartOffset),
				lastHighWatermark: -1, lastStableOffset: -1, lastLogStart: -1,
			})
		}
	}
	return out
}

// lastFetchedEpoch is a request partition's LastFetchedEpoch, -1 before v12 (no such field).
func lastFetchedEpoch(version int16, epoch int32) int32 {
	if version < 12 {
		return -1
	}
	return epoch
}

// requestLogStart is a request partition's LogStartOffset, -1 before v5 (no such field).
func requestLogStart(version int16, logStart int64) int64 {
	if version < 5 {
		return -1
	}
	return logStart
}

// sessionKeyFor keys a partition by topic ID from v13 on and by name before, the way the
// request names it.
func sessionKeyFor(version int16, name string, id [16]byte, partition int32) sessionKey {
	if version >= 13 {
		return sessionKey{topicID: controller.TopicID(id), partition: partition}
	}
	return sessionKey{topic: name, partition: partition}
}

func (t *fetchTarget) sessionKey(version int16) sessionKey {
	return sessionKeyFor(version, t.topic, t.topicID, t.partition)
}

// updateIncremental applies an incremental request to the session.
// REQUIRES: s.mu held.
func (s *fetchSession) updateIncrementalLocked(req *kmsg.FetchRequest, im *controller.Image) {
	for _, t := range targetsFromRequest(req, im) {
		key := t.sessionKey(req.Version)
		if existing := s.mu.byKey[key]; existing != nil {
			existing.fetchOffset, existing.maxBytes, existing.currentLeaderEpoch = t.fetchOffset, t.maxBytes, t.currentLeaderEpoch
			existing.lastFetchedEpoch, existing.logStartOffset = t.lastFetchedEpoch, t.logStartOffset
			continue
		}
		s.mu.byKey[key] = t
		s.mu.targets = append(s.mu.targets, t)
	}
	for _, ft := range req.ForgottenTopics {
		for _, partition := range ft.Partitions {
			key := sessionKeyFor(req.Version, ft.Topic, ft.TopicID, partition)
			if t := s.mu.byKey[key]; t != nil {
				delete(s.mu.byKey, key)
				for i, x := range s.mu.targets {
					if x == t {
						s.mu.targets = append(s.mu.targets[:i], s.mu.targets[i+1:]...)
						break
					}
				}
			}
		}
	}
}

// openSession resolves the request's session semantics. It returns the targets to read, the
// session that tracks them (nil when sessionless), the SessionID to answer with, and a
// top-level error code.
func (b *Broker) openSession(req *kmsg.FetchRequest, im *controller.Image) (targets []*fetchTarget, s *fetchSession, respSessionID int32, errCode int16) {
	if req.Version < 7 {
		return targetsFromRequest(req, im), nil, 0, 0
	}
	switch {
	case req.SessionEpoch == -1:
		if req.SessionID != 0 {
			b.fetchSessions.remove(req.SessionID)
		}
		return targetsFromRequest(req, im), nil, 0, 0
	case req.SessionEpoch == 0:
		if req.SessionID != 0 {
			b.fetchSessions.remove(req.SessionID)
		}
		targets = targetsFromRequest(req, im)
		if s = b.fetchSessions.create(req.Version, targets); s == nil {
			return targets, nil, 0, 0
		}
		return targets, s, s.id, 0
	}
	s = b.fetchSessions.get(req.SessionID)
	if s == nil {
		return nil, nil, 0, kerr.FetchSessionIDNotFound.Code
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if req.SessionEpoch != s.mu.epoch {
		return nil, nil, 0, kerr.InvalidFetchSessionEpoch.Code
	}
	s.mu.epoch++
	if s.mu.epoch <= 0 {
		s.mu.epoch = 1
	}
	s.mu.lastUsed = time.Now()
	s.updateIncrementalLocked(req, im)
	return append([]*fetchTarget(nil), s.mu.targets...), s, s.id, 0
}

// rotateServedLocked moves the session's partitions that just returned records to the end of
// its order, as Kafka's fetch sessions do, so that when the response byte limit cuts a fetch
// short the partitions left out get served first next time instead of starving.
// REQUIRES: s.mu held.
func (s *fetchSession) rotateServedLocked(targets []*fetchTarget, results []fetchResult) {
	served := make(map[*fetchTarget]bool)
	for i, t := range targets {
		if len(results[i].records) > 0 {
			served[t] = true
		}
	}
	if len(served) == 0 {
		return
	}
	order := make([]*fetchTarget, 0, len(s.mu.targets))
	for _, t := range s.mu.targets {
		if !served[t] {
			order = append(order, t)
		}
	}
	for _, t := range s.mu.targets {
		if served[t] {
			order = append(order, t)
		}
	}
	s.mu.targets = order
}
