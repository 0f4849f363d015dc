package cluster

// AlterUserScramCredentials, key 51: v0.
//
// Upserts SCRAM credentials from the client's salted passwords and deletes credentials, with
// the rules of controller/scram.go (Kafka's ScramControlManager). One result per user, in
// order of first appearance (deletions first). The answer carries the metadata offset of the change
// (tag 0x5C01, see the package doc). Link.AlterUserScramCredentials is the broker's way here.

import (
	"context"
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"sluice/controller"
)

func init() { register(51, 0, 0, (*Server).handleAlterUserScramCredentials) }

func (s *Server) handleAlterUserScramCredentials(ctx context.Context, req *kmsg.AlterUserSCRAMCredentialsRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.AlterUserSCRAMCredentialsResponse)
	ctx, cancel := withTimeout(ctx, 0)
	defer cancel()
	dels, ups := scramRequest(req)
	results, err := s.cfg.Controller.AlterUserScramCredentials(ctx, dels, ups)
	resp.Results = scramResponse(dels, ups, results, err)
	setOffset(&resp.UnknownTags, s.cfg.Controller.Image().Offset)
	return resp, nil
}

// scramRequest is the controller form of a request.
func scramRequest(req *kmsg.AlterUserSCRAMCredentialsRequest) ([]controller.ScramDeletion, []controller.ScramUpsertion) {
	dels := make([]controller.ScramDeletion, 0, len(req.Deletions))
	for _, d := range req.Deletions {
		dels = append(dels, controller.ScramDeletion{Name: d.Name, Mechanism: d.Mechanism})
	}
	ups := make([]controller.ScramUpsertion, 0, len(req.Upsertions))
	for _, u := range req.Upsertions {
		ups = append(ups, controller.ScramUpsertion{Name: u.Name, Mechanism: u.Mechanism, Iterations: u.Iterations, Salt: u.Salt, SaltedPassword: u.SaltedPassword})
	}
	return dels, ups
}

// scramResponse is the response form of results: one per user (or, for a failed call, every
// user the call's error).
func scramResponse(dels []controller.ScramDeletion, ups []controller.ScramUpsertion, results []controller.ScramResult, err error) []kmsg.AlterUserSCRAMCredentialsResponseResult {
	users := controller.ScramUsers(dels, ups)
	out := make([]kmsg.AlterUserSCRAMCredentialsResponseResult, len(users))
	for i, n := range users {
		out[i] = kmsg.NewAlterUserSCRAMCredentialsResponseResult()
		out[i].User = n
		switch {
		case err != nil:
			out[i].ErrorCode, out[i].ErrorMessage = callError(err)
		case i >= len(results):
			out[i].ErrorCode = kerr.UnknownServerError.Code
		default:
			out[i].ErrorCode, out[i].ErrorMessage = itemError(results[i].Err, results[i].Message)
		}
	}
	return out
}

// AlterUserScramCredentials changes SCRAM credentials through the active controller and
// returns once the local image has the outcome. Salted passwords travel to the controller as
// the client sent them (never a password) and are never logged.
func (l *Link) AlterUserScramCredentials(ctx context.Context, dels []controller.ScramDeletion, ups []controller.ScramUpsertion) ([]controller.ScramResult, error) {
	var out []controller.ScramResult
	err := l.withLeader(ctx, func() error {
		var err error
		out, err = l.local.AlterUserScramCredentials(ctx, dels, ups)
		return localRetry(err, len(out) > 0 && errors.Is(out[0].Err, kerr.NotController))
	}, func(cl *kgo.Client) error {
		req := kmsg.NewPtrAlterUserSCRAMCredentialsRequest()
		for _, d := range dels {
			rd := kmsg.NewAlterUserSCRAMCredentialsRequestDeletion()
			rd.Name, rd.Mechanism = d.Name, d.Mechanism
			req.Deletions = append(req.Deletions, rd)
		}
		for _, u := range ups {
			ru := kmsg.NewAlterUserSCRAMCredentialsRequestUpsertion()
			ru.Name, ru.Mechanism, ru.Iterations, ru.Salt, ru.SaltedPassword = u.Name, u.Mechanism, u.Iterations, u.Salt, u.SaltedPassword
			req.Upsertions = append(req.Upsertions, ru)
		}
		resp, err := request(ctx, cl, req)
		if err != nil {
			return err
		}
		r := resp.(*kmsg.AlterUserSCRAMCredentialsResponse)
		if len(r.Results) > 0 && r.Results[0].ErrorCode == kerr.NotController.Code {
			return errRetry
		}
		l.waitOffset(ctx, offsetOf(&r.UnknownTags))
		byUser := map[string]kmsg.AlterUserSCRAMCredentialsResponseResult{}
		for _, rr := range r.Results {
			byUser[rr.User] = rr
		}
		users := controller.ScramUsers(dels, ups)
		out = make([]controller.ScramResult, len(users))
		for i, u := range users {
			out[i].User = u
			rr, ok := byUser[u]
			if !ok {
				out[i].Err = kerr.UnknownServerError
				continue
			}
			out[i].Err, out[i].Message = kerr.ErrorForCode(rr.ErrorCode), deref(rr.ErrorMessage)
		}
		return nil
	})
	return out, err
}
