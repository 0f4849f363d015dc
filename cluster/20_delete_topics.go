package cluster

// DeleteTopics, key 20: v0–v6.
//
// v0–v5 name topics; v6 names or topic IDs (KIP-516). Answered per topic with the name and
// ID of the deleted topic.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"sluice/controller"
)

func init() { register(20, 0, 6, (*Server).handleDeleteTopics) }

func (s *Server) handleDeleteTopics(ctx context.Context, req *kmsg.DeleteTopicsRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.DeleteTopicsResponse)
	ctx, cancel := withTimeout(ctx, req.TimeoutMillis)
	defer cancel()
	var names []string
	var ids []controller.TopicID
	if req.Version < 6 {
		names = append(names, req.TopicNames...)
	} else {
		for _, t := range req.Topics {
			if t.Topic != nil {
				names = append(names, *t.Topic)
			} else {
				ids = append(ids, t.TopicID)
			}
		}
	}
	results, err := s.cfg.Controller.DeleteTopics(ctx, names, ids)
	n := len(names) + len(ids)
	for i := 0; i < n; i++ {
		t := kmsg.NewDeleteTopicsResponseTopic()
		if i < len(names) {
			t.Topic = strPtr(names[i])
		} else {
			t.TopicID = ids[i-len(names)]
		}
		switch {
		case err != nil:
			t.ErrorCode, t.ErrorMessage = callError(err)
		case i >= len(results):
			t.ErrorCode = kerr.UnknownServerError.Code
		default:
			r := results[i]
			t.ErrorCode, t.ErrorMessage = itemError(r.Err, r.Message)
			if r.Name != "" {
				t.Topic = strPtr(r.Name)
			}
			t.TopicID = r.ID
		}
		resp.Topics = append(resp.Topics, t)
	}
	setOffset(&resp.UnknownTags, s.cfg.Controller.Image().Offset)
	return resp, nil
}
