package wire

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"runtime"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestDecodeRequestHeaders(t *testing.T) {
	vt := newVersionTable(allKmsgVersions())
	frameOf := func(req kmsg.Request, v int16) []byte {
		req.SetVersion(v)
		return encodeRequest(req, 99)[4:]
	}
	// Metadata v12 with a header tag section holding one 2-byte tag.
	withTags := frameOf(kmsg.NewPtrMetadataRequest(), 12)
	tagAt := 8 + 2 + len("wire-test")
	withTags = append(append(append([]byte{}, withTags[:tagAt]...), 1, 5, 2, 'x', 'y'), withTags[tagAt+1:]...)
	nullClient := frameOf(kmsg.NewPtrMetadataRequest(), 1)
	nullClient = append(append([]byte{}, nullClient[:8]...), append([]byte{0xff, 0xff}, nullClient[8+2+len("wire-test"):]...)...)

	for _, tc := range []struct {
		name     string
		frame    []byte
		key, ver int16
		clientID *string
	}{
		{"header v1", frameOf(kmsg.NewPtrMetadataRequest(), 8), 3, 8, kmsg.StringPtr("wire-test")},
		{"header v2", frameOf(kmsg.NewPtrMetadataRequest(), 9), 3, 9, kmsg.StringPtr("wire-test")},
		{"header v2 with tags", withTags, 3, 12, kmsg.StringPtr("wire-test")},
		{"null client id", nullClient, 3, 1, nil},
		{"ApiVersions v3 header v2", frameOf(kmsg.NewPtrApiVersionsRequest(), 3), 18, 3, kmsg.StringPtr("wire-test")},
		// kmsg's formatter writes no body for this one, so build it by hand: header v0 has no
		// client id.
		{"ControlledShutdown v0 header v0", []byte{0, 7, 0, 0, 0, 0, 0, 99, 0, 0, 0, 1}, 7, 0, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, err := decodeRequest(tc.frame, vt)
			if err != nil {
				t.Fatal(err)
			}
			if req.Key != tc.key || req.Version != tc.ver || req.CorrelationID != 99 {
				t.Fatalf("got key %d v%d corr %d", req.Key, req.Version, req.CorrelationID)
			}
			if (req.ClientID == nil) != (tc.clientID == nil) || req.ClientID != nil && *req.ClientID != *tc.clientID {
				t.Fatalf("client id %v, want %v", req.ClientID, tc.clientID)
			}
			if req.Body.GetVersion() != tc.ver {
				t.Fatalf("body version %d", req.Body.GetVersion())
			}
		})
	}
}

func TestDecodeRequestErrors(t *testing.T) {
	vt := newVersionTable(testVersions())
	meta := encodeRequest(metadataRequest(12), 7)[4:]
	var unsupported *UnsupportedError
	var malformed *MalformedError
	_, err := decodeRequest(append([]byte{0, 1}, meta[2:]...), vt) // Fetch: not in testVersions
	if !errors.As(err, &unsupported) || unsupported.Key != 1 || unsupported.CorrelationID != 7 {
		t.Fatalf("fetch: %v", err)
	}
	_, err = decodeRequest(meta[:len(meta)-1], vt)
	if !errors.As(err, &malformed) || malformed.Key != 3 {
		t.Fatalf("truncated body: %v", err)
	}
	if _, err = decodeRequest(meta[:9], vt); !errors.As(err, &malformed) {
		t.Fatalf("truncated header: %v", err)
	}
}

func TestAppendResponseHeaders(t *testing.T) {
	for _, tc := range []struct {
		name    string
		resp    kmsg.Response
		version int16
		tagByte bool
	}{
		{"metadata v8 header v0", kmsg.NewPtrMetadataResponse(), 8, false},
		{"metadata v9 header v1", kmsg.NewPtrMetadataResponse(), 9, true},
		{"ApiVersions v3 header v0 though flexible", kmsg.NewPtrApiVersionsResponse(), 3, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.resp.SetVersion(tc.version)
			got, err := appendResponse([]byte("prefix"), 1234, tc.resp)
			if err != nil {
				t.Fatal(err)
			}
			got = got[len("prefix"):]
			body := tc.resp.AppendTo(nil)
			want := binary.BigEndian.AppendUint32(nil, 0)
			want = binary.BigEndian.AppendUint32(want, 1234)
			if tc.tagByte {
				want = append(want, 0)
			}
			want = append(want, body...)
			binary.BigEndian.PutUint32(want, uint32(len(want)-4))
			if !bytes.Equal(got, want) {
				t.Fatalf("got %x\nwant %x", got, want)
			}
		})
	}
}

func TestReadFrame(t *testing.T) {
	sized := func(n int32, rest ...byte) []byte {
		return append(binary.BigEndian.AppendUint32(nil, uint32(n)), rest...)
	}
	for _, tc := range []struct {
		name  string
		input []byte
		want  []byte
		err   func(error) bool
	}{
		{"ok", sized(8, 1, 2, 3, 4, 5, 6, 7, 8, 9), []byte{1, 2, 3, 4, 5, 6, 7, 8}, nil},
		{"clean EOF", nil, nil, func(err error) bool { return err == io.EOF }},
		{"EOF in size", []byte{0, 0}, nil, func(err error) bool { return err == io.ErrUnexpectedEOF }},
		{"EOF in body", sized(10, 1, 2), nil, func(err error) bool { return err == io.ErrUnexpectedEOF }},
		{"negative", sized(-1), nil, isFrameSizeError},
		{"too small", sized(7, 1, 2, 3, 4, 5, 6, 7), nil, isFrameSizeError},
		{"too large", sized(1001), nil, isFrameSizeError},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := readFrame(bytes.NewReader(tc.input), 1000, nil, nil)
			if tc.err != nil {
				if !tc.err(err) {
					t.Fatalf("error %v", err)
				}
				return
			}
			if err != nil || !bytes.Equal(got, tc.want) {
				t.Fatalf("got %x, %v", got, err)
			}
		})
	}
}

func isFrameSizeError(err error) bool {
	var fe *FrameSizeError
	return errors.As(err, &fe)
}

// TestReadFrameAllocatesWhatArrives: a client declaring a 100 MB frame and sending a few bytes
// costs one chunk (largeFrameChunk), not 100 MB.
func TestReadFrameAllocatesWhatArrives(t *testing.T) {
	input := append(binary.BigEndian.AppendUint32(nil, 100<<20), make([]byte, 1000)...)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err := readFrame(bytes.NewReader(input), 100<<20, nil, nil)
	runtime.ReadMemStats(&after)
	if err != io.ErrUnexpectedEOF {
		t.Fatalf("error %v", err)
	}
	if allocated := after.TotalAlloc - before.TotalAlloc; allocated > 2*largeFrameChunk {
		t.Fatalf("allocated %d bytes for a frame that sent 1000", allocated)
	}
	// And a large frame that does arrive is read whole.
	big := make([]byte, pooledFrameMax+3*largeFrameChunk+5)
	for i := range big {
		big[i] = byte(i)
	}
	got, err := readFrame(bytes.NewReader(append(binary.BigEndian.AppendUint32(nil, uint32(len(big))), big...)), 100<<20, nil, nil)
	if err != nil || !bytes.Equal(got, big) {
		t.Fatalf("large frame: %v", err)
	}
}
