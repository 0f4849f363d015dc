package controller

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"go.etcd.io/raft/v3"
	pb "go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"
)

// Wire protocol of the raft transport between voters; see the package doc. These constants
// must not change within a protocol version: voters of different builds talk to each other.
const (
	raftMagic           = "SLCR" // as a Kafka request size (0x534C4352) it is far above any limit
	raftProtocolVersion = 1

	helloFixedLen = 4 + 1 + 4 + 4 + 1 // magic | version | from | to | cluster ID length
	ackLen        = 4 + 1 + 1         // magic | version | status

	frameHeaderLen     = 5 // length uint32 BE (of type and payload) | type uint8
	frameMessage       = 1 // payload: raftpb.Message (never MsgSnap)
	frameSnapshot      = 2 // payload: data length uint64 BE | raftpb.Message (MsgSnap, Snapshot.Data empty)
	frameSnapshotChunk = 3 // payload: the next bytes of the snapshot's data

	// maxRaftFrame bounds one frame (type and payload), checked before anything is
	// allocated. An append carries at most MaxSizePerMsg (1 MiB) of entries, or a single
	// entry of at most maxEntryBytes (8 MiB), so every message raft sends fits.
	maxRaftFrame = 16 << 20
	// snapshotChunkLen is the size of the chunks a snapshot's data is sent in.
	snapshotChunkLen = 1 << 20
	// maxRaftSnapshot bounds the data of a reassembled snapshot: the bound on a snapshot
	// file, so whatever a leader can store a follower can receive.
	maxRaftSnapshot = maxSnapshotSize
)

// Handshake answers (the status byte of the ack).
const (
	helloOK           = 0
	helloUnknownNode  = 1 // the sender is not one of this node's voters
	helloWrongCluster = 2 // both sides know a cluster ID and they differ
	helloWrongTarget  = 3 // the sender meant to reach another node ID
	helloBadVersion   = 4 // protocol version not supported
)

var helloStatusText = map[byte]string{
	helloUnknownNode:  "unknown node ID",
	helloWrongCluster: "wrong cluster ID",
	helloWrongTarget:  "wrong target node ID",
	helloBadVersion:   "unsupported protocol version",
}

// Defaults of NetTransportConfig.
const (
	defaultQueueMessages       = 1024
	defaultQueueBytes          = 64 << 20
	defaultDialTimeout         = 2 * time.Second
	defaultWriteTimeout        = 5 * time.Second
	defaultReconnectBackoff    = 50 * time.Millisecond // Kafka's reconnect.backoff.ms default
	defaultReconnectBackoffMax = time.Second           // Kafka's reconnect.backoff.max.ms default
	// helloTimeout bounds how long an accepted connection may take to identify itself.
	helloTimeout = 10 * time.Second
	// maxInboundConns bounds accepted raft connections (handshaking or established); each
	// voter keeps one, so this only stops a flood.
	maxInboundConns = 64
	// logEvery rate-limits repeated warnings (refused connections, unreachable peers).
	logEvery = 10 * time.Second
)

// ErrBadRaftFrame is returned by the raft stream decoder for input that is not a valid
// frame of the protocol (bad magic, a length out of bounds, an undecodable or misaddressed
// message, a chunk out of sequence).
var ErrBadRaftFrame = errors.New("controller: bad raft transport frame")

var errBadVersion = fmt.Errorf("%w: unsupported protocol version", ErrBadRaftFrame)

func badFrame(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrBadRaftFrame, fmt.Sprintf(format, args...))
}

// hello is the handshake a dialing voter sends first.
type hello struct {
	from, to  int32  // Kafka node IDs of the sender and of the node it means to reach
	clusterID string // the sender's cluster ID, empty while it does not know one
}

func appendHello(b []byte, h hello) []byte {
	b = append(b, raftMagic...)
	b = append(b, raftProtocolVersion)
	b = binary.BigEndian.AppendUint32(b, uint32(h.from))
	b = binary.BigEndian.AppendUint32(b, uint32(h.to))
	b = append(b, byte(len(h.clusterID)))
	return append(b, h.clusterID...)
}

// readHello reads a handshake. An error wrapping errBadVersion means the magic matched but
// the version is not ours; any other error means the peer does not speak this protocol.
func readHello(r io.Reader) (hello, error) {
	var fixed [helloFixedLen]byte
	if _, err := io.ReadFull(r, fixed[:5]); err != nil {
		return hello{}, err
	}
	if string(fixed[:4]) != raftMagic {
		return hello{}, badFrame("bad magic %q", fixed[:4])
	}
	if fixed[4] != raftProtocolVersion {
		return hello{}, fmt.Errorf("%w %d", errBadVersion, fixed[4])
	}
	if _, err := io.ReadFull(r, fixed[5:]); err != nil {
		return hello{}, err
	}
	h := hello{
		from: int32(binary.BigEndian.Uint32(fixed[5:9])),
		to:   int32(binary.BigEndian.Uint32(fixed[9:13])),
	}
	if h.from < 0 || h.to < 0 {
		return hello{}, badFrame("negative node ID")
	}
	if n := int(fixed[13]); n > 0 {
		id := make([]byte, n) // n <= 255
		if _, err := io.ReadFull(r, id); err != nil {
			return hello{}, err
		}
		h.clusterID = string(id)
	}
	return h, nil
}

func appendAck(b []byte, status byte) []byte {
	b = append(b, raftMagic...)
	return append(b, raftProtocolVersion, status)
}

func readAck(r io.Reader) (byte, error) {
	var a [ackLen]byte
	if _, err := io.ReadFull(r, a[:]); err != nil {
		return 0, err
	}
	if string(a[:4]) != raftMagic || a[4] != raftProtocolVersion {
		return 0, badFrame("bad handshake answer %q", a[:])
	}
	return a[5], nil
}

