package wire

import (
	"io"
	"net"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestDivertHandsOffClaimedConnections: on a listener with Divert, a connection whose first
// bytes Divert claims goes to DivertConn with those bytes intact, while Kafka clients on the
// same port are served as usual.
func TestDivertHandsOffClaimedConnections(t *testing.T) {
	diverted := make(chan []byte, 1)
	srv := startServer(t, Config{
		Divert: func(prefix [4]byte) bool { return string(prefix[:]) == "SLCR" },
		DivertConn: func(nc net.Conn) {
			defer nc.Close()
			buf := make([]byte, 9)
			_, err := io.ReadFull(nc, buf)
			if err != nil {
				t.Errorf("reading a diverted connection: %v", err)
			}
			diverted <- buf
		},
	}, nil)

	raft, err := net.Dial("tcp", srv.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer raft.Close()
	if _, err := raft.Write([]byte("SLCRhello")); err != nil {
		t.Fatal(err)
	}
	if got := string(<-diverted); got != "SLCRhello" {
		t.Fatalf("diverted connection read %q, want the whole stream from its first byte", got)
	}

	c := dial(t, srv)
	resp := c.roundTrip(kmsg.NewPtrApiVersionsRequest()).(*kmsg.ApiVersionsResponse)
	if resp.ErrorCode != 0 || len(resp.ApiKeys) == 0 {
		t.Fatalf("a Kafka client on the diverting listener: %+v", resp)
	}
}
