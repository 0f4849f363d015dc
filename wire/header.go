package wire

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"

	"github.com/twmb/franz-go/pkg/kmsg"
)

const (
	keyControlledShutdown int16 = 7
	keyApiVersions        int16 = 18

	errUnsupportedVersion int16 = 35 // UNSUPPORTED_VERSION
)

// UnsupportedError is returned by decodeRequest for an API key the broker does not implement or
// a version outside its advertised range. Only the fixed header prefix has been read.
type UnsupportedError struct {
	Key, Version  int16
	CorrelationID int32
}

func (e *UnsupportedError) Error() string {
	return fmt.Sprintf("wire: unsupported api key %d version %d", e.Key, e.Version)
}

// MalformedError is returned by decodeRequest when the request header or body does not decode.
type MalformedError struct {
	Key, Version int16
	Err          error
}

func (e *MalformedError) Error() string {
	return fmt.Sprintf("wire: malformed request key %d version %d: %v", e.Key, e.Version, e.Err)
}

func (e *MalformedError) Unwrap() error { return e.Err }

var errShortHeader = errors.New("request header truncated")

// versionTable is an immutable lookup of Config.Versions, indexed by api key.
type versionTable struct {
	byKey []VersionRange // byKey[k].Key == k for supported keys, -1 otherwise
	list  []VersionRange
}

func newVersionTable(list []VersionRange) *versionTable {
	t := &versionTable{list: list}
	for _, r := range list {
		if r.Key < 0 || r.Min < 0 || r.Min > r.Max {
			continue
		}
		for int(r.Key) >= len(t.byKey) {
			t.byKey = append(t.byKey, VersionRange{Key: -1})
		}
		t.byKey[r.Key] = r
	}
	return t
}

// lookup returns the range for key, if supported.
func (t *versionTable) lookup(key int16) (VersionRange, bool) {
	if key < 0 || int(key) >= len(t.byKey) || t.byKey[key].Key != key {
		return VersionRange{}, false
	}
	return t.byKey[key], true
}

func (t *versionTable) supports(key, version int16) bool {
	r, ok := t.lookup(key)
	return ok && version >= r.Min && version <= r.Max
}

// decodeRequest decodes one frame (without its size prefix): the request header, v1 or v2
// depending on whether the request is flexible at its version (v0 for ControlledShutdown v0),
// and then the body. The body aliases frame. Trailing bytes after the body are ignored, as kmsg
// and Kafka ignore them. Errors are *UnsupportedError or *MalformedError; it never panics.
func decodeRequest(frame []byte, vt *versionTable) (req *Request, err error) {
	if len(frame) < minFrameSize {
		return nil, &MalformedError{Key: -1, Version: -1, Err: errShortHeader}
	}
	key := int16(binary.BigEndian.Uint16(frame[0:]))
	version := int16(binary.BigEndian.Uint16(frame[2:]))
	defer func() {
		// kmsg's decoders check their bounds; this is the last line of "never panic on input".
		if r := recover(); r != nil {
			req, err = nil, &MalformedError{Key: key, Version: version, Err: fmt.Errorf("decoder panic: %v", r)}
		}
	}()
	return decodeRequestUnrecovered(frame, vt)
}

// decodeRequestUnrecovered is decodeRequest without the recover, so the fuzz target sees panics.
func decodeRequestUnrecovered(frame []byte, vt *versionTable) (*Request, error) {
	if len(frame) < minFrameSize {
		return nil, &MalformedError{Key: -1, Version: -1, Err: errShortHeader}
	}
	key := int16(binary.BigEndian.Uint16(frame[0:]))
	version := int16(binary.BigEndian.Uint16(frame[2:]))
	correlationID := int32(binary.BigEndian.Uint32(frame[4:]))
	body := kmsg.RequestForKey(key)
	if !vt.supports(key, version) || body == nil || version > body.MaxVersion() {
		return nil, &UnsupportedError{Key: key, Version: version, CorrelationID: correlationID}
	}
	body.SetVersion(version)
	req := &Request{Key: key, Version: version, CorrelationID: correlationID, Body: body}
	rest := frame[minFrameSize:]
	malformed := func(err error) (*Request, error) {
		return nil, &MalformedError{Key: key, Version: version, Err: err}
	}
	// ControlledShutdown v0 used header v0, which has no client id.
	if key != keyControlledShutdown || version != 0 {
		var ok bool
		if req.ClientID, rest, ok = readNullableString(rest); !ok {
			return malformed(errShortHeader)
		}
		// Header v2 (flexible) ends in tagged fields; we know none, so they are skipped.
		if body.IsFlexible() {
			if rest, ok = skipTags(rest); !ok {
				return malformed(errShortHeader)
			}
		}
	}
	if err := body.ReadFrom(rest); err != nil {
		return malformed(err)
	}
	return req, nil
}