// encodeMessageFrame encodes a non-snapshot message as one frame.
func encodeMessageFrame(m *pb.Message) ([]byte, error) {
	buf := make([]byte, frameHeaderLen, frameHeaderLen+proto.Size(m))
	buf, err := proto.MarshalOptions{}.MarshalAppend(buf, m)
	if err != nil {
		return nil, err
	}
	n := len(buf) - 4
	if n > maxRaftFrame {
		return nil, fmt.Errorf("controller: raft message of %d bytes exceeds the frame bound %d", n, maxRaftFrame)
	}
	binary.BigEndian.PutUint32(buf, uint32(n))
	buf[4] = frameMessage
	return buf, nil
}

// encodeSnapshotHeader encodes a MsgSnap's header frame and returns the snapshot data, to be
// sent after it in chunks. The message is left as it was. REQUIRES: the caller owns m (the
// driver, during Send).
func encodeSnapshotHeader(m *pb.Message) (frame, data []byte, err error) {
	snap := m.GetSnapshot()
	if snap == nil {
		return nil, nil, errors.New("controller: MsgSnap without a snapshot")
	}
	data = snap.Data
	if len(data) > maxRaftSnapshot {
		return nil, nil, fmt.Errorf("controller: snapshot of %d bytes exceeds %d", len(data), maxRaftSnapshot)
	}
	snap.Data = nil
	defer func() { snap.Data = data }()
	buf := make([]byte, frameHeaderLen+8, frameHeaderLen+8+proto.Size(m))
	binary.BigEndian.PutUint64(buf[frameHeaderLen:], uint64(len(data)))
	buf, err = proto.MarshalOptions{}.MarshalAppend(buf, m)
	if err != nil {
		return nil, nil, err
	}
	n := len(buf) - 4
	if n > maxRaftFrame {
		return nil, nil, fmt.Errorf("controller: snapshot header of %d bytes exceeds the frame bound %d", n, maxRaftFrame)
	}
	binary.BigEndian.PutUint32(buf, uint32(n))
	buf[4] = frameSnapshot
	return buf, data, nil
}

func chunkHeader(n int) [frameHeaderLen]byte {
	var h [frameHeaderLen]byte
	binary.BigEndian.PutUint32(h[:], uint32(n+1))
	h[4] = frameSnapshotChunk
	return h
}

// frameReader decodes the frames that follow an accepted handshake into raft messages,
// reassembling snapshots. Every length is checked before it is used; a message must be from
// the voter that identified itself and to this node.
type frameReader struct {
	r        io.Reader
	from, to uint64 // raft IDs every message must carry
	hdr      [frameHeaderLen]byte

	// A snapshot being reassembled: snap is its header message, snapData the data so far.
	// Invariant: len(snapData) < snapLen <= maxRaftSnapshot while snap != nil.
	snap     *pb.Message
	snapData []byte
	snapLen  uint64
}

// next returns the next complete message; io.EOF at a frame boundary means the peer closed.
func (fr *frameReader) next() (*pb.Message, error) {
	for {
		if _, err := io.ReadFull(fr.r, fr.hdr[:]); err != nil {
			if err == io.EOF && fr.snap != nil {
				err = io.ErrUnexpectedEOF
			}
			return nil, err
		}
		n := binary.BigEndian.Uint32(fr.hdr[:4])
		if n < 1 || n > maxRaftFrame {
			return nil, badFrame("frame length %d out of bounds [1, %d]", n, maxRaftFrame)
		}
		typ := fr.hdr[4]
		if typ < frameMessage || typ > frameSnapshotChunk {
			return nil, badFrame("unknown frame type %d", typ)
		}
		if typ == frameSnapshotChunk {
			if fr.snap == nil {
				return nil, badFrame("snapshot chunk without a snapshot header")
			}
			if uint64(len(fr.snapData))+uint64(n-1) > fr.snapLen {
				return nil, badFrame("snapshot chunks exceed the announced %d bytes", fr.snapLen)
			}
			// Grow with what actually arrives, not with what the header announced.
			start := len(fr.snapData)
			fr.snapData = slices.Grow(fr.snapData, int(n-1))[:start+int(n-1)]
			if _, err := io.ReadFull(fr.r, fr.snapData[start:]); err != nil {
				return nil, unexpectedEOF(err)
			}
			if uint64(len(fr.snapData)) == fr.snapLen {
				return fr.finishSnapshot(), nil
			}
			continue
		}
		if fr.snap != nil {
			return nil, badFrame("frame type %d inside a snapshot", typ)
		}
		payload := make([]byte, n-1)
		if _, err := io.ReadFull(fr.r, payload); err != nil {
			return nil, unexpectedEOF(err)
		}
		var dataLen uint64
		if typ == frameSnapshot {
			if len(payload) < 8 {
				return nil, badFrame("snapshot header of %d bytes", len(payload))
			}
			dataLen = binary.BigEndian.Uint64(payload)
			if dataLen > maxRaftSnapshot {
				return nil, badFrame("snapshot of %d bytes exceeds %d", dataLen, maxRaftSnapshot)
			}
			payload = payload[8:]
		}
		m := new(pb.Message)
		if err := proto.Unmarshal(payload, m); err != nil {
			return nil, badFrame("undecodable raft message: %v", err)
		}
		if err := fr.check(m, typ == frameSnapshot); err != nil {
			return nil, err
		}
		if typ == frameMessage {
			return m, nil
		}
		if m.GetSnapshot() == nil {
			m.Snapshot = &pb.Snapshot{}
		}
		fr.snap, fr.snapLen = m, dataLen
		fr.snapData = make([]byte, 0, min(dataLen, snapshotChunkLen))
		if dataLen == 0 {
			return fr.finishSnapshot(), nil
		}
	}
}

func (fr *frameReader) finishSnapshot() *pb.Message {
	m := fr.snap
	m.Snapshot.Data = fr.snapData
	fr.snap, fr.snapData, fr.snapLen = nil, nil, 0
	return m
}

