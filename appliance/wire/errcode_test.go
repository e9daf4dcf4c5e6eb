package wire

import (
	"errors"
	"fmt"
	"testing"

	"github.com/ringbroker/ringbroker/nvme"
	"github.com/twmb/franz-go/pkg/kerr"
)

func TestErrCode(t *testing.T) {
	for _, c := range []struct {
		err  error
		want *kerr.Error
	}{
		{kerr.NotCoordinator, kerr.NotCoordinator},
		{fmt.Errorf("cannot create topic %q: %w", "t", kerr.TopicAlreadyExists), kerr.TopicAlreadyExists},
		{fmt.Errorf("append: %w", nvme.ErrCorruptMessage), kerr.CorruptMessage},
		{nvme.ErrMessageTooLarge, kerr.MessageTooLarge},
		{nvme.ErrUnsupportedMagic, kerr.InvalidRecord},
		{nvme.ErrInvalidRecord, kerr.InvalidRecord},
		{nvme.ErrOffsetOutOfRange, kerr.OffsetOutOfRange},
		{nvme.ErrLogClosed, kerr.KafkaStorageError},
		{nvme.ErrNoDescriptors, kerr.KafkaStorageError},
		{nvme.ErrOutOfOrderSequence, kerr.OutOfOrderSequenceNumber},
		{nvme.ErrInvalidProducerEpoch, kerr.InvalidProducerEpoch},
		{errors.New("disk on fire"), kerr.UnknownServerError},
	} {
		if got := ErrCode(c.err); got != c.want.Code {
			t.Errorf("ErrCode(%v) = %d, want %d (%s)", c.err, got, c.want.Code, c.want.Message)
		}
	}
	if ErrCode(nil) != 0 {
		t.Error("ErrCode(nil) is not 0")
	}
}
