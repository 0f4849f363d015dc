package broker

// DescribeUserScramCredentials, key 50: v0.
//
// Answered from this broker's metadata image, as Kafka's brokers answer it from their metadata
// cache (controller.DescribeScram): a null or empty user list describes every user with a
// credential; per user its mechanisms and iteration counts, never a salt or key.
// DUPLICATE_RESOURCE for a user asked twice, RESOURCE_NOT_FOUND for one without credentials.
//
// Not done: authorization (DESCRIBE on the cluster).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"sluice/controller"
	"sluice/wire"
)

func init() { registerSync(50, 0, 0, (*Broker).handleDescribeUserScramCredentials) }

func (b *Broker) handleDescribeUserScramCredentials(_ context.Context, _ *wire.ConnInfo, req *kmsg.DescribeUserSCRAMCredentialsRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.DescribeUserSCRAMCredentialsResponse)
	var names []string
	for _, u := range req.Users {
		names = append(names, u.Name)
	}
	resp.Results = []kmsg.DescribeUserSCRAMCredentialsResponseResult{}
	for _, d := range controller.DescribeScram(b.ctrl.Image(), names) {
		r := kmsg.NewDescribeUserSCRAMCredentialsResponseResult()
		r.User = d.User
		if d.Err != nil {
			msg := d.Message
			r.ErrorCode, r.ErrorMessage = d.Err.Code, &msg
		}
		for i, m := range d.Mechanisms {
			ci := kmsg.NewDescribeUserSCRAMCredentialsResponseResultCredentialInfo()
			ci.Mechanism, ci.Iterations = m, d.Iterations[i]
			r.CredentialInfos = append(r.CredentialInfos, ci)
		}
		resp.Results = append(resp.Results, r)
	}
	return resp, nil
}
