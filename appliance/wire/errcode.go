package wire

import (
	"errors"

	"github.com/ringbroker/ringbroker/nvme"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// ErrCode maps an error to its Kafka error code, once, at the protocol
// boundary: 0 for nil, a *kerr.Error's own code (also when wrapped), the
// code of each nvme sentinel, and UNKNOWN_SERVER_ERROR for anything else.
func ErrCode(err error) int16 {
	if err == nil {
		return 0
	}
	var ke *kerr.Error
	if errors.As(err, &ke) {
		return ke.Code
	}
	switch {
	case errors.Is(err, nvme.ErrCorruptMessage):
		return kerr.CorruptMessage.Code
	case errors.Is(err, nvme.ErrMessageTooLarge):
		return kerr.MessageTooLarge.Code
	case errors.Is(err, nvme.ErrUnsupportedMagic):
		// Kafka's ProduceRequest.validateRecords: v3+ carries magic 2 only.
		return kerr.InvalidRecord.Code
	case errors.Is(err, nvme.ErrInvalidRecord):
		return kerr.InvalidRecord.Code
	case errors.Is(err, nvme.ErrInvalidTimestamp):
		return kerr.InvalidTimestamp.Code
	case errors.Is(err, nvme.ErrOffsetOutOfRange):
		return kerr.OffsetOutOfRange.Code
	case errors.Is(err, nvme.ErrLogClosed), errors.Is(err, nvme.ErrNoDescriptors):
		return kerr.KafkaStorageError.Code
	case errors.Is(err, nvme.ErrOutOfOrderSequence):
		return kerr.OutOfOrderSequenceNumber.Code
	case errors.Is(err, nvme.ErrInvalidProducerEpoch):
		return kerr.InvalidProducerEpoch.Code
	}
	return kerr.UnknownServerError.Code
}

// ErrMessage is the error_message an answer carries for err: nil without
// an error, else err's text (with the values that matter, as the
// project's errors are worded).
func ErrMessage(err error) *string {
	if err == nil {
		return nil
	}
	msg := err.Error()
	return &msg
}

// RecordErrors is Produce's RecordErrors (v8+, KIP-467) for a refused
// append: the records err names (nvme.RecordsError) by their index in the
// batch, with why; nil when err names none.
func RecordErrors(err error) []kmsg.ProduceResponseTopicPartitionErrorRecord {
	var re *nvme.RecordsError
	if !errors.As(err, &re) {
		return nil
	}
	out := make([]kmsg.ProduceResponseTopicPartitionErrorRecord, len(re.Records))
	for i, r := range re.Records {
		out[i] = kmsg.NewProduceResponseTopicPartitionErrorRecord()
		out[i].RelativeOffset = r.Index
		out[i].ErrorMessage = kmsg.StringPtr(r.Message)
	}
	return out
}