// check refuses messages a voter never sends: addressed from or to someone else, raft's
// local message types, or a snapshot outside a snapshot frame (and the reverse).
func (fr *frameReader) check(m *pb.Message, snapshotFrame bool) error {
	if m.GetFrom() != fr.from || m.GetTo() != fr.to {
		return badFrame("message from %d to %d on the connection of %d to %d", m.GetFrom(), m.GetTo(), fr.from, fr.to)
	}
	if raft.IsLocalMsg(m.GetType()) {
		return badFrame("local message type %s", m.GetType())
	}
	if (m.GetType() == pb.MessageType_MsgSnap) != snapshotFrame {
		return badFrame("message type %s in frame of the wrong type", m.GetType())
	}
	return nil
}

func unexpectedEOF(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}

// NetTransportConfig configures a NetTransport. Zero durations and sizes mean the defaults.
type NetTransportConfig struct {
	// NodeID is this node's Kafka node ID.
	NodeID int32
	// Peers maps every other voter's node ID to its controller listener's host:port (the
	// entries of controller.quorum.voters); an entry for NodeID itself is ignored.
	Peers map[int32]string
	// ClusterID, if set, is the cluster ID this node belongs to. If empty, the attached
	// controller's image supplies it once known.
	ClusterID string
	// Observer makes this the transport of a node that is not a voter (process.roles=broker):
	// Peers are the voters it follows; it dials them only once Connect is called (after the
	// broker registered, so the voters know it), and receives their messages on the
	// connections it dialled, since an observer has no controller listener. It serves no
	// inbound connections.
	Observer bool
	// TLS, when set, makes every dialled connection a TLS client connection (the controller
	// listener's security protocol is SSL); ServerName is filled from each peer's host when
	// empty. Inbound connections get their TLS from the listener that hands them to ServeConn.
	TLS *tls.Config
	// Authenticate, when set, authenticates every dialled connection right after its hello,
	// before the ack is read: the client side of the controller listener's SASL exchange
	// (wire.AuthenticateSASLStream) when that listener is SASL_PLAINTEXT or SASL_SSL. addr is
	// the peer's host:port. An error drops the connection; the peer is redialled with backoff.
	Authenticate func(ctx context.Context, rw io.ReadWriter, addr string) error
	// AuthenticateInbound, when set, authenticates every inbound connection after its hello
	// and before it is answered: the server side (wire.SASLConfig.ServeSASLStream), reading
	// from r and answering on w. It returns when the session ends (zero: never): the
	// connection is closed then, and its peer redials and authenticates again, as Kafka's
	// connections.max.reauth.ms has a channel re-authenticate. An error refuses the
	// connection.
	AuthenticateInbound func(r io.Reader, w io.Writer) (principal string, expires time.Time, err error)
	// AuthorizeInbound, when set (an authorizer is configured), decides whether an inbound
	// connection may carry raft, after authentication and before it is answered: Kafka
	// requires CLUSTER_ACTION on the cluster for Vote, BeginQuorumEpoch and Fetch. principal
	// is the SASL session's, "" when the listener has no SASL (the callback takes it from the
	// connection: its TLS certificate, else User:ANONYMOUS). An error refuses the connection.
	AuthorizeInbound func(conn net.Conn, principal string) error
	Logger           *slog.Logger

	QueueMessages       int           // per-peer queue bound in messages; 0 = 1024
	QueueBytes          int           // per-peer queue bound in encoded bytes; 0 = 64 MiB
	DialTimeout         time.Duration // connect and handshake; 0 = 2s
	WriteTimeout        time.Duration // a write (a frame, a snapshot chunk) stalled this long drops the connection; 0 = 5s
	ReconnectBackoff    time.Duration // first redial delay, doubled per failure; 0 = 50ms
	ReconnectBackoffMax time.Duration // bound on the redial delay; 0 = 1s
}

// NetTransport carries raft messages between voters over TCP: one outbound connection per
// peer, fed from a bounded queue by its own goroutine, and inbound connections served by
// Serve or ServeConn, whose messages go to the attached Controller. See the package doc for
// the protocol.
type NetTransport struct {
	cfg    NetTransportConfig
	logger *slog.Logger
	ctx    context.Context // cancelled by Close
	cancel context.CancelFunc
	// peers are the other voters, by node ID: a copy-on-write map replaced by SetPeers
	// (under mu) when the voter set changes; never nil.
	peers atomic.Pointer[map[int32]*netPeer]
	ctrl  atomic.Pointer[Controller]
	// observing: this node is not a voter (Config.Observer, until SetPeers says it became
	// one): it accepts no observers of its own.
	observing atomic.Bool
	// connectOnce starts the peers' dialling goroutines (at NewNetTransport, or at Connect
	// for an observer).
	connectOnce sync.Once
	warn        logLimiter

	refused       atomic.Uint64 // inbound connections refused
	unknownDrops  atomic.Uint64 // messages for node IDs that are not peers
	partitionedTo atomic.Pointer[map[int32]bool]

	wg sync.WaitGroup // peer goroutines, accept loops, served connections
	mu struct {
		sync.Mutex
		closed    bool
		connected bool // Connect was called: new peers dial at once
		listeners map[net.Listener]struct{}
		conns     map[net.Conn]struct{} // accepted connections; bounded by maxInboundConns
		inbound   map[int32]net.Conn    // the established connection of each peer
		// observers are the observers (raft learners) that connected to this voter, by
		// node ID: messages for them go out on the connection they dialled. Entries stay
		// after a disconnect (raft keeps addressing the learner). Invariant: at most
		// maxObservers entries.
		observers map[int32]*netPeer
	}
}

