package controller

import (
	"context"
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Internal topic names, as Kafka's Topic.isInternal knows them.
const (
	ConsumerOffsetsTopic  = "__consumer_offsets"
	TransactionStateTopic = "__transaction_state"
)

// IsInternalTopic reports whether name is one of Kafka's internal topics, which are created
// with TopicInfo.Internal set.
func IsInternalTopic(name string) bool {
	return name == ConsumerOffsetsTopic || name == TransactionStateTopic
}

// ResultError is the response code and message of one item of a controller call's results
// (the Err and Message of a CreateTopicResult, AlterPartitionResult, ...), for the broker and
// controller listeners alike. nil is success (code 0, null message); an error that is not a
// *kerr.Error is UNKNOWN_SERVER_ERROR with its text; a message-less error carries Kafka's
// default description, as Kafka's ApiError does.
func ResultError(err error, message string) (int16, *string) {
	if err == nil {
		return 0, nil
	}
	var ke *kerr.Error
	if !errors.As(err, &ke) {
		msg := err.Error()
		if message != "" {
			msg = message
		}
		return kerr.UnknownServerError.Code, &msg
	}
	if message == "" {
		message = ke.Description
	}
	return ke.Code, &message
}

// CallError is the code and message every item of a request gets when the controller call
// itself failed: a deadline is REQUEST_TIMED_OUT, as Kafka's controller answers a request
// whose timeout passed; a *kerr.Error is itself; anything else (closed, not leading)
// NOT_CONTROLLER, so that clients retry against the active controller.
func CallError(err error) (int16, *string) {
	msg := err.Error()
	var ke *kerr.Error
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return kerr.RequestTimedOut.Code, &msg
	case errors.As(err, &ke):
		return ke.Code, &msg
	}
	return kerr.NotController.Code, &msg
}
