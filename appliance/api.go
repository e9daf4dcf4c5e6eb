package appliance

import (
	"errors"
	"sort"

	"github.com/ringbroker/ringbroker/nvme"
	"github.com/twmb/franz-go/pkg/kerr"
)

// apiDef is one API key's handler and the versions we implement. Each
// handler file registers its API in an init function; the table is
// read-only afterwards.
type apiDef struct {
	key      int16
	min, max int16
	handle   func(b *Broker, r *request) any
	// unsupported, when set, answers versions outside [min, max] instead of
	// closing the connection (ApiVersions, Produce v0-v2).
	unsupported func(r *request) any
	// advertiseMin overrides min in ApiVersions (Produce is advertised from v0).
	advertiseMin int16
	advertise    bool
}

var apis = map[int16]apiDef{}

func register(d apiDef) {
	if _, dup := apis[d.key]; dup {
		panic("appliance: API key registered twice")
	}
	if !d.advertise {
		d.advertiseMin = d.min
		d.advertise = true
	}
	apis[d.key] = d
}

// sortedAPIs lists the registered APIs by key.
func sortedAPIs() []apiDef {
	out := make([]apiDef, 0, len(apis))
	for _, d := range apis {
		out = append(out, d)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].key < out[j].key })
	return out
}

// errCode maps an internal error to its Kafka error code, once, at the
// protocol boundary.
func errCode(err error) int16 {
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