// NewNetTransport validates cfg and starts a sender goroutine per peer; they dial (with
// backoff) until Close.
func NewNetTransport(cfg NetTransportConfig) (*NetTransport, error) {
	if cfg.NodeID < 0 {
		return nil, fmt.Errorf("controller: node ID %d is negative", cfg.NodeID)
	}
	if len(cfg.ClusterID) > 255 {
		return nil, fmt.Errorf("controller: cluster ID of %d bytes is too long", len(cfg.ClusterID))
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	setDefault(&cfg.QueueMessages, defaultQueueMessages)
	setDefault(&cfg.QueueBytes, defaultQueueBytes)
	setDefault(&cfg.DialTimeout, defaultDialTimeout)
	setDefault(&cfg.WriteTimeout, defaultWriteTimeout)
	setDefault(&cfg.ReconnectBackoff, defaultReconnectBackoff)
	setDefault(&cfg.ReconnectBackoffMax, defaultReconnectBackoffMax)
	cfg.ReconnectBackoffMax = max(cfg.ReconnectBackoffMax, cfg.ReconnectBackoff)

	ctx, cancel := context.WithCancel(context.Background())
	t := &NetTransport{
		cfg:    cfg,
		logger: cfg.Logger.With("node", cfg.NodeID),
		ctx:    ctx,
		cancel: cancel,
		warn:   logLimiter{every: logEvery},
	}
	peers := map[int32]*netPeer{}
	t.mu.listeners = map[net.Listener]struct{}{}
	t.mu.conns = map[net.Conn]struct{}{}
	t.mu.inbound = map[int32]net.Conn{}
	t.mu.observers = map[int32]*netPeer{}
	for id, addr := range cfg.Peers {
		if id == cfg.NodeID {
			continue
		}
		if id < 0 {
			cancel()
			return nil, fmt.Errorf("controller: peer node ID %d is negative", id)
		}
		if _, _, err := net.SplitHostPort(addr); err != nil {
			cancel()
			return nil, fmt.Errorf("controller: address of voter %d: %w", id, err)
		}
		peers[id] = t.newPeer(id, addr)
	}
	t.peers.Store(&peers)
	t.observing.Store(cfg.Observer)
	if !cfg.Observer {
		t.Connect()
	}
	return t, nil
}

// Connect starts dialling the peers; NewNetTransport calls it unless Config.Observer is set.
// Calls after the first do nothing.
func (t *NetTransport) Connect() {
	t.connectOnce.Do(func() {
		t.mu.Lock()
		defer t.mu.Unlock()
		if t.mu.closed {
			return
		}
		t.mu.connected = true
		for _, p := range *t.peers.Load() {
			t.wg.Add(1)
			go p.run()
		}
	})
}

// newPeer returns the sender for voter id at addr; its goroutine is not started.
func (t *NetTransport) newPeer(id int32, addr string) *netPeer {
	ctx, cancel := context.WithCancel(t.ctx)
	return &netPeer{t: t, id: id, addr: addr, wake: make(chan struct{}, 1), ctx: ctx, cancel: cancel}
}

// peer returns the sender of voter id, or nil if id is not a voter this transport knows.
func (t *NetTransport) peer(id int32) *netPeer { return (*t.peers.Load())[id] }

// SetPeers makes addrs (node ID → controller listener host:port) the voters this transport
// sends to, when the quorum's voter set changed (AddRaftVoter, RemoveRaftVoter): a new voter
// gets a sender (dialling at once if this transport is connected), a voter no longer listed
// loses its sender, and a voter whose address changed is redialled at the new one. An entry
// for this node or with an unparsable address is ignored. isVoter says whether this node is
// itself a voter now: only a voter accepts observers (raft learners). The controller calls it
// from its driver goroutine whenever it applied a change of the raft configuration.
func (t *NetTransport) SetPeers(addrs map[int32]string, isVoter bool) {
	t.observing.Store(!isVoter)
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.mu.closed {
		return
	}
	old := *t.peers.Load()
	next := make(map[int32]*netPeer, len(addrs))
	changed := false
	for id, addr := range addrs {
		if id == t.cfg.NodeID || id < 0 {
			continue
		}
		if _, _, err := net.SplitHostPort(addr); err != nil {
			t.warn.log(t.logger, "peer-addr", "ignoring a voter with an unusable address", "peer", id, "addr", addr)
			continue
		}
		if p := old[id]; p != nil && p.addr == addr {
			next[id] = p
			continue
		}
		p := t.newPeer(id, addr)
		next[id] = p
		changed = true
		if t.mu.connected {
			t.wg.Add(1)
			go p.run()
		}
		t.logger.Info("raft peer added", "peer", id, "addr", addr)
	}
	for id, p := range old {
		if next[id] != p {
			p.cancel()
			p.lost(p.take())
			changed = true
			if next[id] == nil {
				// A demoted voter follows on as an observer: close the connection it
				// dialled as a voter, so it dials again and is served as an observer (this
				// voter then sends to it on that connection; nothing else reaches it).
				if c := t.mu.inbound[id]; c != nil {
					c.Close()
				}
				t.logger.Info("raft peer removed", "peer", id)
			}
		}
	}
	if changed {
		t.peers.Store(&next)
	}
}

func setDefault[T int | time.Duration](v *T, def T) {
	if *v <= 0 {
		*v = def
	}
}

// Attach makes c the receiver of inbound messages and of delivery reports. The controller
// calls it when it opens with this as its Config.Transport; attaching a restarted controller
// replaces the previous one.
func (t *NetTransport) Attach(c *Controller) { t.ctrl.Store(c) }

// clusterID is the cluster ID this node announces and checks, "" while unknown.
func (t *NetTransport) clusterID() string {
	if t.cfg.ClusterID != "" {
		return t.cfg.ClusterID
	}
	if c := t.ctrl.Load(); c != nil {
		return c.Image().ClusterID
	}
	return ""
}

func (t *NetTransport) reportUnreachable(id int32) {
	if c := t.ctrl.Load(); c != nil {
		c.ReportUnreachable(id)
	}
}

func (t *NetTransport) reportSnapshot(id int32, failed bool) {
	if c := t.ctrl.Load(); c != nil {
		c.ReportSnapshot(id, failed)
	}
}

// partitioned is the test-only partition hook: messages to and from these peers are dropped.
func (t *NetTransport) partitioned(id int32) bool {
	p := t.partitionedTo.Load()
	return p != nil && (*p)[id]
}

// setPartitioned (tests only) drops every message to and from the given peers, as a network
// partition would; no arguments heals it.
func (t *NetTransport) setPartitioned(ids ...int32) {
	m := map[int32]bool{}
	for _, id := range ids {
		m[id] = true
	}
	t.partitionedTo.Store(&m)
}

// Send queues msgs for their peers. It never blocks: a message for a full queue is dropped,
// counted and reported to raft as the peer being unreachable (raft retransmits). Runs in the
// driver goroutine.
func (t *NetTransport) Send(msgs []*pb.Message) {
	for _, m := range msgs {
		to := kafkaID(m.GetTo())
		p := t.peer(to)
		if p == nil {
			p = t.observer(to)
			if p != nil && !p.connected.Load() {
				// Nothing reaches an observer while it is not connected: it dials us.
				p.drops.Add(1)
				t.reportUnreachable(to)
				if m.GetType() == pb.MessageType_MsgSnap {
					t.reportSnapshot(to, true)
				}
				continue
			}
		}
		if p == nil && t.acceptsObserver(to) {
			// A learner that has not connected yet: it dials once it registered.
			t.unknownDrops.Add(1)
			t.reportUnreachable(to)
			if m.GetType() == pb.MessageType_MsgSnap {
				t.reportSnapshot(to, true)
			}
			continue
		}
		if p == nil {
			t.unknownDrops.Add(1)
			t.warn.log(t.logger, "send-unknown", "dropping raft message for a node that is not a configured voter", "to", to, "type", m.GetType().String())
			continue
		}
		isSnap := m.GetType() == pb.MessageType_MsgSnap
		if t.partitioned(to) {
			p.drops.Add(1)
			if isSnap {
				t.reportSnapshot(to, true)
			}
			continue
		}
		var it outItem
		var err error
		if isSnap {
			it.snapshot = true
			it.frame, it.snapData, err = encodeSnapshotHeader(m)
		} else {
			it.frame, err = encodeMessageFrame(m)
		}
		if err != nil {
			p.drops.Add(1)
			t.warn.log(t.logger, "send-encode", "dropping raft message that cannot be sent", "to", to, "type", m.GetType().String(), "err", err)
			if isSnap {
				t.reportSnapshot(to, true)
			}
			continue
		}
		if !p.enqueue(it) {
			p.drops.Add(1)
			t.reportUnreachable(to)
			if isSnap {
				t.reportSnapshot(to, true)
			}
		}
	}
}

// NetTransportStats are counters for metrics and tests.
type NetTransportStats struct {
	Dropped      map[int32]uint64 // messages dropped per peer (queue full, partitioned, unencodable, lost with a connection)
	Connected    map[int32]bool   // whether the outbound connection to each peer is up
	Refused      uint64           // inbound connections refused (not our protocol, unknown node, wrong cluster, too many)
	UnknownDrops uint64           // messages raft addressed to a node that is not a configured peer
}

func (t *NetTransport) Stats() NetTransportStats {
	s := NetTransportStats{
		Dropped:      map[int32]uint64{},
		Connected:    map[int32]bool{},
		Refused:      t.refused.Load(),
		UnknownDrops: t.unknownDrops.Load(),
	}
	for id, p := range *t.peers.Load() {
		s.Dropped[id] = p.drops.Load()
		s.Connected[id] = p.connected.Load()
	}
	t.mu.Lock()
	for id, p := range t.mu.observers {
		s.Dropped[id] = p.drops.Load()
		s.Connected[id] = p.connected.Load()
	}
	t.mu.Unlock()
	return s
}

// Serve accepts raft connections on l until Close (then it returns nil) or until Accept
// fails otherwise. Close closes l.
func (t *NetTransport) Serve(l net.Listener) error {
	t.mu.Lock()
	if t.mu.closed {
		t.mu.Unlock()
		l.Close()
		return nil
	}
	t.mu.listeners[l] = struct{}{}
	t.mu.Unlock()
	var tempDelay time.Duration
	for {
		conn, err := l.Accept()
		if err != nil {
			if t.ctx.Err() != nil {
				return nil
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				// Out of file descriptors and the like: back off as net/http does.
				tempDelay = min(max(2*tempDelay, 5*time.Millisecond), time.Second)
				select {
				case <-time.After(tempDelay):
				case <-t.ctx.Done():
					return nil
				}
				continue
			}
			return err
		}
		tempDelay = 0
		go t.ServeConn(conn)
	}
}

// ServeConn serves one inbound raft connection until it ends: the handshake, then frames.
// For mounting the transport on a listener shared with other protocols: a connection whose
// first four bytes are "SLCR" is a raft connection (the caller passes a conn that replays
// what it peeked). ServeConn closes conn.
func (t *NetTransport) ServeConn(conn net.Conn) {
	if !t.trackConn(conn) {
		return
	}
	defer t.untrackConn(conn)

	conn.SetDeadline(time.Now().Add(helloTimeout))
	br := bufio.NewReaderSize(conn, 64<<10)
	h, err := readHello(br)
	if err != nil {
		if errors.Is(err, errBadVersion) {
			conn.Write(appendAck(nil, helloBadVersion))
		}
		t.refuse("refuse-hello", "refused raft connection: not a valid handshake", "remote", conn.RemoteAddr().String(), "err", err)
		return
	}
	var sessionEnds time.Time
	var principal string
	if t.cfg.AuthenticateInbound != nil {
		// Before anything is answered, so a peer that does not authenticate learns nothing.
		if principal, sessionEnds, err = t.cfg.AuthenticateInbound(br, conn); err != nil {
			t.refuse("refuse-auth", "refused raft connection: SASL authentication failed", "remote", conn.RemoteAddr().String(),
				"from", h.from, "err", err)
			return
		}
	}
	if t.cfg.AuthorizeInbound != nil {
		if err = t.cfg.AuthorizeInbound(conn, principal); err != nil {
			t.refuse("refuse-authz", "refused raft connection: not authorized", "remote", conn.RemoteAddr().String(),
				"from", h.from, "err", err)
			return
		}
	}
	status := byte(helloOK)
	own := t.clusterID()
	observer := false
	switch {
	case h.to != t.cfg.NodeID:
		status = helloWrongTarget
	case t.peer(h.from) == nil && !t.awaitObserver(h.from):
		status = helloUnknownNode
	case own != "" && h.clusterID != "" && h.clusterID != own:
		status = helloWrongCluster
	default:
		observer = t.peer(h.from) == nil
	}
	if _, err := conn.Write(appendAck(nil, status)); err != nil {
		return
	}
	if status != helloOK {
		t.refuse("refuse-"+helloStatusText[status], "refused raft connection: "+helloStatusText[status],
			"remote", conn.RemoteAddr().String(), "from", h.from, "to", h.to, "cluster_id", h.clusterID, "own_cluster_id", own)
		return
	}
	conn.SetDeadline(time.Time{}) // voters that have nothing to say stay connected
	if !sessionEnds.IsZero() {
		expire := time.AfterFunc(time.Until(sessionEnds), func() {
			t.logger.Debug("raft connection's SASL session ended; closing it for the peer to re-authenticate", "from", h.from)
			conn.Close()
		})
		defer expire.Stop()
	}
	t.setInbound(h.from, conn)
	if observer {
		// The observer's connection carries this voter's messages to it as well.
		p := t.addObserver(h.from)
		if p == nil {
			return
		}
		hungUp := make(chan struct{})
		streamed := make(chan struct{})
		p.attachInbound(conn)
		go func() {
			defer close(streamed)
			p.stream(conn, hungUp)
		}()
		defer func() {
			close(hungUp)
			<-streamed
			if p.detachInbound(conn) {
				p.lost(p.take())
				t.reportUnreachable(h.from)
			}
		}()
		t.logger.Debug("observer connected", "observer", h.from, "remote", conn.RemoteAddr().String())
	}

	fr := &frameReader{r: br, from: raftID(h.from), to: raftID(t.cfg.NodeID)}
	for {
		m, err := fr.next()
		if err != nil {
			if errors.Is(err, ErrBadRaftFrame) {
				t.refuse(fmt.Sprintf("refuse-frame-%d", h.from), "closing raft connection: bad frame", "from", h.from, "err", err)
			}
			return
		}
		if t.partitioned(h.from) {
			continue
		}
		c := t.ctrl.Load()
		if c == nil {
			continue // not attached yet: raft retransmits
		}
		if err := c.Step(t.ctx, m); err != nil {
			return // closed
		}
	}
}

// maxObservers bounds the observers one voter sends to (each has a queue like a voter's).
const maxObservers = 256

// acceptsObserver reports whether node id, not a voter, may connect as an observer: the
// attached controller knows it as a learner or a registered broker, and this node is a voter.
func (t *NetTransport) acceptsObserver(id int32) bool {
	if t.observing.Load() || id == t.cfg.NodeID {
		return false
	}
	c := t.ctrl.Load()
	return c != nil && c.AcceptsObserver(id)
}

// observerGrace is how long a voter holds the handshake of a node it does not know yet
// before refusing it: an observer dials every voter once the active controller registered
// it, and a follower may apply that registration a moment later.
const observerGrace = 2 * time.Second

// awaitObserver is acceptsObserver, waiting up to observerGrace for the node to become known
// through the metadata log.
func (t *NetTransport) awaitObserver(id int32) bool {
	if t.observing.Load() || id == t.cfg.NodeID {
		return false
	}
	timer := time.NewTimer(observerGrace)
	defer timer.Stop()
	for {
		c := t.ctrl.Load()
		if c == nil {
			return false
		}
		im := c.Image()
		if c.AcceptsObserver(id) {
			return true
		}
		select {
		case <-im.Changed():
		case <-timer.C:
			return false
		case <-t.ctx.Done():
			return false
		}
	}
}

// observer returns the sender of an observer that connected, or nil.
func (t *NetTransport) observer(id int32) *netPeer {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.mu.observers[id]
}

// addObserver returns the sender for observer id, creating it; nil beyond maxObservers.
func (t *NetTransport) addObserver(id int32) *netPeer {
	t.mu.Lock()
	defer t.mu.Unlock()
	if p := t.mu.observers[id]; p != nil {
		return p
	}
	if len(t.mu.observers) >= maxObservers {
		t.refused.Add(1)
		t.warn.log(t.logger, "refuse-observers", "refused observer connection: too many observers", "observer", id, "limit", maxObservers)
		return nil
	}
	p := &netPeer{t: t, id: id, wake: make(chan struct{}, 1), ctx: t.ctx, cancel: func() {}}
	t.mu.observers[id] = p
	return p
}

func (t *NetTransport) refuse(key, msg string, args ...any) {
	t.refused.Add(1)
	t.warn.log(t.logger, key, msg, args...)
}

// trackConn registers an accepted connection, or refuses it when the transport is closed
// or at maxInboundConns.
func (t *NetTransport) trackConn(conn net.Conn) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.mu.closed {
		conn.Close()
		return false
	}
	if len(t.mu.conns) >= maxInboundConns {
		conn.Close()
		t.refused.Add(1)
		t.warn.log(t.logger, "refuse-too-many", "refused raft connection: too many connections", "limit", maxInboundConns)
		return false
	}
	t.mu.conns[conn] = struct{}{}
	t.wg.Add(1)
	return true
}

