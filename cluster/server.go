package cluster

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"sluice/authz"
	"sluice/controller"
	"sluice/wire"
)

// ServerConfig configures a Server.
type ServerConfig struct {
	// Controller is this node's member of the quorum. Required.
	Controller *controller.Controller
	// Voters are the controller listener addresses (host:port) of the quorum's voters, by node
	// ID: DescribeCluster's controller endpoints and DescribeQuorum's nodes.
	Voters map[int32]string
	// ListenerName is the controller listener's name (controller.listener.names' first):
	// AddRaftVoter records the new voter's listener of that name.
	ListenerName string
	// Defaults for a CreateTopics sent by a client with -1 (num.partitions and
	// default.replication.factor; 0 = 1). Link resolves them before it forwards.
	DefaultNumPartitions     int32
	DefaultReplicationFactor int16
	// Authorizer, when set (authorizer.class.name), authorizes every request against the
	// ACLs of Controller's image (authorize.go); nil allows everything.
	Authorizer *authz.Authorizer
	Logger     *slog.Logger
}

// Server answers Kafka requests on the controller listener (see the package doc).
type Server struct {
	cfg            ServerConfig
	log            *slog.Logger
	heartbeatConns heartbeatConns
}

// NewServer returns the handler of the controller listener.
func NewServer(cfg ServerConfig) (*Server, error) {
	if cfg.Controller == nil {
		return nil, errors.New("cluster: ServerConfig.Controller is nil")
	}
	if cfg.DefaultNumPartitions <= 0 {
		cfg.DefaultNumPartitions = 1
	}
	if cfg.DefaultReplicationFactor <= 0 {
		cfg.DefaultReplicationFactor = 1
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return &Server{cfg: cfg, log: cfg.Logger}, nil
}

// api is one API the server answers.
type api struct {
	key, min, max int16
	handle        func(s *Server, ctx context.Context, req kmsg.Request) (kmsg.Response, error)
}

var apis = map[int16]api{}

func register[Req kmsg.Request](key, minVersion, maxVersion int16, handle func(s *Server, ctx context.Context, req Req) (kmsg.Response, error)) {
	if maxVersion > kmsg.RequestForKey(key).MaxVersion() {
		panic("cluster: advertising a version kmsg cannot decode")
	}
	if _, dup := apis[key]; dup {
		panic("cluster: API registered twice: " + kmsg.NameForKey(key))
	}
	apis[key] = api{key, minVersion, maxVersion, func(s *Server, ctx context.Context, req kmsg.Request) (kmsg.Response, error) {
		typed, ok := req.(Req)
		if !ok {
			return nil, fmt.Errorf("cluster: unexpected body %T for key %d", req, key)
		}
		return handle(s, ctx, typed)
	}}
}

// ServerVersions lists the APIs and versions Server implements, sorted by key: the
// wire.Config.Versions of the controller listener.
func ServerVersions() []wire.VersionRange {
	out := make([]wire.VersionRange, 0, len(apis))
	for _, a := range apis {
		out = append(out, wire.VersionRange{Key: a.key, Min: a.min, Max: a.max})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out
}

// Handle implements wire.Handler. Every API answers before Handle returns; a proposal waits
// for its commit, bounded by the request's timeout or adminTimeout.
func (s *Server) Handle(ctx context.Context, req *wire.Request, respond wire.Respond) {
	a, ok := apis[req.Key]
	if !ok {
		respond(nil, fmt.Errorf("cluster: API %d is not served on the controller listener", req.Key))
		return
	}
	refused, finish := s.authorize(req)
	if refused != nil {
		req.ReleaseFrame()
		respond(refused, nil)
		return
	}
	resp, err := a.handle(s, ctx, req.Body)
	if err == nil && finish != nil {
		finish(resp)
	}
	req.ReleaseFrame()
	respond(resp, err)
}

// adminTimeout is how long a proposal may wait when its request gives no timeout.
const adminTimeout = 30 * time.Second

func withTimeout(ctx context.Context, millis int32) (context.Context, context.CancelFunc) {
	d := adminTimeout
	if millis > 0 {
		d = time.Duration(millis) * time.Millisecond
	}
	return context.WithTimeout(ctx, d)
}

// callError and itemError translate a controller call's outcome into response codes
// (controller.CallError, controller.ResultError: one translation for the broker and
// controller listeners).
var (
	callError = controller.CallError
	itemError = controller.ResultError
)

// offsetTag is the tagged field carrying the metadata offset of a proposal's outcome.
const offsetTag = 0x5C01

// setOffset records the published offset in a response's tags.
func setOffset(tags *kmsg.Tags, offset int64) {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], uint64(offset))
	tags.Set(offsetTag, b[:])
}

// offsetOf returns the offset setOffset recorded, or -1.
func offsetOf(tags *kmsg.Tags) int64 {
	off := int64(-1)
	tags.Each(func(k uint32, v []byte) {
		if k == offsetTag && len(v) == 8 {
			off = int64(binary.BigEndian.Uint64(v))
		}
	})
	return off
}

func strPtr(s string) *string { return &s }
