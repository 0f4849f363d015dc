package broker

// AlterUserScramCredentials, key 51: v0.
//
// Upserts SCRAM credentials (from the salted password the client computed: `kafka-configs
// --alter --add-config 'SCRAM-SHA-256=[password=...]' --entity-type users`) and deletes
// them, through the active controller, as Kafka's brokers forward it; the rules are
// controller/scram.go's (Kafka's ScramControlManager): one result per user; DUPLICATE_RESOURCE for a
// user and mechanism named twice, UNSUPPORTED_SASL_MECHANISM, UNACCEPTABLE_CREDENTIAL for iterations outside
// 4096..16384, RESOURCE_NOT_FOUND for deleting what does not exist. The answer waits until this
// broker applied the change, so the user can log in here at once. Salts and salted passwords
// are never logged.
//
// Not done: authorization (ALTER on the cluster).

import (
	"context"
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"sluice/controller"
	"sluice/wire"
)

func init() { registerSync(51, 0, 0, (*Broker).handleAlterUserScramCredentials) }

// scramAlterer is the part of Metadata that changes SCRAM credentials (controller.Controller
// and cluster.Link have it).
type scramAlterer interface {
	AlterUserScramCredentials(ctx context.Context, dels []controller.ScramDeletion, ups []controller.ScramUpsertion) ([]controller.ScramResult, error)
}

func (b *Broker) handleAlterUserScramCredentials(ctx context.Context, _ *wire.ConnInfo, req *kmsg.AlterUserSCRAMCredentialsRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.AlterUserSCRAMCredentialsResponse)
	ctx, cancel := adminTimeout(ctx, 0)
	defer cancel()
	dels := make([]controller.ScramDeletion, 0, len(req.Deletions))
	for _, d := range req.Deletions {
		dels = append(dels, controller.ScramDeletion{Name: d.Name, Mechanism: d.Mechanism})
	}
	ups := make([]controller.ScramUpsertion, 0, len(req.Upsertions))
	for _, u := range req.Upsertions {
		ups = append(ups, controller.ScramUpsertion{Name: u.Name, Mechanism: u.Mechanism, Iterations: u.Iterations, Salt: u.Salt, SaltedPassword: u.SaltedPassword})
	}
	var results []controller.ScramResult
	err := errors.New("this broker's metadata cannot change SCRAM credentials")
	if a, ok := b.ctrl.(scramAlterer); ok {
		results, err = a.AlterUserScramCredentials(ctx, dels, ups)
	}
	for i, n := range controller.ScramUsers(dels, ups) {
		r := kmsg.NewAlterUserSCRAMCredentialsResponseResult()
		r.User = n
		switch {
		case err != nil:
			r.ErrorCode, r.ErrorMessage = controllerCallError(err)
		case i >= len(results):
			r.ErrorCode = kerr.UnknownServerError.Code
		default:
			r.ErrorCode, r.ErrorMessage = itemError(results[i].Err, results[i].Message)
		}
		resp.Results = append(resp.Results, r)
	}
	if err == nil {
		b.waitForImage(ctx, b.ctrl.Image().Offset)
	}
	return resp, nil
}
