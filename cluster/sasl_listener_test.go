package cluster

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/plain"

	"sluice/controller"
	"sluice/wire"
)

// TestSASLControllerListener: a SASL_PLAINTEXT controller listener serves a client that
// authenticates first, as a broker's link to the controllers does: ApiVersions lists the SASL
// APIs and the exchange completes, then the controller's APIs answer. Before the listener
// registered SaslHandshake and SaslAuthenticate, the wire layer refused them as unsupported
// and closed the connection, so no broker could register with SASL controllers.
func TestSASLControllerListener(t *testing.T) {
	c, err := controller.Start(controller.Config{NodeID: 1, Dir: t.TempDir(), Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	s, err := NewServer(ServerConfig{Controller: c, Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := wire.Listen(wire.Config{Addr: "127.0.0.1:0", ListenerName: "CONTROLLER", SecurityProtocol: "SASL_PLAINTEXT",
		SASL:     &wire.SASLConfig{Mechanisms: []string{"PLAIN"}, PlainUsers: map[string]string{"controller": "pw"}},
		Versions: ServerVersions, Logger: quietLogger()}, s)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Shutdown(context.Background())
	cl, err := kgo.NewClient(kgo.SeedBrokers(srv.Addr().String()), kgo.SASL(plain.Auth{User: "controller", Pass: "pw"}.AsMechanism()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := kmsg.NewPtrApiVersionsRequest().RequestWith(ctx, cl)
	if err != nil {
		t.Fatalf("ApiVersions over SASL_PLAINTEXT: %v", err)
	}
	listed := map[int16]bool{}
	for _, k := range resp.ApiKeys {
		listed[k.ApiKey] = true
	}
	if !listed[17] || !listed[36] {
		t.Fatalf("ApiVersions of the controller listener lacks SaslHandshake or SaslAuthenticate: %+v", resp.ApiKeys)
	}
}
