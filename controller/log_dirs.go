package controller

// Log directories of brokers with several (JBOD, KIP-858).
//
// A broker registers the IDs of its log directories (BrokerRegistration's LogDirs,
// BrokerInfo.LogDirs) and tells the controller which directory holds each of its replicas
// (AssignReplicasToDirs, ReplicaDirsRecord, PartitionInfo.Directories), as Kafka's brokers do.
// When its heartbeat reports some but not all of its registered directories offline, only the
// replicas in those directories stop counting: the broker is taken out of the leadership and
// ISR of those partitions (their other in-sync replicas lead), and is not elected for them or
// accepted back into their ISR while the directory stays offline (replicaActive), as Kafka's
// handleDirectoriesOffline does; its partitions in other directories keep their leaders. A
// report that names every registered directory, or one from a broker with a single (or
// unregistered) directory, takes the whole broker out as before (BrokerInfo.LogDirOffline,
// membership.go). A replica whose directory is not known yet is treated as online.

import (
	"context"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
)

// ReplicaDirsRecord says that log directory Dir of broker BrokerID holds its replicas of
// Partitions (Kafka's PartitionChangeRecord Directories, from AssignReplicasToDirs).
type ReplicaDirsRecord struct {
	BrokerID    int32            `json:"broker_id"`
	BrokerEpoch int64            `json:"broker_epoch"`
	Dir         [16]byte         `json:"dir"`
	Partitions  []ReplicaDirPart `json:"partitions"`
}

// ReplicaDirPart is one partition of a ReplicaDirsRecord.
type ReplicaDirPart struct {
	TopicID   TopicID `json:"topic_id"`
	Partition int32   `json:"partition"`
}

func (*ReplicaDirsRecord) Type() RecordType { return RecordReplicaDirs }

// replicaActive reports whether replica r of p may lead it and be in its ISR: its broker is
// active and the log directory holding r's replica (when known) is not reported offline.
func (w *Image) replicaActive(p *PartitionInfo, r int32) bool {
	b := w.Brokers[r]
	return b.active() && !replicaDirOffline(b, p, r)
}

// replicaDirOffline reports whether the directory of b's replica of p is one b reports
// offline.
func replicaDirOffline(b *BrokerInfo, p *PartitionInfo, r int32) bool {
	if b == nil || len(b.OfflineLogDirs) == 0 || p.Directories == nil {
		return false
	}
	dir, ok := p.Directories[r]
	return ok && slices.Contains(b.OfflineLogDirs, dir)
}

// partialDirsOffline reports whether dirs (a heartbeat's OfflineLogDirs, non-empty) names
// some but not all of b's registered log directories, and only registered ones.
func partialDirsOffline(b *BrokerInfo, dirs [][16]byte) bool {
	if len(b.LogDirs) < 2 {
		return false
	}
	for _, d := range dirs {
		if !slices.Contains(b.LogDirs, d) {
			return false
		}
	}
	for _, d := range b.LogDirs {
		if !slices.Contains(dirs, d) {
			return true
		}
	}
	return false
}

// sameDirSet reports whether a and b hold the same directory IDs.
func sameDirSet(a, b [][16]byte) bool {
	if len(a) != len(b) {
		return false
	}
	for _, d := range a {
		if !slices.Contains(b, d) {
			return false
		}
	}
	return true
}

// logDirStateRecords are the records that set broker id's offline directories to dirs (some
// of its registered ones; none: all online) and make the partition changes that follow: out
// of the leadership and ISR of the partitions in a directory now offline, elected in the
// leaderless partitions it may lead again. The broker's whole-broker LogDirOffline is cleared.
func logDirStateRecords(w *Image, id int32, dirs [][16]byte) []Record {
	b := w.Brokers[id]
	set := slices.Clone(dirs)
	if set == nil {
		set = [][16]byte{}
	}
	change := &BrokerChangeRecord{BrokerID: id, BrokerEpoch: b.Epoch, LogDirOffline: ptr(false), OfflineLogDirs: &set}
	next, err := applyRecords(w, w.Offset, []Record{change})
	if err != nil {
		return nil
	}
	recs := []Record{change}
	return partitionChanges(recs, next, id, func(w *Image, topic TopicID, p *PartitionInfo, id int32) *PartitionChangeRecord {
		if !w.replicaActive(p, id) {
			return removeReplicaChange(w, topic, p, id)
		}
		if p.Leader != -1 {
			return nil
		}
		rec := buildChange(w, topic, p, currentTarget(p), changeOptions{election: topicElection(w, topic),
			acceptable: func(r int32) bool { return w.replicaActive(p, r) }})
		if rec == nil || rec.Leader == -1 {
			return nil
		}
		return rec
	})
}

// ReplicaDirAssignment is one replica's log directory, as a broker reports it
// (AssignReplicasToDirs).
type ReplicaDirAssignment struct {
	TopicID   TopicID
	Partition int32
	Dir       [16]byte
}

// AssignReplicaDirs records which log directory of broker brokerID holds each listed replica
// (AssignReplicasToDirs, API 73). It returns one error per item (nil: recorded, or already so):
// UNKNOWN_TOPIC_ID for a topic that does not exist, NOT_LEADER_OR_FOLLOWER for a partition
// the broker has no replica of; STALE_BROKER_EPOCH for all when the epoch is not the
// broker's registered one.
func (c *Controller) AssignReplicaDirs(ctx context.Context, brokerID int32, brokerEpoch int64, items []ReplicaDirAssignment) ([]error, error) {
	out := make([]error, len(items))
	req := &request{plan: func(w *Image) []Record {
		clear(out)
		b := w.Brokers[brokerID]
		if b == nil || b.Epoch != brokerEpoch {
			for i := range out {
				out[i] = kerr.StaleBrokerEpoch
			}
			return nil
		}
		byDir := map[[16]byte]*ReplicaDirsRecord{}
		var order [][16]byte
		for i, it := range items {
			t := w.TopicsByID[it.TopicID]
			if t == nil {
				out[i] = kerr.UnknownTopicID
				continue
			}
			if it.Partition < 0 || int(it.Partition) >= len(t.Partitions) || !slices.Contains(t.Partitions[it.Partition].Replicas, brokerID) {
				out[i] = kerr.NotLeaderForPartition
				continue
			}
			if cur, ok := t.Partitions[it.Partition].Directories[brokerID]; ok && cur == it.Dir {
				continue
			}
			rec := byDir[it.Dir]
			if rec == nil {
				rec = &ReplicaDirsRecord{BrokerID: brokerID, BrokerEpoch: brokerEpoch, Dir: it.Dir}
				byDir[it.Dir] = rec
				order = append(order, it.Dir)
			}
			rec.Partitions = append(rec.Partitions, ReplicaDirPart{it.TopicID, it.Partition})
		}
		var recs []Record
		for _, d := range order {
			recs = append(recs, byDir[d])
		}
		// A replica moved out of (or created outside) an offline directory may lead again;
		// one moved into it may not: the same changes as a directory report.
		if b.active() && len(b.OfflineLogDirs) > 0 && len(recs) > 0 {
			if next, err := applyRecords(w, w.Offset, recs); err == nil {
				more := logDirStateRecords(next, brokerID, b.OfflineLogDirs)
				if len(more) > 1 {
					recs = append(recs, more[1:]...)
				}
			}
		}
		return recs
	}}
	if err := c.submit(ctx, req); err != nil {
		return nil, codeOf(err)
	}
	return out, nil
}
