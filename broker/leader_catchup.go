package broker

// A client that names a newer leader epoch than this broker has applied. When leadership
// moves (a controlled shutdown, a fencing), the old leader answers its clients
// NOT_LEADER_OR_FOLLOWER with the new leader and epoch (KIP-951) as soon as its own image has
// the change, and the client goes to the new leader at once — often before the new leader's
// broker applied the same committed metadata (it learns of the commit a raft round trip later,
// and the old leader may be the active controller itself). Answering such a client
// NOT_LEADER_OR_FOLLOWER or UNKNOWN_LEADER_EPOCH is correct but costly: franz-go waits a full
// second before it asks again after a failed OffsetForLeaderEpoch. So a request whose current
// leader epoch is above the one this broker applied for the partition waits, at most
// leaderCatchUpWait, for the image that has it (as applied by reconcile, so the replica already
// leads), and is answered from there. This changes when, never what, is answered: the answer
// is the one this broker gives once its metadata caught up, or the same error as before.

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// leaderCatchUpWait bounds how long a request naming a newer leader epoch waits for this
// broker's metadata: a committed change reaches every voter and observer within a raft round
// trip and a reconcile, far less than this on a healthy cluster.
var leaderCatchUpWait = 500 * time.Millisecond // a variable for tests

// leaderEpochWaits counts the requests that waited for this process's metadata to reach a
// client's leader epoch (every broker of the process; tests look at it).
var leaderEpochWaits atomic.Int64

// behindClient reports whether a partition answer code (NOT_LEADER_OR_FOLLOWER or
// UNKNOWN_LEADER_EPOCH) may be only this broker's metadata lagging the client's: the client
// names leader epoch clientEpoch, above the one in the image reconcile applied last.
func (b *Broker) behindClient(code int16, topic string, partition, clientEpoch int32) bool {
	if clientEpoch < 0 || (code != kerr.NotLeaderForPartition.Code && code != kerr.UnknownLeaderEpoch.Code) {
		return false
	}
	b.mu.RLock()
	im := b.mu.appliedImage
	b.mu.RUnlock()
	if im == nil {
		return true
	}
	t := im.Topics[topic]
	if t == nil || partition < 0 || int(partition) >= len(t.Partitions) {
		return true // a topic created after this broker's image: it is behind too
	}
	return t.Partitions[partition].LeaderEpoch < clientEpoch
}

// awaitAppliedImage waits until reconcile applied an image newer than the one current when
// it was called, or until deadline, ctx or Close; it reports whether a newer image came.
func (b *Broker) awaitAppliedImage(ctx context.Context, deadline <-chan time.Time) bool {
	b.mu.RLock()
	changed := b.mu.appliedChanged
	b.mu.RUnlock()
	select {
	case <-changed:
		return true
	case <-deadline:
	case <-ctx.Done():
	case <-b.closing:
	}
	return false
}
