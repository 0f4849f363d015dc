package broker

import (
	"context"
	"sort"

	"github.com/twmb/franz-go/pkg/kmsg"

	"sluice/wire"
)

// api is one Kafka API as this broker serves it.
type api struct {
	key, minVersion, maxVersion int16
	// handle serves the request and calls respond exactly once, possibly later.
	handle func(b *Broker, ctx context.Context, req *wire.Request, respond wire.Respond)
}

// apis is the API table, filled by the init functions of the NN_name.go files.
var apis = map[int16]api{}

// register adds a handler that may answer later (produce, fetch).
func register(key, minVersion, maxVersion int16, handle func(b *Broker, ctx context.Context, req *wire.Request, respond wire.Respond)) {
	if maxVersion > kmsg.RequestForKey(key).MaxVersion() {
		panic("broker: advertising a version kmsg cannot decode")
	}
	if _, dup := apis[key]; dup {
		panic("broker: API registered twice: " + kmsg.NameForKey(key))
	}
	apis[key] = api{key: key, minVersion: minVersion, maxVersion: maxVersion, handle: handle}
}

// registerSync adds a handler that answers before it returns.
func registerSync[Req kmsg.Request](key, minVersion, maxVersion int16, handle func(b *Broker, ctx context.Context, conn *wire.ConnInfo, req Req) (kmsg.Response, error)) {
	register(key, minVersion, maxVersion, func(b *Broker, ctx context.Context, req *wire.Request, respond wire.Respond) {
		typed, ok := req.Body.(Req)
		if !ok {
			respond(nil, errUnexpectedBody)
			return
		}
		respond(handle(b, ctx, req.Conn, typed))
	})
}

// Versions lists the APIs and versions this broker implements, sorted by key.
func Versions() []wire.VersionRange {
	out := make([]wire.VersionRange, 0, len(apis))
	for _, a := range apis {
		out = append(out, wire.VersionRange{Key: a.key, Min: a.minVersion, Max: a.maxVersion})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out
}
