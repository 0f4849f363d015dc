package broker

// Fetch, key 1: v0–v18.
//
// v0–v3 are the versions of consumers that cannot read RecordBatch v2, served as Kafka 3.x
// served them though Kafka 4 refuses them (KIP-896): the records read are converted down to
// magic 0 (v0–v1) or magic 1 (v2–v3) in memory, bounded by what was read
// (legacy_records.go, as Kafka's LazyDownConversionRecords), without transaction markers or
// record headers, and the response is encoded by kmsg rather than spliced. v3 adds the
// response's MaxBytes.
//
// v4 adds isolation level: read_committed reads stop at the last stable offset (the first
// offset of an open transaction, or the HW) and list the aborted transactions overlapping the
// records returned, from the segments' .txnindex files, as Kafka's collectAbortedTxns; v7 fetch sessions (fetch_sessions.go), v9
// the client's current leader epoch (FENCED_LEADER_EPOCH / UNKNOWN_LEADER_EPOCH), v13 topic IDs.
// Consumers never see offsets at or past the high watermark. The first batch of the first
// partition with data is returned whole even when it exceeds MaxBytes or PartitionMaxBytes, as
// Kafka does, so a consumer can always make progress. When less than MinBytes is ready the fetch
// is held in the purgatory (delayed_fetch.go), keyed by its partitions, and answers when their
// offsets change enough or after MaxWaitMillis at the latest.
//
// Record bytes go from the segment files to the socket with sendfile (fetch_encode.go).
//
// v12 adds LastFetchedEpoch: a fetch whose last fetched epoch the leader's log does not hold
// up to the fetch offset is answered with DivergingEpoch (KIP-320) and no records, for
// consumers and followers alike, as Kafka's Partition.fetchRecords does. v15 moves the
// follower's ID into ReplicaState with its broker epoch (KIP-903). v12+: a partition answered
// NOT_LEADER_OR_FOLLOWER or FENCED_LEADER_EPOCH carries its current leader, v16+ with the
// leaders' endpoints (KIP-951, leader_hints.go).
//
// v17 adds the follower's directory ID and v18 its known high watermark (KIP-853, KIP-1166),
// both tagged fields for KRaft voters fetching the metadata log; a broker's Fetch ignores them,
// as Kafka's ReplicaManager does, and the response of v17 and v18 is v16's.
//
// A fetch with a replica ID >= 0 is a follower's (follower_fetch.go): it reads up to the log
// end, not the HW, and its fetch offset is the follower's log end, which moves the HW.
//
// v11 adds the client's rack (KIP-392, follower_reads.go): a consumer's v11+ fetch may be
// served by a follower, up to the follower's HW, and a leader with replica.selector.class set
// answers PreferredReadReplica, without records and at once, when an in-sync follower is in
// the consumer's rack.

import (
	"context"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"sluice/authz"
	"sluice/controller"
	"sluice/logstore"
	"sluice/wire"
)

func init() { register(1, 0, 18, (*Broker).handleFetch) }

// maxFetchWait bounds MaxWaitMillis so a parked fetch always answers.
const maxFetchWait = 5 * time.Minute

