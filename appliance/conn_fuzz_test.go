package appliance

import (
	"encoding/binary"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// frameFor encodes req as a client would, without the size prefix.
func frameFor(req kmsg.Request, version int16, corrID int32) []byte {
	req.SetVersion(version)
	f := kmsg.NewRequestFormatter(kmsg.FormatterClientID("fuzz"))
	out := f.AppendRequest(nil, req, corrID)
	return out[4:]
}

func FuzzParseFrame(f *testing.F) {
	md := kmsg.NewPtrMetadataRequest()
	f.Add(frameFor(md, 12, 1))
	f.Add(frameFor(md, 0, 2))
	av := kmsg.NewPtrApiVersionsRequest()
	f.Add(frameFor(av, 3, 3))
	pr := kmsg.NewPtrProduceRequest()
	pr.Acks = -1
	pt := kmsg.NewProduceRequestTopic()
	pt.Topic = "t"
	pp := kmsg.NewProduceRequestTopicPartition()
	pp.Records = appendBatch(nil, 1, 0, -1, -1, -1, []kmsg.Record{{Value: []byte("v")}})
	pt.Partitions = append(pt.Partitions, pp)
	pr.Topics = append(pr.Topics, pt)
	f.Add(frameFor(pr, 9, 4))
	fr := kmsg.NewPtrFetchRequest()
	f.Add(frameFor(fr, 16, 5))
	f.Add([]byte{0, 18, 0, 99, 0, 0, 0, 1, 0xff, 0xff})
	apis := newAPITable(&Broker{})
	f.Fuzz(func(t *testing.T, frame []byte) {
		pr, err := parseFrame(apis, frame)
		if err != nil {
			return
		}
		if pr.req == nil {
			t.Fatal("no request without error")
		}
		if !pr.unsupported && (pr.version < pr.api.Min || pr.version > pr.api.Max) {
			t.Fatalf("version %d accepted outside %d-%d", pr.version, pr.api.Min, pr.api.Max)
		}
		if len(frame) >= 8 && int32(binary.BigEndian.Uint32(frame[4:])) != pr.corrID {
			t.Fatal("correlation id mismatch")
		}
	})
}

func TestParseFrameRoundTrip(t *testing.T) {
	for _, v := range []int16{0, 1, 4, 9, 12} {
		md := kmsg.NewPtrMetadataRequest()
		name := "orders"
		mt := kmsg.NewMetadataRequestTopic()
		mt.Topic = &name
		md.Topics = append(md.Topics, mt)
		pr, err := parseFrame(newAPITable(&Broker{}), frameFor(md, v, 77))
		if err != nil {
			t.Fatalf("v%d: %v", v, err)
		}
		got := pr.req.(*kmsg.MetadataRequest)
		if pr.corrID != 77 || pr.clientID != "fuzz" || len(got.Topics) != 1 || *got.Topics[0].Topic != "orders" {
			t.Fatalf("v%d: parsed %+v", v, pr)
		}
	}
	// A too-new ApiVersions is answered, not refused.
	pr, err := parseFrame(newAPITable(&Broker{}), []byte{0, 18, 0, 99, 0, 0, 0, 1, 0xff, 0xff})
	if err != nil || !pr.unsupported {
		t.Fatalf("ApiVersions v99: %v %+v", err, pr)
	}
	// Unknown key and unsupported Fetch version are refused.
	if _, err := parseFrame(newAPITable(&Broker{}), []byte{0x27, 0x0f, 0, 0, 0, 0, 0, 1, 0xff, 0xff}); err == nil {
		t.Fatal("unknown key 9999 accepted")
	}
	if _, err := parseFrame(newAPITable(&Broker{}), frameFor(kmsg.NewPtrFetchRequest(), 3, 1)); err == nil {
		t.Fatal("Fetch v3 accepted")
	}
}