func (t *NetTransport) untrackConn(conn net.Conn) {
	conn.Close()
	t.mu.Lock()
	delete(t.mu.conns, conn)
	for id, c := range t.mu.inbound {
		if c == conn {
			delete(t.mu.inbound, id)
		}
	}
	t.mu.Unlock()
	t.wg.Done()
}

// setInbound records conn as from's connection, closing the one it replaces (the peer
// redialled, so the old one is dead or half-open).
func (t *NetTransport) setInbound(from int32, conn net.Conn) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if old := t.mu.inbound[from]; old != nil && old != conn {
		old.Close()
	}
	t.mu.inbound[from] = conn
}

// Close stops the senders, closes the listeners given to Serve and every connection, and
// waits for all of the transport's goroutines.
func (t *NetTransport) Close() error {
	t.cancel()
	t.mu.Lock()
	t.mu.closed = true
	for l := range t.mu.listeners {
		l.Close()
	}
	for c := range t.mu.conns {
		c.Close()
	}
	t.mu.Unlock()
	t.wg.Wait()
	return nil
}

// outItem is one queued message, already encoded (Send's messages are not ours to keep).
type outItem struct {
	frame    []byte // a frameMessage, or a frameSnapshot header
	snapshot bool
	snapData []byte // a snapshot's data, sent in chunks after the header; shared, never modified
}

