package cluster

// SaslHandshake, key 17: v0–v1. SaslAuthenticate, key 36: v0–v2.
//
// On a SASL_PLAINTEXT or SASL_SSL controller listener the wire layer serves both itself
// (wire/sasl.go) before the connection reaches this server, as on the broker listeners; they
// are registered so that the wire layer accepts them and ApiVersions lists them (a Kafka client
// asks before it authenticates). They reach here only on a listener without SASL, or after
// authentication, and are answered as Kafka's KafkaApis answers them: ILLEGAL_SASL_STATE.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	register(17, 0, 1, func(_ *Server, _ context.Context, req *kmsg.SASLHandshakeRequest) (kmsg.Response, error) {
		resp := req.ResponseKind().(*kmsg.SASLHandshakeResponse)
		resp.ErrorCode = kerr.IllegalSaslState.Code
		return resp, nil
	})
	register(36, 0, 2, func(_ *Server, _ context.Context, req *kmsg.SASLAuthenticateRequest) (kmsg.Response, error) {
		resp := req.ResponseKind().(*kmsg.SASLAuthenticateResponse)
		resp.ErrorCode = kerr.IllegalSaslState.Code
		msg := "SaslAuthenticate request received after successful authentication"
		resp.ErrorMessage = &msg
		return resp, nil
	})
}
