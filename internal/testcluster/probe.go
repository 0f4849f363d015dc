package testcluster

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// maxResponseFrame bounds a response frame read by RoundTrip.
const maxResponseFrame = 64 << 20

// ProbeApiVersions sends ApiVersions v3 on a new connection to addr and checks error 0.
func ProbeApiVersions(addr string) error {
	conn, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return err
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(2 * time.Second))
	req := kmsg.NewPtrApiVersionsRequest()
	req.Version = 3
	req.ClientSoftwareName = "sluice-testcluster"
	req.ClientSoftwareVersion = "1"
	resp := kmsg.NewPtrApiVersionsResponse()
	if err := RoundTrip(conn, req, resp, 1); err != nil {
		return err
	}
	if resp.ErrorCode != 0 {
		return fmt.Errorf("ApiVersions error code %d", resp.ErrorCode)
	}
	if len(resp.ApiKeys) == 0 {
		return errors.New("ApiVersions listed no APIs")
	}
	return nil
}

// RoundTrip frames req (client id "testcluster"), writes it, and reads and decodes the
// response into resp (its version set from req's).
func RoundTrip(conn net.Conn, req kmsg.Request, resp kmsg.Response, correlationID int32) error {
	resp.SetVersion(req.GetVersion())
	frame := kmsg.NewRequestFormatter(kmsg.FormatterClientID("testcluster")).AppendRequest(nil, req, correlationID)
	if _, err := conn.Write(frame); err != nil {
		return err
	}
	var size [4]byte
	if _, err := io.ReadFull(conn, size[:]); err != nil {
		return err
	}
	n := int32(binary.BigEndian.Uint32(size[:]))
	if n < 4 || n > maxResponseFrame {
		return fmt.Errorf("response frame size %d out of range", n)
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(conn, body); err != nil {
		return err
	}
	if got := int32(binary.BigEndian.Uint32(body)); got != correlationID {
		return fmt.Errorf("correlation id %d, want %d", got, correlationID)
	}
	body = body[4:]
	// Response header v1 (flexible) carries tagged fields; ApiVersions always uses header v0.
	if resp.IsFlexible() && resp.Key() != 18 {
		if len(body) == 0 || body[0] != 0 {
			return fmt.Errorf("unexpected response header tagged fields % x", body[:min(len(body), 8)])
		}
		body = body[1:]
	}
	return resp.ReadFrom(body)
}