func (b *Broker) handleFetch(ctx context.Context, wreq *wire.Request, respond wire.Respond) {
	req, ok := wreq.Body.(*kmsg.FetchRequest)
	if !ok {
		respond(nil, errUnexpectedBody)
		return
	}
	respond = b.withFetchLeaderHints(wreq, respond) // KIP-951 (leader_hints.go)
	im := b.ctrl.Image()
	targets, session, sessionID, errCode := b.openSession(req, im)
	if errCode != 0 {
		resp := req.ResponseKind().(*kmsg.FetchResponse)
		resp.ErrorCode = errCode
		respond(resp, nil)
		return
	}
	incremental := req.Version >= 7 && req.SessionEpoch > 0
	denied, clusterDenied := b.fetchDenied(wreq.Conn, req, im, targets)
	if clusterDenied {
		resp := req.ResponseKind().(*kmsg.FetchResponse)
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
		respond(resp, nil)
		return
	}

	listener := ""
	if wreq.Conn != nil {
		listener = wreq.Conn.ListenerName
	}
	results, readBytes, anyError := b.readTargets(req, listener, im, targets, denied)
	wait := time.Duration(req.MaxWaitMillis) * time.Millisecond
	if readBytes >= int64(req.MinBytes) || wait <= 0 || anyError || len(targets) == 0 {
		respond(b.fetchResponse(req, sessionID, session, incremental, targets, results), nil)
		return
	}

	// Held until enough data arrives on a target partition or the wait is over.
	b.parkFetch(&delayedFetch{
		b: b, ctx: ctx, req: req, listener: listener, targets: targets, denied: denied, session: session, sessionID: sessionID,
		incremental: incremental, respond: respond,
	}, min(wait, maxFetchWait))
}

// fetchResult is one partition's read.
type fetchResult struct {
	errCode                                         int16
	highWatermark, lastStableOffset, logStartOffset int64
	// diverging, when set, is the leader's end of the fetcher's last fetched epoch: the
	// fetcher must truncate there (KIP-320); no records come with it.
	diverging *kmsg.FetchResponseTopicPartitionDivergingEpoch
	// records are whole batches in segment files, sent with sendfile.
	records []logstore.FileSlice
	// aborted are the aborted transactions overlapping records (read_committed only).
	aborted []logstore.AbortedTxn
	// part is the partition read (nil when the read failed), whose counters count what is sent.
	part *Partition
	// preferredReadReplica, when >= 0, is the follower the consumer should fetch from instead
	// (KIP-392, follower_reads.go); no records come with it.
	preferredReadReplica int32
}

