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
// the image in which the controller fenced it (as applied by this broker, so its replicas
// already know their new roles), and answers from that. A suspect whose
// listener accepts is cleared. This never changes what is answered, only when: the worst a
// wrong suspicion costs is one probe per request, and a refusal is a dead process.

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"slices"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"sluice/controller"
	"sluice/wire"
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
// a suspect leader of partitions in im is certainly dead, the first image this broker applied
// (within failoverWait) in which it is fenced or re-registered.
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
			b.mu.RLock()
			applied, appliedChanged := b.mu.appliedImage, b.mu.appliedChanged
			b.mu.RUnlock()
			if applied != nil && applied.Offset > im.Offset {
				im = applied
				now := im.Brokers[id]
				if gone = now == nil || now.Fenced || now.Epoch != epoch; gone {
					break
				}
			}
			select {
			case <-appliedChanged:
			case <-deadline.C:
				gone = true
			case <-ctx.Done():
				gone = true
			case <-b.closing:
				gone = true
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

// KIP-951 leader hints. A produce (v10+) or fetch (v12+) answered NOT_LEADER_OR_FOLLOWER or
// FENCED_LEADER_EPOCH for a partition carries the partition's current leader and leader epoch
// as this broker's image has them (CurrentLeader; -1/-1 when it has none), and, from produce
// v10 and fetch v16, the endpoints of those leaders on the listener the request came in on
// (NodeEndpoints), so a client moves to the new leader without a Metadata round trip, as
// Kafka's brokers answer since 3.7.

// leaderHint is a partition's current leader for a hint.
func leaderHint(im *controller.Image, topic string, topicID [16]byte, partition int32) (leader, epoch int32) {
	t := im.Topics[topic]
	if t == nil {
		t = im.TopicsByID[controller.TopicID(topicID)]
	}
	if t == nil || partition < 0 || int(partition) >= len(t.Partitions) {
		return -1, -1
	}
	p := &t.Partitions[partition]
	if p.Leader < 0 {
		return -1, -1
	}
	return p.Leader, p.LeaderEpoch
}

// wantsLeaderHint reports whether an error code is answered with a leader hint.
func wantsLeaderHint(code int16) bool {
	return code == kerr.NotLeaderForPartition.Code || code == kerr.FencedLeaderEpoch.Code
}

// withProduceLeaderHints wraps respond so that the produce response it sends carries leader
// hints, from the image current when it is sent (an acks=all produce may be answered much
// later than it arrived).
func (b *Broker) withProduceLeaderHints(wreq *wire.Request, respond wire.Respond) wire.Respond {
	if wreq.Version < 10 {
		return respond
	}
	listener := ""
	if wreq.Conn != nil {
		listener = wreq.Conn.ListenerName
	}
	return func(r kmsg.Response, err error) {
		if resp, ok := r.(*kmsg.ProduceResponse); ok && err == nil {
			b.addProduceLeaderHints(b.ctrl.Image(), listener, resp)
		}
		respond(r, err)
	}
}

func (b *Broker) addProduceLeaderHints(im *controller.Image, listener string, resp *kmsg.ProduceResponse) {
	var leaders []int32
	for i := range resp.Topics {
		t := &resp.Topics[i]
		for j := range t.Partitions {
			p := &t.Partitions[j]
			if !wantsLeaderHint(p.ErrorCode) {
				continue
			}
			p.CurrentLeader.LeaderID, p.CurrentLeader.LeaderEpoch = leaderHint(im, t.Topic, t.TopicID, p.Partition)
			if p.CurrentLeader.LeaderID >= 0 {
				leaders = append(leaders, p.CurrentLeader.LeaderID)
			}
		}
	}
	for _, id := range uniqueSorted(leaders) {
		br := im.Brokers[id]
		if br == nil || br.Fenced {
			continue
		}
		if ep, ok := endpointFor(br, listener); ok {
			n := kmsg.NewProduceResponseBroker()
			n.NodeID, n.Host, n.Port, n.Rack = id, ep.Host, ep.Port, br.Rack
			resp.Brokers = append(resp.Brokers, n)
		}
	}
}

// withFetchLeaderHints is withProduceLeaderHints for fetch responses (v12+; endpoints v16+).
func (b *Broker) withFetchLeaderHints(wreq *wire.Request, respond wire.Respond) wire.Respond {
	if wreq.Version < 12 {
		return respond
	}
	listener := ""
	if wreq.Conn != nil {
		listener = wreq.Conn.ListenerName
	}
	version := wreq.Version
	return func(r kmsg.Response, err error) {
		if err == nil {
			switch resp := r.(type) {
			case *splicedFetchResponse:
				b.addFetchLeaderHints(b.ctrl.Image(), listener, version, resp.FetchResponse)
			case *kmsg.FetchResponse:
				b.addFetchLeaderHints(b.ctrl.Image(), listener, version, resp)
			}
		}
		respond(r, err)
	}
}

func (b *Broker) addFetchLeaderHints(im *controller.Image, listener string, version int16, resp *kmsg.FetchResponse) {
	var leaders []int32
	for i := range resp.Topics {
		t := &resp.Topics[i]
		for j := range t.Partitions {
			p := &t.Partitions[j]
			if !wantsLeaderHint(p.ErrorCode) {
				continue
			}
			p.CurrentLeader.LeaderID, p.CurrentLeader.LeaderEpoch = leaderHint(im, t.Topic, t.TopicID, p.Partition)
			if p.CurrentLeader.LeaderID >= 0 {
				leaders = append(leaders, p.CurrentLeader.LeaderID)
			}
		}
	}
	if version < 16 {
		return
	}
	for _, id := range uniqueSorted(leaders) {
		br := im.Brokers[id]
		if br == nil || br.Fenced {
			continue
		}
		if ep, ok := endpointFor(br, listener); ok {
			n := kmsg.NewFetchResponseBroker()
			n.NodeID, n.Host, n.Port, n.Rack = id, ep.Host, ep.Port, br.Rack
			resp.Brokers = append(resp.Brokers, n)
		}
	}
}

func uniqueSorted(ids []int32) []int32 {
	slices.Sort(ids)
	return slices.Compact(ids)
}

// Peer watches. A fetch connection notices a dead leader only when the fetcher's goroutine
// gets the error back through its client, a few goroutine hand-offs after the kernel closed
// the socket — sometimes after a client already asked this broker for metadata. So each
// broker also keeps one idle connection to the inter-broker listener of every leader it
// follows, read by a goroutine that does nothing else: when it ends, the leader is suspect
// (suspectLeader) at once. The listener's idle timeout ending one is a false suspicion, which
// costs one probe on the next Metadata request and is cleared by it.

// peerRedial is how long a watch waits before connecting again.
const peerRedial = time.Second

// watchPeers keeps a watch on every leader of a partition this broker follows in the image
// it applied, until Close.
func (b *Broker) watchPeers() {
	defer b.done.Done()
	type watch struct {
		addr   string
		cancel context.CancelFunc
	}
	watches := map[int32]*watch{}
	var wg sync.WaitGroup
	defer func() {
		for _, w := range watches {
			w.cancel()
		}
		wg.Wait()
	}()
	for {
		b.mu.RLock()
		im, appliedChanged := b.mu.appliedImage, b.mu.appliedChanged
		b.mu.RUnlock()
		want := map[int32]string{}
		for _, t := range topicsOf(im) {
			for i := range t.Partitions {
				p := &t.Partitions[i]
				if p.Leader >= 0 && p.Leader != b.nodeID && slices.Contains(p.Replicas, b.nodeID) {
					if addr := leaderAddress(im, p.Leader, b.cfg.Static.InterBrokerListenerName); addr != "" {
						want[p.Leader] = addr
					}
				}
			}
		}
		for id, w := range watches {
			if want[id] != w.addr {
				w.cancel()
				delete(watches, id)
			}
		}
		for id, addr := range want {
			if watches[id] != nil {
				continue
			}
			ctx, cancel := context.WithCancel(context.Background())
			watches[id] = &watch{addr: addr, cancel: cancel}
			wg.Add(1)
			go func() {
				defer wg.Done()
				b.watchPeer(ctx, id, addr)
			}()
		}
		select {
		case <-appliedChanged:
		case <-b.closing:
			return
		}
	}
}

// watchPeer holds a connection to addr (broker id's listener) until ctx ends, marking id
// suspect whenever an established connection ends.
func (b *Broker) watchPeer(ctx context.Context, id int32, addr string) {
	d := net.Dialer{Timeout: peerRedial}
	for ctx.Err() == nil {
		conn, err := d.DialContext(ctx, "tcp", addr)
		if err == nil && b.cfg.PeerTLS != nil {
			// A TLS listener closes a connection that never completes its handshake, which
			// would read here as the leader going away.
			conn, err = peerTLSHandshake(ctx, conn, b.cfg.PeerTLS, addr)
		}
		if err == nil {
			stop := context.AfterFunc(ctx, func() { conn.Close() })
			var buf [1]byte
			_, _ = conn.Read(buf[:]) // a listener never writes first: returns when the connection ends
			stop()
			conn.Close()
			if ctx.Err() != nil {
				return
			}
			b.suspectLeader(id)
		}
		t := time.NewTimer(peerRedial)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
}

// topicsOf is im's topics, none for a nil image.
func topicsOf(im *controller.Image) map[string]*controller.TopicInfo {
	if im == nil {
		return nil
	}
	return im.Topics
}

// peerTLSHandshake makes conn a TLS client connection to addr (its host checked against the
// certificate unless tlsCfg names a server) and completes the handshake within peerRedial.
func peerTLSHandshake(ctx context.Context, conn net.Conn, tlsCfg *tls.Config, addr string) (net.Conn, error) {
	if tlsCfg.ServerName == "" {
		tlsCfg = tlsCfg.Clone()
		tlsCfg.ServerName, _, _ = net.SplitHostPort(addr)
	}
	tc := tls.Client(conn, tlsCfg)
	hctx, cancel := context.WithTimeout(ctx, peerRedial)
	defer cancel()
	if err := tc.HandshakeContext(hctx); err != nil {
		conn.Close()
		return nil, err
	}
	return tc, nil
}
