package cluster

// ApiVersions, key 18: v0–v4.
//
// The list is ServerVersions: exactly the APIs this listener serves. v3+ client software
// names are not validated here (the broker listener does); an unsupported ApiVersions version
// is answered by the wire layer.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { register(18, 0, 4, (*Server).handleApiVersions) }

func (s *Server) handleApiVersions(_ context.Context, req *kmsg.ApiVersionsRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.ApiVersionsResponse)
	for _, v := range ServerVersions() {
		resp.ApiKeys = append(resp.ApiKeys, kmsg.ApiVersionsResponseApiKey{ApiKey: v.Key, MinVersion: v.Min, MaxVersion: v.Max})
	}
	return resp, nil
}