// netPeer sends to one voter. Its queue is filled by Send and drained by run.
type netPeer struct {
	t    *NetTransport
	id   int32
	addr string
	wake chan struct{} // capacity 1: the queue became non-empty
	// ctx ends when the transport closes or the peer stops being a voter (SetPeers); an
	// observer's sender has the transport's.
	ctx    context.Context
	cancel context.CancelFunc

	drops     atomic.Uint64
	connected atomic.Bool
	// everConnected: a dial to the peer succeeded in this process, so a refused dial now
	// means its process is gone (Controller.ReportPeerGone).
	everConnected atomic.Bool

	mu struct {
		sync.Mutex
		// Invariant: len(queue) <= QueueMessages, bytes (sum of len(frame)) <= QueueBytes,
		// and at most one snapshot is queued (raft sends one at a time per follower).
		queue        []outItem
		bytes        int
		snapshotHeld bool
		// inbound is an observer's current connection (the one it dialled last), on which
		// this voter sends to it; nil while it is not connected. connected mirrors it.
		inbound net.Conn
	}
}

// attachInbound makes conn the observer's connection to send on.
func (p *netPeer) attachInbound(conn net.Conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.mu.inbound = conn
	p.connected.Store(true)
}

// detachInbound forgets conn, reporting whether it was still the current connection: the
// teardown of a connection the observer already replaced must leave the new one alone.
func (p *netPeer) detachInbound(conn net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.mu.inbound != conn {
		return false
	}
	p.mu.inbound = nil
	p.connected.Store(false)
	return true
}

