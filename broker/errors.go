package broker

import (
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"

	"sluice/logstore"
)

// storageErrorCode maps an error from the log to the Kafka error code a client is sent. It is
// the one place storage errors become protocol errors.
func storageErrorCode(err error) int16 {
	switch {
	case err == nil:
		return 0
	case errors.Is(err, logstore.ErrCorruptBatch):
		return kerr.CorruptMessage.Code
	case errors.Is(err, logstore.ErrInvalidRecord):
		return kerr.InvalidRecord.Code
	case errors.Is(err, logstore.ErrUnsupportedMagic):
		return kerr.UnsupportedForMessageFormat.Code
	case errors.Is(err, logstore.ErrOffsetOutOfRange):
		return kerr.OffsetOutOfRange.Code
	case errors.Is(err, logstore.ErrOutOfOrderSequence):
		return kerr.OutOfOrderSequenceNumber.Code
	case errors.Is(err, logstore.ErrInvalidProducerEpoch):
		return kerr.InvalidProducerEpoch.Code
	case errors.Is(err, logstore.ErrInvalidTxnState):
		return kerr.InvalidTxnState.Code
	case errors.Is(err, logstore.ErrTransactionCoordinatorFenced):
		return kerr.TransactionCoordinatorFenced.Code
	case errors.Is(err, logstore.ErrInvalidTimestamp):
		return kerr.InvalidTimestamp.Code
	case errors.Is(err, logstore.ErrRecordListTooLarge):
		return kerr.RecordListTooLarge.Code
	case errors.Is(err, logstore.ErrStorage):
		// The log failed (ENOSPC, EIO): the partition is offline until it recovers.
		return kerr.KafkaStorageError.Code
	case errors.Is(err, logstore.ErrClosed):
		// Closed without a failure: the replica is being removed or moved.
		return kerr.NotLeaderForPartition.Code
	default:
		return kerr.KafkaStorageError.Code
	}
}
