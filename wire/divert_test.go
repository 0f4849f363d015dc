package wire

import (
	"bufio"
	"crypto/tls"
	"io"
	"net"
	"sluice/internal/testcerts"
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

// TestDivertOnTLSListener: on a TLS listener with Divert the handshake comes first and Divert
// sees the first bytes inside TLS: a raft-like connection is diverted with its stream intact
// and encrypted, a Kafka client over TLS is served, and a plaintext connection is neither.
func TestDivertOnTLSListener(t *testing.T) {
	ca := testcerts.NewCA()
	server := ca.Server()
	tlsCfg, err := BuildTLSConfig(TLSSettings{
		KeystoreType:             Setting{"ssl.keystore.type", "PEM"},
		KeystoreCertificateChain: Setting{"ssl.keystore.certificate.chain", string(server.CertPEM)},
		KeystoreKey:              Setting{"ssl.keystore.key", string(server.KeyPEM)},
	})
	if err != nil {
		t.Fatal(err)
	}
	diverted := make(chan []byte, 2)
	srv := startServer(t, Config{
		SecurityProtocol: "SSL",
		TLS:              tlsCfg,
		Divert:           func(prefix [4]byte) bool { return string(prefix[:]) == "SLCR" },
		DivertConn: func(nc net.Conn) {
			defer nc.Close()
			buf := make([]byte, 9)
			if _, err := io.ReadFull(nc, buf); err != nil {
				diverted <- nil
				return
			}
			diverted <- buf
		},
	}, nil)
	clientTLS := &tls.Config{RootCAs: ca.Pool(), ServerName: "127.0.0.1"}

	raft, err := tls.Dial("tcp", srv.Addr().String(), clientTLS)
	if err != nil {
		t.Fatal(err)
	}
	defer raft.Close()
	if _, err := raft.Write([]byte("SLCRhello")); err != nil {
		t.Fatal(err)
	}
	if got := string(<-diverted); got != "SLCRhello" {
		t.Fatalf("diverted TLS connection read %q, want the whole stream inside TLS", got)
	}

	// Plaintext raft magic is no TLS handshake: closed, not diverted.
	plain, err := net.Dial("tcp", srv.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	if _, err := plain.Write([]byte("SLCRhello")); err != nil {
		t.Fatal(err)
	}
	if _, err := plain.Read(make([]byte, 1)); err == nil {
		t.Fatal("a plaintext connection on the TLS diverting listener got an answer")
	}

	nc, err := tls.Dial("tcp", srv.Addr().String(), clientTLS)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	c := &rawClient{t: t, nc: nc, br: bufio.NewReader(nc)}
	resp := c.roundTrip(kmsg.NewPtrApiVersionsRequest()).(*kmsg.ApiVersionsResponse)
	if resp.ErrorCode != 0 || len(resp.ApiKeys) == 0 {
		t.Fatalf("a Kafka client over TLS on the diverting listener: %+v", resp)
	}
	select {
	case b := <-diverted:
		t.Fatalf("something else was diverted: %q", b)
	default:
	}
}