// readTargets reads every target within the request's byte limits. anyError is set when the
// fetch must not wait for more data: a partition has an error, a divergence or (KIP-392) a
// preferred read replica to report. listener is the one the fetch arrived on.
// denied are the targets the fetcher may not READ (authorize.go), answered
// TOPIC_AUTHORIZATION_FAILED.
func (b *Broker) readTargets(req *kmsg.FetchRequest, listener string, im *controller.Image, targets []*fetchTarget, denied map[*fetchTarget]bool) (results []fetchResult, total int64, anyError bool) {
	results = make([]fetchResult, len(targets))
	maxBytes := int64(req.MaxBytes)
	if req.Version < 3 || maxBytes <= 0 {
		maxBytes = 1<<31 - 1
	}
	// fetch.max.bytes caps what any one fetch may ask for, as Kafka's KafkaApis does.
	maxBytes = min(maxBytes, int64(b.cfg.Static.FetchMaxBytes))
	follower := followerOf(req)
	anyReplica := consumerMayReadFollower(req, follower)
	rackAware := anyReplica && req.Rack != "" && b.rackAwareReads()
	for i, t := range targets {
		r := &results[i]
		r.highWatermark, r.lastStableOffset, r.logStartOffset = -1, -1, -1
		r.preferredReadReplica = -1
		if denied[t] {
			r.errCode, anyError = kerr.TopicAuthorizationFailed.Code, true
			continue
		}
		rs := b.resolvePartition(im, t.topic, t.topicID, req.Version >= 13, t.partition, !anyReplica)
		if rs.errCode != 0 {
			r.errCode = rs.errCode
			anyError = true
			continue
		}
		p := rs.partition
		// One snapshot: the HW, LSO and log start the response reports are of one instant.
		s := p.replica.Snapshot()
		if code := checkLeaderEpoch(t.currentLeaderEpoch, s.LeaderEpoch); code != 0 {
			r.errCode = code
			anyError = true
			continue
		}
		if !s.Leader && anyReplica && !b.servesFollowerReads(p) {
			r.errCode = kerr.NotLeaderForPartition.Code // no role applied yet
			anyError = true
			continue
		}
		if rackAware && s.Leader {
			if id := b.preferredReadReplica(im, listener, p, req.Rack, t.fetchOffset); id >= 0 {
				// KIP-392: no read here; the consumer goes to id (follower_reads.go).
				r.preferredReadReplica = id
				r.highWatermark, r.lastStableOffset, r.logStartOffset = s.HighWatermark, s.LastStable, s.LogStart
				anyError = true
				continue
			}
		}
		if r.diverging = divergingEpoch(p, t.lastFetchedEpoch, t.fetchOffset); r.diverging != nil {
			if r.diverging.EndOffset < 0 {
				// The leader cannot place the epoch at all: Kafka answers OFFSET_OUT_OF_RANGE.
				r.diverging, r.errCode, anyError = nil, kerr.OffsetOutOfRange.Code, true
				continue
			}
			r.highWatermark, r.lastStableOffset, r.logStartOffset = s.HighWatermark, s.LastStable, s.LogStart
			anyError = true // answered now: the fetcher must truncate before anything else
			continue
		}
		// visible is the end of what this fetcher may read: the HW (consumers), the LSO
		// (read_committed) or the log end (a follower).
		visible := s.HighWatermark
		if req.IsolationLevel == 1 {
			visible = s.LastStable // read_committed
		}
		throttled := false
		if follower.id >= 0 {
			var code int16
			if s, code = b.recordFollowerFetch(p, im, rs.topic, follower, t.fetchOffset, t.logStartOffset); code != 0 {
				r.errCode = code
				anyError = true
				continue
			}
			if t.logStartOffset >= 0 && t.logStartOffset < s.LogStart && t.fetchOffset >= s.LogStart {
				// The leader's log start moved past the follower's (DeleteRecords, retention):
				// answer now so the follower follows it and the low watermark moves.
				anyError = true
			}
			visible = s.LogEnd
			throttled = b.leaderThrottled(rs.topic, t.partition)
			if throttled && !slices.Contains(rs.topic.Partitions[t.partition].ISR, follower.id) &&
				b.throttles.leader.exceeded(b.throttledRate(im, leaderThrottledRateKey)) {
				// Leader throttle (throttle.go): no records for an out-of-sync replica now.
				r.highWatermark, r.lastStableOffset, r.logStartOffset = s.HighWatermark, s.LastStable, s.LogStart
				b.throttles.leaderSkips.Add(1)
				continue
			}
		}
		r.highWatermark, r.lastStableOffset, r.logStartOffset = s.HighWatermark, s.LastStable, s.LogStart
		limit := min(int64(t.maxBytes), maxBytes-total)
		minOne := total == 0
		if limit <= 0 && !minOne {
			continue
		}
		read, err := p.log.Read(t.fetchOffset, max(limit, 0), visible, minOne)
		if err != nil {
			r.errCode = storageErrorCode(err)
			anyError = true
			continue
		}
		r.records, r.part = read.Slices, p
		total += read.Bytes
		if throttled {
			b.throttles.leader.record(read.Bytes)
		}
		if req.IsolationLevel == 1 && follower.id < 0 && len(read.Slices) > 0 {
			r.aborted = p.log.AbortedTransactionsInRead(t.fetchOffset, read, visible)
		}
	}
	return results, total, anyError
}

