package broker

// DeleteTopics, key 20: v0–v6.
//
// v0–v5 name topics; v6 names them or gives their IDs (not both). v5+ carries error messages.
// With delete.topic.enable=false Kafka's ControllerApis fails the request: v0–v2 with
// INVALID_REQUEST, v3+ with TOPIC_DELETION_DISABLED, on every topic. Duplicate names or IDs are
// INVALID_REQUEST on every occurrence, as Kafka answers them. Unknown topics are
// UNKNOWN_TOPIC_OR_PARTITION (by name) or UNKNOWN_TOPIC_ID (by ID), decided by the controller.
// The answer waits until this broker has applied the deletion, so the name can be reused at once.
// Responses keep request order (Kafka shuffles them only to hide unauthorized topics; sluice has
// no authorizer yet).
//
// Internal topics (__consumer_offsets, __transaction_state) can be deleted, as with Kafka 4's
// controller, which has no such check (only the old ZooKeeper-era tooling refused).
//
// Not done: authorization, controller mutation quotas.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"sluice/authz"
	"sluice/controller"
	"sluice/wire"
)

func init() { registerSync(20, 0, 6, (*Broker).handleDeleteTopics) }

// deleteTarget is one requested topic: by name or by ID.
type deleteTarget struct {
	name *string
	id   [16]byte
}

func (b *Broker) handleDeleteTopics(ctx context.Context, conn *wire.ConnInfo, req *kmsg.DeleteTopicsRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.DeleteTopicsResponse)
	ctx, cancel := adminTimeout(ctx, req.TimeoutMillis)
	defer cancel()

	var targets []deleteTarget
	if req.Version < 6 {
		for i := range req.TopicNames {
			targets = append(targets, deleteTarget{name: &req.TopicNames[i]})
		}
	} else {
		for _, t := range req.Topics {
			targets = append(targets, deleteTarget{name: t.Topic, id: t.TopicID})
		}
	}
	results := make([]kmsg.DeleteTopicsResponseTopic, len(targets))
	for i, t := range targets {
		r := kmsg.NewDeleteTopicsResponseTopic()
		r.Topic, r.TopicID = t.name, t.id
		results[i] = r
	}
	resp.Topics = results

	im := b.ctrl.Image()
	if !b.cfg.Static.DeleteTopicEnable {
		code, msg := kerr.TopicDeletionDisabled.Code, strPtr(kerr.TopicDeletionDisabled.Description)
		if req.Version < 3 {
			code, msg = kerr.InvalidRequest.Code, strPtr("Topic deletion is disabled.")
		}
		for i := range results {
			results[i].ErrorCode, results[i].ErrorMessage = code, msg
		}
		return resp, nil
	}

	nameCount := map[string]int{}
	idCount := map[[16]byte]int{}
	for _, t := range targets {
		switch {
		case t.name != nil && t.id == [16]byte{}:
			nameCount[*t.name]++
		case t.name == nil && t.id != [16]byte{}:
			idCount[t.id]++
		}
	}
	var pending []int // indexes of results awaiting the controller
	for i, t := range targets {
		fail := func(msg string) {
			results[i].ErrorCode, results[i].ErrorMessage = kerr.InvalidRequest.Code, strPtr(msg)
		}
		switch {
		case t.name == nil && t.id == [16]byte{}:
			fail("Neither topic name nor id were specified.")
		case t.name != nil && t.id != [16]byte{}:
			fail("You may not specify both topic name and topic id.")
		case t.name != nil && nameCount[*t.name] > 1:
			fail("Duplicate topic name.")
		case t.name == nil && idCount[t.id] > 1:
			fail("Duplicate topic id.")
		default:
			pending = append(pending, i)
		}
	}
	// A name that maps to an ID also given is the same topic twice (Kafka: INVALID_REQUEST).
	for _, i := range pending {
		t := targets[i]
		if t.name == nil {
			continue
		}
		if topic := im.Topics[*t.name]; topic != nil && idCount[[16]byte(topic.ID)] > 0 {
			results[i].ErrorCode = kerr.InvalidRequest.Code
			results[i].ErrorMessage = strPtr("The provided topic name maps to an ID that was already supplied.")
		}
	}
	// DELETE on each topic (a topic ID this broker does not know is left to the controller).
	for _, i := range pending {
		name := ""
		if t := targets[i]; t.name != nil {
			name = *t.name
		} else {
			name = topicNameOf(im, t.id)
		}
		if name != "" && results[i].ErrorCode == 0 && !b.allowedTopic(conn, authz.OpDelete, name) {
			results[i].ErrorCode, results[i].ErrorMessage = kerr.TopicAuthorizationFailed.Code, strPtr("Authorization failed.")
		}
	}
	names, ids, pending := dropAnswered(results, targets, pending)
	if len(pending) == 0 {
		return resp, nil
	}

	deleted, err := b.ctrl.DeleteTopics(ctx, names, ids)
	if err != nil {
		code, msg := controllerCallError(err)
		for _, i := range pending {
			results[i].ErrorCode, results[i].ErrorMessage = code, msg
		}
		return resp, nil
	}
	b.waitForImage(ctx, b.ctrl.Image().Offset)

	byName := map[string]*controller.DeleteTopicResult{}
	byID := map[controller.TopicID]*controller.DeleteTopicResult{}
	for i := range deleted {
		r := &deleted[i]
		if r.Name != "" {
			byName[r.Name] = r
		}
		if !r.ID.IsZero() {
			byID[r.ID] = r
		}
	}
	for _, i := range pending {
		t := targets[i]
		var r *controller.DeleteTopicResult
		if t.name != nil {
			r = byName[*t.name]
		} else {
			r = byID[controller.TopicID(t.id)]
		}
		if r == nil {
			results[i].ErrorCode = kerr.UnknownServerError.Code
			continue
		}
		results[i].ErrorCode, results[i].ErrorMessage = itemError(r.Err, r.Message)
		if req.Version >= 6 {
			results[i].TopicID = r.ID
			if results[i].Topic == nil && r.Name != "" {
				name := r.Name
				results[i].Topic = &name
			}
		}
	}
	return resp, nil
}

// dropAnswered rebuilds the names and IDs to send to the controller from the pending targets
// that have no error yet.
func dropAnswered(results []kmsg.DeleteTopicsResponseTopic, targets []deleteTarget, pending []int) ([]string, []controller.TopicID, []int) {
	var names []string
	var ids []controller.TopicID
	var still []int
	for _, i := range pending {
		if results[i].ErrorCode != 0 {
			continue
		}
		still = append(still, i)
		if targets[i].name != nil {
			names = append(names, *targets[i].name)
		} else {
			ids = append(ids, controller.TopicID(targets[i].id))
		}
	}
	return names, ids, still
}