func (p *netPeer) enqueue(it outItem) bool {
	p.mu.Lock()
	if len(p.mu.queue) >= p.t.cfg.QueueMessages || p.mu.bytes+len(it.frame) > p.t.cfg.QueueBytes || it.snapshot && p.mu.snapshotHeld {
		p.mu.Unlock()
		return false
	}
	p.mu.queue = append(p.mu.queue, it)
	p.mu.bytes += len(it.frame)
	p.mu.snapshotHeld = p.mu.snapshotHeld || it.snapshot
	p.mu.Unlock()
	select {
	case p.wake <- struct{}{}:
	default:
	}
	return true
}

// take removes and returns everything queued.
func (p *netPeer) take() []outItem {
	p.mu.Lock()
	defer p.mu.Unlock()
	q := p.mu.queue
	p.mu.queue, p.mu.bytes, p.mu.snapshotHeld = nil, 0, false
	return q
}

// lost accounts for items that will never be delivered: dropped, and a snapshot among them
// reported failed so that raft sends a fresh one later.
func (p *netPeer) lost(items []outItem) {
	for _, it := range items {
		p.drops.Add(1)
		if it.snapshot {
			p.t.reportSnapshot(p.id, true)
		}
	}
}

// run keeps a connection to the peer and streams the queue into it, redialling with
// exponential, jittered backoff.
func (p *netPeer) run() {
	t := p.t
	defer t.wg.Done()
	backoff := t.cfg.ReconnectBackoff
	for {
		conn, err := p.dial()
		if err == nil {
			backoff = t.cfg.ReconnectBackoff
			p.connected.Store(true)
			p.everConnected.Store(true)
			t.logger.Debug("connected to raft peer", "peer", p.id, "addr", p.addr)
			err = p.stream(conn, p.receive(conn))
			p.connected.Store(false)
		}
		if p.ctx.Err() != nil {
			return
		}
		t.reportUnreachable(p.id)
		if errors.Is(err, syscall.ECONNREFUSED) && p.everConnected.Load() {
			if c := t.ctrl.Load(); c != nil {
				c.ReportPeerGone(p.id)
			}
		}
		// What queued up meanwhile is stale by the time the peer is back (raft retransmits
		// what still matters), and a snapshot waiting for a connection would hold raft's
		// snapshot state for this follower as long as it is away: drop it all, so a dead
		// peer's queue holds at most one backoff period's messages.
		p.lost(p.take())
		t.warn.log(t.logger, fmt.Sprintf("peer-%d", p.id), "raft peer unreachable", "peer", p.id, "addr", p.addr, "err", err, "retry_in", backoff)
		delay := backoff/2 + rand.N(backoff/2+1) // jittered in [backoff/2, backoff]
		backoff = min(2*backoff, t.cfg.ReconnectBackoffMax)
		select {
		case <-time.After(delay):
		case <-p.ctx.Done():
			return
		}
	}
}

// dial connects and performs the handshake.
func (p *netPeer) dial() (net.Conn, error) {
	t := p.t
	d := net.Dialer{Timeout: t.cfg.DialTimeout, KeepAlive: 15 * time.Second}
	raw, err := d.DialContext(p.ctx, "tcp", p.addr)
	if err != nil {
		return nil, err
	}
	// Close unblocks a handshake or a write stuck on a peer that stopped reading.
	conn := &stoppableConn{Conn: raw, stop: context.AfterFunc(p.ctx, func() { raw.Close() })}
	conn.SetDeadline(time.Now().Add(t.cfg.DialTimeout))
	if t.cfg.TLS != nil {
		tc := tls.Client(raw, peerTLS(t.cfg.TLS, p.addr))
		if err := tc.HandshakeContext(p.ctx); err != nil {
			conn.Close()
			return nil, fmt.Errorf("tls handshake: %w", err)
		}
		conn.Conn = tc
	}
	if _, err := conn.Write(appendHello(nil, hello{from: t.cfg.NodeID, to: p.id, clusterID: t.clusterID()})); err != nil {
		conn.Close()
		return nil, err
	}
	if t.cfg.Authenticate != nil {
		if err := t.cfg.Authenticate(p.ctx, conn, p.addr); err != nil {
			conn.Close()
			return nil, fmt.Errorf("SASL: %w", err)
		}
	}
	status, err := readAck(conn)
	if err != nil {
		conn.Close()
		return nil, fmt.Errorf("handshake: %w", err)
	}
	if status != helloOK {
		conn.Close()
		text := helloStatusText[status]
		if text == "" {
			text = fmt.Sprintf("status %d", status)
		}
		return nil, fmt.Errorf("handshake refused by the peer: %s", text)
	}
	conn.SetDeadline(time.Time{})
	return conn, nil
}

