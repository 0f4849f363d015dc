package broker

// SaslHandshake, key 17: v0–v1. SaslAuthenticate, key 36: v0–v2.
//
// On SASL listeners the wire layer serves both itself (wire/sasl.go): nothing reaches the
// broker before the connection has authenticated. They reach here only on listeners without
// SASL, or after authentication (a SaslAuthenticate outside an exchange is refused by the wire
// layer too), and are answered as Kafka's KafkaApis answers them: ILLEGAL_SASL_STATE.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"sluice/wire"
)

func init() {
	registerSync(17, 0, 1, (*Broker).handleSaslHandshake)
	registerSync(36, 0, 2, (*Broker).handleSaslAuthenticate)
}

func (b *Broker) handleSaslHandshake(_ context.Context, _ *wire.ConnInfo, req *kmsg.SASLHandshakeRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.SASLHandshakeResponse)
	resp.ErrorCode = kerr.IllegalSaslState.Code
	return resp, nil
}

func (b *Broker) handleSaslAuthenticate(_ context.Context, _ *wire.ConnInfo, req *kmsg.SASLAuthenticateRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.SASLAuthenticateResponse)
	resp.ErrorCode = kerr.IllegalSaslState.Code
	msg := "SaslAuthenticate request received after successful authentication"
	resp.ErrorMessage = &msg
	return resp, nil
}
