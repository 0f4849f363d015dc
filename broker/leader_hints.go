package broker

// How clients find a partition's leader again after it moved.
//
// A Metadata answer that waits for a certain failover. When a partition's leader dies, its
// clients' connections break at the same instant as its followers' fetch connections, and a
// client such as franz-go asks for metadata at once, before the controller can have fenced the
// dead broker: the answer still names the dead leader, and the client's next refresh waits
// out its minimum metadata age (franz-go: 5 s). So a follower here notes a leader whose fetch
// connection failed (suspectLeader); a Metadata request that finds such a suspect still
// leading partitions in the image dials the suspect's listeners, and when every one refuses
// the connection (nothing listens: the process is gone) it waits, at most failoverWait, for
// the image in which the controller fenced it, and answers from that. A suspect whose
// listener accepts is cleared. This never changes what is answered, only when: the worst a
// wrong suspicion costs is one probe per request, and a refusal is a dead process.

import (
	"context"
	"errors"
	"net"
	"strconv"
	"sync"
	"syscall"
	"time"

	"sluice/controller"
)

const (
	// suspectWindow is how long after a failed fetch its leader stays suspect.
	suspectWindow = 10 * time.Second
	// failoverWait bounds how long a Metadata answer waits for a dead leader to be fenced:
	// on certain evidence the controller fences within milliseconds, or after a quorum
	// election when the dead broker was also the active controller.
	failoverWait = 3 * time.Second
	// suspectProbeTimeout bounds one dial of a suspect's listener; a timeout is no evidence.
	suspectProbeTimeout = 200 * time.Millisecond
	// maxSuspects bounds the table (one entry per broker this one follows).
	maxSuspects = 1024
)

// leaderSuspects are the leaders whose fetch connections failed recently, by broker ID.
type leaderSuspects struct {
	mu    sync.Mutex
	since map[int32]time.Time
}

// suspectLeader notes that fetching from leader id failed.
func (b *Broker) suspectLeader(id int32) {
	s := &b.leaderSuspects
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.since == nil {
		s.since = map[int32]time.Time{}
	}
	if _, ok := s.since[id]; !ok && len(s.since) >= maxSuspects {
		return
	}
	s.since[id] = time.Now()
}

func (s *leaderSuspects) recent() []int32 {
	s.mu.Lock()
	defer s.mu.Unlock()
	var ids []int32
	for id, at := range s.since {
		if time.Since(at) > suspectWindow {
			delete(s.since, id)
			continue
		}
		ids = append(ids, id)
	}
	return ids
}

func (s *leaderSuspects) clear(id int32) {
	s.mu.Lock()
	delete(s.since, id)
	s.mu.Unlock()
}

// awaitLeaderFailover returns the image a Metadata answer should be built from: im, or, when
// a suspect leader of partitions in im is certainly dead, the first image (within
// failoverWait) in which it is fenced or re-registered.
func (b *Broker) awaitLeaderFailover(ctx context.Context, im *controller.Image) *controller.Image {
	for _, id := range b.leaderSuspects.recent() {
		info := im.Brokers[id]
		if info == nil || info.Fenced || !leadsAny(im, id) {
			continue
		}
		if !listenersRefuse(info.Endpoints) {
			b.leaderSuspects.clear(id)
			continue
		}
		epoch := info.Epoch
		deadline := time.NewTimer(failoverWait)
		for gone := false; !gone; {
			select {
			case <-im.Changed():
				im = b.ctrl.Image()
				now := im.Brokers[id]
				gone = now == nil || now.Fenced || now.Epoch != epoch
			case <-deadline.C:
				gone = true
			case <-ctx.Done():
				deadline.Stop()
				return b.ctrl.Image()
			}
		}
		deadline.Stop()
	}
	return im
}

// leadsAny reports whether broker id leads a partition in im.
func leadsAny(im *controller.Image, id int32) bool {
	for _, t := range im.Topics {
		for i := range t.Partitions {
			if t.Partitions[i].Leader == id {
				return true
			}
		}
	}
	return false
}

// listenersRefuse reports whether every endpoint refuses a connection (ECONNREFUSED).
func listenersRefuse(eps []controller.Endpoint) bool {
	if len(eps) == 0 {
		return false
	}
	for _, e := range eps {
		conn, err := net.DialTimeout("tcp", net.JoinHostPort(e.Host, strconv.Itoa(int(e.Port))), suspectProbeTimeout)
		if err == nil {
			conn.Close()
			return false
		}
		if !errors.Is(err, syscall.ECONNREFUSED) {
			return false
		}
	}
	return true
}