// stoppableConn is an outbound connection that Close of the transport closes; closing it
// first disarms that.
type stoppableConn struct {
	net.Conn
	stop func() bool
}

func (c *stoppableConn) Close() error {
	c.stop()
	return c.Conn.Close()
}

var errPeerHungUp = errors.New("peer closed the connection")

// receive starts the reader of an outbound connection and returns a channel closed when the
// peer hung up. A voter sends nothing after its ack to another voter, so that reader
// discards; to an observer it sends its raft messages, which go to the controller.
func (p *netPeer) receive(conn net.Conn) <-chan struct{} {
	t := p.t
	hungUp := make(chan struct{})
	go func() {
		defer close(hungUp)
		// A voter sends nothing on a connection another voter dialled, but one that took
		// this node for an observer (before it was promoted to voter) still does: read
		// frames either way.
		fr := &frameReader{r: bufio.NewReaderSize(conn, 64<<10), from: raftID(p.id), to: raftID(t.cfg.NodeID)}
		for {
			m, err := fr.next()
			if err != nil {
				if errors.Is(err, ErrBadRaftFrame) {
					t.refuse(fmt.Sprintf("refuse-frame-%d", p.id), "closing raft connection: bad frame", "from", p.id, "err", err)
				}
				conn.Close()
				return
			}
			if t.partitioned(p.id) {
				continue
			}
			c := t.ctrl.Load()
			if c == nil {
				continue
			}
			if err := c.Step(t.ctx, m); err != nil {
				conn.Close()
				return
			}
		}
	}()
	return hungUp
}

// stream writes queued items to conn until a write fails, the peer hangs up (hungUp is
// closed by the connection's reader) or the transport closes. It closes conn.
func (p *netPeer) stream(conn net.Conn, hungUp <-chan struct{}) error {
	t := p.t
	defer func() {
		conn.Close()
		<-hungUp
	}()
	bw := bufio.NewWriterSize(conn, 64<<10)
	for {
		items := p.take()
		if len(items) == 0 {
			select {
			case <-p.wake:
				continue
			case <-hungUp:
				return errPeerHungUp
			case <-p.ctx.Done():
				return p.ctx.Err()
			}
		}
		for _, it := range items {
			if err := p.write(conn, bw, it); err != nil {
				p.lost(items) // the earlier ones may still sit in bw: lost as well
				return err
			}
		}
		conn.SetWriteDeadline(time.Now().Add(t.cfg.WriteTimeout))
		if err := bw.Flush(); err != nil {
			p.lost(items) // some may have reached the peer; raft copes with either
			return err
		}
		for _, it := range items {
			if it.snapshot {
				t.reportSnapshot(p.id, false)
			}
		}
	}
}

// write writes one item; each write gets its own deadline, so a large snapshot is limited
// per chunk, not as a whole.
func (p *netPeer) write(conn net.Conn, bw *bufio.Writer, it outItem) error {
	conn.SetWriteDeadline(time.Now().Add(p.t.cfg.WriteTimeout))
	if _, err := bw.Write(it.frame); err != nil {
		return err
	}
	for data := it.snapData; len(data) > 0; {
		n := min(len(data), snapshotChunkLen)
		h := chunkHeader(n)
		conn.SetWriteDeadline(time.Now().Add(p.t.cfg.WriteTimeout))
		if _, err := bw.Write(h[:]); err != nil {
			return err
		}
		if _, err := bw.Write(data[:n]); err != nil {
			return err
		}
		data = data[n:]
	}
	return nil
}

// logLimiter logs each kind of warning at most once per interval, counting what it
// suppressed. Keys are a fixed set of kinds (per peer at most), so its maps stay small.
type logLimiter struct {
	every time.Duration
	mu    struct {
		sync.Mutex
		last       map[string]time.Time
		suppressed map[string]int
	}
}

func (l *logLimiter) log(logger *slog.Logger, key, msg string, args ...any) {
	now := time.Now()
	l.mu.Lock()
	if l.mu.last == nil {
		l.mu.last, l.mu.suppressed = map[string]time.Time{}, map[string]int{}
	}
	if last, ok := l.mu.last[key]; ok && now.Sub(last) < l.every {
		l.mu.suppressed[key]++
		l.mu.Unlock()
		return
	}
	n := l.mu.suppressed[key]
	delete(l.mu.suppressed, key)
	l.mu.last[key] = now
	l.mu.Unlock()
	if n > 0 {
		args = append(args, "suppressed", n)
	}
	logger.Warn(msg, args...)
}

// IsRaftConnection reports whether a connection's first 4 bytes are the raft transport's
// magic, so a listener shared with Kafka clients (the controller listener) can hand it to
// ServeConn. No Kafka frame starts so: read as a request size, the magic is far above any
// limit.
func IsRaftConnection(prefix [4]byte) bool { return string(prefix[:]) == raftMagic }

// peerTLS is cfg with ServerName set to addr's host when cfg leaves it empty, so the peer's
// certificate is checked against the address dialled, as a Kafka client does.
func peerTLS(cfg *tls.Config, addr string) *tls.Config {
	if cfg.ServerName != "" {
		return cfg
	}
	c := cfg.Clone()
	if host, _, err := net.SplitHostPort(addr); err == nil {
		c.ServerName = host
	}
	return c
}