// readNullableString reads an int16-length string; -1 is null. The client id is never a compact
// string, even in header v2 (so that old brokers can read an ApiVersions header).
func readNullableString(b []byte) (*string, []byte, bool) {
	if len(b) < 2 {
		return nil, nil, false
	}
	n := int(int16(binary.BigEndian.Uint16(b)))
	b = b[2:]
	if n == -1 {
		return nil, b, true
	}
	if n < 0 || n > len(b) {
		return nil, nil, false
	}
	s := string(b[:n])
	return &s, b[n:], true
}

// skipTags skips a tagged-field section: a uvarint count, then per field a uvarint tag, a uvarint
// size and that many bytes.
func skipTags(b []byte) ([]byte, bool) {
	count, b, ok := readUvarint(b)
	if !ok {
		return nil, false
	}
	for ; count > 0; count-- {
		var size uint64
		if _, b, ok = readUvarint(b); !ok {
			return nil, false
		}
		if size, b, ok = readUvarint(b); !ok || size > uint64(len(b)) {
			return nil, false
		}
		b = b[size:]
	}
	return b, true
}

func readUvarint(b []byte) (uint64, []byte, bool) {
	v, n := binary.Uvarint(b)
	if n <= 0 || v > math.MaxUint32 {
		return 0, nil, false
	}
	return v, b[n:], true
}

// appendResponse appends one response frame: size, correlation id, the response header's tagged
// fields when the response is flexible (header v1), then the body. ApiVersions responses always
// use header v0, even when flexible, so that a client can read them before it knows our
// versions (KIP-511). resp's version must already be set.
func appendResponse(dst []byte, correlationID int32, resp kmsg.Response) ([]byte, error) {
	start := len(dst)
	dst = append(dst, 0, 0, 0, 0)
	dst = binary.BigEndian.AppendUint32(dst, uint32(correlationID))
	if resp.IsFlexible() && resp.Key() != keyApiVersions {
		dst = append(dst, 0) // no header tags
	}
	dst = resp.AppendTo(dst)
	size := len(dst) - start - 4
	if size > math.MaxInt32 {
		return dst[:start], fmt.Errorf("wire: response of %d bytes does not fit a frame", size)
	}
	binary.BigEndian.PutUint32(dst[start:], uint32(size))
	return dst, nil
}

// unsupportedApiVersionsResponse is Kafka's answer to an ApiVersions request at a version it does
// not know: a v0 response with UNSUPPORTED_VERSION whose key list holds only ApiVersions' own
// range (KIP-511, Kafka's ApiVersionsRequest.getErrorResponse), so the client retries at the
// highest version we support. franz-go only downgrades when the list is exactly that one entry;
// the Java client and librdkafka look up key 18 in the list.
func unsupportedApiVersionsResponse(vt *versionTable) *kmsg.ApiVersionsResponse {
	resp := kmsg.NewPtrApiVersionsResponse()
	resp.SetVersion(0)
	resp.ErrorCode = errUnsupportedVersion
	if r, ok := vt.lookup(keyApiVersions); ok {
		resp.ApiKeys = []kmsg.ApiVersionsResponseApiKey{{ApiKey: r.Key, MinVersion: r.Min, MaxVersion: r.Max}}
	}
	return resp
}
