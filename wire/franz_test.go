package wire

import (
	"context"
	"net"
	"sync"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// recordingBroker is a fakeBroker that remembers which version of each key it was asked.
type recordingBroker struct {
	fakeBroker
	mu   sync.Mutex
	seen map[int16][]int16
}

func (b *recordingBroker) Handle(ctx context.Context, req *Request, respond Respond) {
	b.mu.Lock()
	if b.seen == nil {
		b.seen = make(map[int16][]int16)
	}
	b.seen[req.Key] = append(b.seen[req.Key], req.Version)
	b.mu.Unlock()
	b.fakeBroker.Handle(ctx, req, respond)
}

func (b *recordingBroker) versionsSeen(key int16) []int16 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]int16(nil), b.seen[key]...)
}

// TestFranzGoClient drives the server with a real franz-go client: ApiVersions (flexible request
// header v2, response header v0) and then Metadata at the highest version both sides know
// (flexible request and response headers).
func TestFranzGoClient(t *testing.T) {
	for _, tc := range []struct {
		name           string
		apiVersionsMax int16
	}{
		{"current", 4},
		// The client's first ApiVersions is above our max: it gets the v0 UNSUPPORTED_VERSION
		// answer and must retry at our max.
		{"downgrade", 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			versions := func() []VersionRange {
				vs := testVersions()
				for i := range vs {
					if vs[i].Key == keyApiVersions {
						vs[i].Max = tc.apiVersionsMax
					}
				}
				return vs
			}
			var srv *Server
			h := &recordingBroker{fakeBroker: fakeBroker{versions: versions(), addr: func() net.Addr { return srv.Addr() }}}
			srv = startServer(t, Config{Versions: versions}, h)

			cl, err := kgo.NewClient(kgo.SeedBrokers(srv.Addr().String()), kgo.ClientID("wire-franz-test"))
			if err != nil {
				t.Fatal(err)
			}
			defer cl.Close()
			ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
			defer cancel()
			resp, err := cl.Request(ctx, kmsg.NewPtrMetadataRequest())
			if err != nil {
				t.Fatalf("metadata through franz-go: %v", err)
			}
			meta := resp.(*kmsg.MetadataResponse)
			if meta.ClusterID == nil || *meta.ClusterID != "sluice-wire-test" || len(meta.Brokers) != 1 {
				t.Fatalf("unexpected metadata: cluster %v brokers %+v", meta.ClusterID, meta.Brokers)
			}
			if got := h.versionsSeen(3); len(got) == 0 || got[0] != 12 {
				t.Fatalf("metadata versions seen %v, want 12 first (flexible)", got)
			}
			// Our ApiVersions handler only ever sees supported versions; the first must be our
			// max (directly, or after the v0 fallback).
			if got := h.versionsSeen(keyApiVersions); len(got) == 0 || got[0] != tc.apiVersionsMax {
				t.Fatalf("ApiVersions versions seen %v, want %d first", got, tc.apiVersionsMax)
			}

			// And through the connection to the broker the metadata named (ourselves).
			if _, err := cl.Broker(1).Request(ctx, kmsg.NewPtrMetadataRequest()); err != nil {
				t.Fatalf("request to discovered broker: %v", err)
			}
		})
	}
}