// fetchResponse builds the response; for an incremental session fetch only partitions with
// news are included, and the session remembers what it sent.
func (b *Broker) fetchResponse(req *kmsg.FetchRequest, sessionID int32, session *fetchSession, incremental bool, targets []*fetchTarget, results []fetchResult) *splicedFetchResponse {
	resp := &splicedFetchResponse{FetchResponse: req.ResponseKind().(*kmsg.FetchResponse)}
	resp.SessionID = sessionID
	if session != nil {
		session.mu.Lock()
		defer session.mu.Unlock()
	}
	topicIndex := map[sessionKey]int{} // a topic's entry in resp.Topics
	toFollower := followerOf(req).id >= 0
	for i, t := range targets {
		r := &results[i]
		if r.part != nil {
			r.part.counters.countSent(r.records, toFollower)
		}
		if incremental && len(r.records) == 0 && r.errCode == 0 && r.diverging == nil && r.preferredReadReplica < 0 &&
			r.highWatermark == t.lastHighWatermark && r.lastStableOffset == t.lastStableOffset && r.logStartOffset == t.lastLogStart {
			continue
		}
		if session != nil {
			t.lastHighWatermark, t.lastStableOffset, t.lastLogStart = r.highWatermark, r.lastStableOffset, r.logStartOffset
		}
		key := sessionKey{topic: t.topic, topicID: t.topicID}
		ti, ok := topicIndex[key]
		if !ok {
			ti = len(resp.Topics)
			topicIndex[key] = ti
			resp.Topics = append(resp.Topics, kmsg.NewFetchResponseTopic())
			resp.records = append(resp.records, nil)
			resp.Topics[ti].Topic, resp.Topics[ti].TopicID = t.topic, t.topicID
		}
		topic := &resp.Topics[ti]
		p := kmsg.NewFetchResponseTopicPartition()
		p.Partition = t.partition
		p.ErrorCode = r.errCode
		p.HighWatermark, p.LastStableOffset, p.LogStartOffset = r.highWatermark, r.lastStableOffset, r.logStartOffset
		// Never null: librdkafka rejects a null record set (MessageSetSize -1). The bytes
		// themselves are spliced in from the segment files (fetch_encode.go).
		if len(r.records) == 0 {
			p.RecordBatches = []byte{}
		}
		if req.Version < 4 && len(r.records) > 0 {
			// Old consumers read magic 0/1 only: convert in memory, sent inline.
			p.RecordBatches, p.ErrorCode = downConvertRead(r.records, fetchMagic(req.Version), t.fetchOffset)
			r.records = nil
		}
		if r.diverging != nil {
			p.DivergingEpoch = *r.diverging
		}
		p.PreferredReadReplica = r.preferredReadReplica
		resp.records[ti] = append(resp.records[ti], r.records)
		if req.IsolationLevel == 1 {
			// The consumer drops a listed producer's records from FirstOffset up to its
			// ABORT marker.
			p.AbortedTransactions = make([]kmsg.FetchResponseTopicPartitionAbortedTransaction, len(r.aborted))
			for i, a := range r.aborted {
				p.AbortedTransactions[i] = kmsg.FetchResponseTopicPartitionAbortedTransaction{ProducerID: a.ProducerID, FirstOffset: a.FirstOffset}
			}
		}
		topic.Partitions = append(topic.Partitions, p)
	}
	if session != nil {
		session.rotateServedLocked(targets, results)
	}
	return resp
}

// fetchDenied applies Fetch's authorization: a follower's fetch needs CLUSTER_ACTION on the
// cluster (clusterDenied), a consumer's READ on each topic (denied; a topic ID this broker
// does not know is left to UNKNOWN_TOPIC_ID).
func (b *Broker) fetchDenied(conn *wire.ConnInfo, req *kmsg.FetchRequest, im *controller.Image, targets []*fetchTarget) (denied map[*fetchTarget]bool, clusterDenied bool) {
	if !b.authzOn() {
		return nil, false
	}
	if followerOf(req).id >= 0 {
		return nil, !b.allowedCluster(conn, authz.OpClusterAction)
	}
	verdict := map[string]bool{}
	for _, t := range targets {
		name := t.topic
		if req.Version >= 13 {
			if name = topicNameOf(im, t.topicID); name == "" {
				continue
			}
		}
		ok, seen := verdict[name]
		if !seen {
			ok = b.allowedTopic(conn, authz.OpRead, name)
			verdict[name] = ok
		}
		if !ok {
			if denied == nil {
				denied = map[*fetchTarget]bool{}
			}
			denied[t] = true
		}
	}
	return denied, false
}
