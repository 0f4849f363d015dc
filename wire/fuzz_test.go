package wire

import (
	"bytes"
	"testing"

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
			frame, err := readFrame(r, 1<<20, nil)
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
