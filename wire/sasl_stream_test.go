package wire

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

// TestSASLStream: the client and server sides of the exchange a diverted connection (raft
// between controllers) runs authenticate a good PLAIN or SCRAM credential, with the session's
// end from connections.max.reauth.ms, and refuse a wrong password and a mechanism the
// listener does not enable, both sides saying so with ErrStreamAuthentication.
func TestSASLStream(t *testing.T) {
	cred, err := NewScramCredential("SCRAM-SHA-512", "node-secret", 4096)
	if err != nil {
		t.Fatal(err)
	}
	cfg := &SASLConfig{
		Mechanisms: []string{"PLAIN", "SCRAM-SHA-512"},
		PlainUsers: map[string]string{"node": "node-secret"},
		Scram:      map[string]map[string]ScramCredential{"SCRAM-SHA-512": {"node": cred}},
		MaxReauth:  time.Hour,
	}
	run := func(cfg *SASLConfig, mech sasl.Mechanism) (StreamSession, error, error) {
		client, server := net.Pipe()
		defer client.Close()
		type result struct {
			s   StreamSession
			err error
		}
		served := make(chan result, 1)
		go func() {
			s, err := cfg.ServeSASLStream(server, server)
			server.Close() // as the transport does on an error; harmless after success here
			served <- result{s, err}
		}()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		clientErr := AuthenticateSASLStream(ctx, client, mech, "127.0.0.1:9093")
		r := <-served
		return r.s, r.err, clientErr
	}
	for _, mech := range []sasl.Mechanism{
		plain.Auth{User: "node", Pass: "node-secret"}.AsMechanism(),
		scram.Auth{User: "node", Pass: "node-secret"}.AsSha512Mechanism(),
	} {
		before := time.Now()
		s, serverErr, clientErr := run(cfg, mech)
		if serverErr != nil || clientErr != nil {
			t.Fatalf("%s: server %v, client %v", mech.Name(), serverErr, clientErr)
		}
		if s.Principal != "User:node" || s.Mechanism != mech.Name() || s.Expires.Before(before.Add(time.Hour)) {
			t.Errorf("%s: session %+v, want User:node ending in an hour", mech.Name(), s)
		}
	}
	for _, tc := range []struct {
		name string
		mech sasl.Mechanism
	}{
		{"wrong PLAIN password", plain.Auth{User: "node", Pass: "guess"}.AsMechanism()},
		{"wrong SCRAM password", scram.Auth{User: "node", Pass: "guess"}.AsSha512Mechanism()},
		{"unknown user", scram.Auth{User: "mallory", Pass: "node-secret"}.AsSha512Mechanism()},
		{"mechanism not enabled", scram.Auth{User: "node", Pass: "node-secret"}.AsSha256Mechanism()},
	} {
		_, serverErr, clientErr := run(cfg, tc.mech)
		if !errors.Is(serverErr, ErrStreamAuthentication) || !errors.Is(clientErr, ErrStreamAuthentication) {
			t.Errorf("%s: server %v, client %v; want both refused", tc.name, serverErr, clientErr)
		}
	}
}

// TestSASLStreamRefusesOtherBytes: a server expecting the exchange closes on anything else (a
// raft frame from a peer that does not authenticate, an oversized frame) without answering,
// and a client whose peer does not run SASL gets an error that says so.
func TestSASLStreamRefusesOtherBytes(t *testing.T) {
	cfg := &SASLConfig{Mechanisms: []string{"PLAIN"}, PlainUsers: map[string]string{"node": "pw"}, MaxReceiveBytes: 1024}
	for name, send := range map[string][]byte{
		"raft frame":      {0, 0, 0, 9, 1, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff},
		"oversized frame": {0, 0, 0x10, 0, 0, 17, 0, 1},
	} {
		client, server := net.Pipe()
		served := make(chan error, 1)
		go func() {
			_, err := cfg.ServeSASLStream(server, server)
			server.Close()
			served <- err
		}()
		go client.Write(send)
		got := make([]byte, 1)
		if n, _ := client.Read(got); n != 0 {
			t.Errorf("%s: the server answered", name)
		}
		if err := <-served; err == nil {
			t.Errorf("%s: accepted", name)
		}
		client.Close()
	}
	// A peer answering with a raft ack instead of a SASL response.
	client, server := net.Pipe()
	defer client.Close()
	go func() {
		buf := make([]byte, 512)
		_, _ = server.Read(buf)
		_, _ = server.Write([]byte("SLCR\x01\x00"))
		server.Close()
	}()
	err := AuthenticateSASLStream(context.Background(), client, plain.Auth{User: "node", Pass: "pw"}.AsMechanism(), "x:1")
	if err == nil || errors.Is(err, ErrStreamAuthentication) {
		t.Fatalf("a peer without SASL: %v", err)
	}
}
