package broker

// Telling the controller which log directory holds each replica (AssignReplicasToDirs,
// controller/log_dirs.go), so that when some of this broker's directories fail it moves only
// their replicas' leadership. Only a broker with several log directories sends them, and only
// to a Metadata that carries them to the controller (cluster.Link).

import (
	"context"
	"sync"
	"time"

	"sluice/controller"
)

// replicaDirAssigner is the Metadata of a broker that reports its replicas' directories to the
// controller (cluster.Link).
type replicaDirAssigner interface {
	AssignReplicaDirs(ctx context.Context, items []controller.ReplicaDirAssignment) ([]error, error)
}

// dirAssignments are the assignments not yet acknowledged by the controller. Its lock is a
// leaf.
type dirAssignments struct {
	mu struct {
		sync.Mutex
		// pending holds the newest directory of each replica still to send. Bounded by the
		// replicas hosted here.
		pending map[topicPartition]controller.ReplicaDirAssignment
	}
	wake chan struct{} // capacity 1
}

// maxAssignBatch bounds one AssignReplicasToDirs request.
const maxAssignBatch = 1000

// assignDirRetry is how long a failed AssignReplicasToDirs waits before it is sent again.
const assignDirRetry = time.Second

// queueDirAssignment records that tp's replica (of topic id) lives in log directory i.
func (b *Broker) queueDirAssignment(tp topicPartition, id controller.TopicID, i int) {
	if len(b.dirs) < 2 {
		return
	}
	if _, ok := b.ctrl.(replicaDirAssigner); !ok {
		return
	}
	a := &b.dirAssign
	a.mu.Lock()
	if a.mu.pending == nil {
		a.mu.pending = make(map[topicPartition]controller.ReplicaDirAssignment)
	}
	a.mu.pending[tp] = controller.ReplicaDirAssignment{TopicID: id, Partition: tp.partition, Dir: b.dirs[i].id}
	a.mu.Unlock()
	select {
	case a.wake <- struct{}{}:
	default:
	}
}

// dirAssignLoop sends the queued assignments until the broker closes.
func (b *Broker) dirAssignLoop() {
	defer b.done.Done()
	sender, ok := b.ctrl.(replicaDirAssigner)
	if !ok {
		return
	}
	a := &b.dirAssign
	for {
		select {
		case <-b.closing:
			return
		case <-a.wake:
		}
		for {
			a.mu.Lock()
			batch := make(map[topicPartition]controller.ReplicaDirAssignment, min(len(a.mu.pending), maxAssignBatch))
			for tp, it := range a.mu.pending {
				if len(batch) == maxAssignBatch {
					break
				}
				batch[tp] = it
			}
			a.mu.Unlock()
			if len(batch) == 0 {
				break
			}
			tps := make([]topicPartition, 0, len(batch))
			items := make([]controller.ReplicaDirAssignment, 0, len(batch))
			for tp, it := range batch {
				tps = append(tps, tp)
				items = append(items, it)
			}
			ctx, cancel := b.closingContext(30 * time.Second)
			_, err := sender.AssignReplicaDirs(ctx, items)
			cancel()
			if err != nil {
				b.logger.Debug("telling the controller the log directories of replicas; retrying", "replicas", len(items), "err", err)
				t := time.NewTimer(assignDirRetry)
				select {
				case <-b.closing:
					t.Stop()
					return
				case <-t.C:
				}
				continue
			}
			// Per-item errors (a topic deleted meanwhile) are final. An assignment that
			// changed while this one was in flight stays queued.
			a.mu.Lock()
			for i, tp := range tps {
				if a.mu.pending[tp] == items[i] {
					delete(a.mu.pending, tp)
				}
			}
			a.mu.Unlock()
		}
	}
}
