package wire

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// allKmsgVersions claims every key and version kmsg can decode, so the fuzzer reaches every
// request decoder.
func allKmsgVersions() []VersionRange {
	var vs []VersionRange
	for key := int16(0); key < 256; key++ {
		if req := kmsg.RequestForKey(key); req != nil {
			vs = append(vs, VersionRange{Key: key, Min: 0, Max: req.MaxVersion()})
		}
	}
	return vs
}

// FuzzDecodeRequest feeds arbitrary bytes through frame reading and request header + body
// decoding, as a connection would. Seeds are in testdata/fuzz/FuzzDecodeRequest.
func FuzzDecodeRequest(f *testing.F) {
	vt := newVersionTable(allKmsgVersions())
	f.Fuzz(func(t *testing.T, data []byte) {
		r := bytes.NewReader(data)
		for {
			frame, err := readFrame(r, 1<<20, nil, nil)
			if err != nil {
				return
			}
			if len(frame) > len(data) {
				t.Fatalf("frame of %d bytes from %d bytes of input", len(frame), len(data))
			}
			req, err := decodeRequestUnrecovered(frame, vt)
			if err != nil {
				return
			}
			if req.Body.GetVersion() != req.Version || req.Body.Key() != req.Key {
				t.Fatalf("decoded key %d v%d into %T v%d", req.Key, req.Version, req.Body, req.Body.GetVersion())
			}
			// What decodes must re-encode, and its response must encode too.
			_ = req.Body.AppendTo(nil)
			resp := req.Body.ResponseKind()
			resp.SetVersion(req.Version)
			if _, err := appendResponse(nil, req.CorrelationID, resp); err != nil {
				t.Fatal(err)
			}
		}
	})
}

// echoKindHandler answers every request with an empty response of its kind (nothing for an
// acks=0 produce).
type echoKindHandler struct{}

func (echoKindHandler) Handle(_ context.Context, req *Request, respond Respond) {
	// Every request's frame goes back to the pool (twice, as a careless handler might), so
	// the fuzzer also drives frame reuse and the in-flight byte accounting.
	p, isProduce := req.Body.(*kmsg.ProduceRequest)
	resp := req.Body.ResponseKind()
	req.ReleaseFrame()
	req.ReleaseFrame()
	if isProduce && p.Acks == 0 {
		respond(nil, nil)
		return
	}
	respond(resp, nil)
}

// FuzzConnection sends arbitrary bytes to a live Server on one connection, then half-closes it:
// whatever the bytes, the server must answer what it can and then close the connection (no
// panic, no wedge), and keep serving others. It shares the seeds of FuzzDecodeRequest.
func FuzzConnection(f *testing.F) {
	addSeedsFrom(f, "testdata/fuzz/FuzzDecodeRequest")
	srv, err := Listen(Config{
		Addr:               "127.0.0.1:0",
		Versions:           allKmsgVersions,
		MaxRequestBytes:    1 << 20,
		MaxInFlightPerConn: 4,
		IdleTimeout:        waitLimit,
		Logger:             discardLogger(),
	}, echoKindHandler{})
	if err != nil {
		f.Fatal(err)
	}
	defer srv.Shutdown(context.Background())
	f.Fuzz(func(t *testing.T, data []byte) {
		nc, err := net.Dial("tcp", srv.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer nc.Close()
		go func() {
			_, _ = nc.Write(data)
			_ = nc.(*net.TCPConn).CloseWrite()
		}()
		_ = nc.SetReadDeadline(time.Now().Add(waitLimit))
		_, err = io.Copy(io.Discard, nc)
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			t.Fatalf("connection not closed %v after the client finished sending", waitLimit)
		}
	})
}

// addSeedsFrom adds another fuzz target's corpus files as seeds.
func addSeedsFrom(f *testing.F, dir string) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		f.Fatal(err)
	}
	for _, e := range entries {
		raw, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			f.Fatal(err)
		}
		lines := strings.SplitN(string(raw), "\n", 3)
		if len(lines) < 2 || !strings.HasPrefix(lines[1], "[]byte(") || !strings.HasSuffix(lines[1], ")") {
			f.Fatalf("%s: not a []byte corpus file", e.Name())
		}
		s, err := strconv.Unquote(strings.TrimSuffix(strings.TrimPrefix(lines[1], "[]byte("), ")"))
		if err != nil {
			f.Fatalf("%s: %v", e.Name(), err)
		}
		f.Add([]byte(s))
	}
}
