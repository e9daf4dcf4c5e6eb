package appliance

import (
	"reflect"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func sampleProduce(nTopics int) *kmsg.ProduceRequest {
	req := kmsg.NewPtrProduceRequest()
	tid := "txn-1"
	req.TransactionID = &tid
	req.Acks, req.TimeoutMillis = -1, 1234
	for i := 0; i < nTopics; i++ {
		t := kmsg.NewProduceRequestTopic()
		t.Topic = string(rune('a' + i))
		for p := int32(0); p < int32(i+1); p++ {
			pp := kmsg.NewProduceRequestTopicPartition()
			pp.Partition = p
			if p != 1 {
				pp.Records = []byte{byte(p), 1, 2, 3}
			}
			t.Partitions = append(t.Partitions, pp)
		}
		req.Topics = append(req.Topics, t)
	}
	return req
}

func sampleFetch(nTopics int) *kmsg.FetchRequest {
	req := kmsg.NewPtrFetchRequest()
	req.ReplicaID, req.MaxWaitMillis, req.MinBytes, req.MaxBytes = -1, 500, 1, 1<<20
	req.IsolationLevel, req.SessionID, req.SessionEpoch, req.Rack = 1, 7, 0, "rack-1"
	cid := "cluster"
	req.ClusterID = &cid
	req.ReplicaState.ID, req.ReplicaState.Epoch = 3, 9
	for i := 0; i < nTopics; i++ {
		t := kmsg.NewFetchRequestTopic()
		t.Topic = string(rune('a' + i))
		t.TopicID[0] = byte(i + 1)
		for p := int32(0); p < int32(i+1); p++ {
			fp := kmsg.NewFetchRequestTopicPartition()
			fp.Partition, fp.CurrentLeaderEpoch, fp.FetchOffset, fp.LastFetchedEpoch = p, 4, int64(p)*100, 2
			fp.LogStartOffset, fp.PartitionMaxBytes = 5, 1<<16
			t.Partitions = append(t.Partitions, fp)
		}
		req.Topics = append(req.Topics, t)
	}
	f := kmsg.NewFetchRequestForgottenTopic()
	f.Topic, f.Partitions = "gone", []int32{1, 2}
	f.TopicID[0] = 9
	req.ForgottenTopics = append(req.ForgottenTopics, f)
	return req
}

// clearTags drops what kmsg keeps and the hot decoders skip.
func clearTags(v any) {
	switch r := v.(type) {
	case *kmsg.ProduceRequest:
		r.UnknownTags = kmsg.Tags{}
		for i := range r.Topics {
			r.Topics[i].UnknownTags = kmsg.Tags{}
			for j := range r.Topics[i].Partitions {
				r.Topics[i].Partitions[j].UnknownTags = kmsg.Tags{}
			}
		}
	case *kmsg.FetchRequest:
		r.UnknownTags = kmsg.Tags{}
		r.ReplicaState.UnknownTags = kmsg.Tags{}
		if len(r.ForgottenTopics) == 0 {
			r.ForgottenTopics = nil
		}
		for i := range r.Topics {
			r.Topics[i].UnknownTags = kmsg.Tags{}
			for j := range r.Topics[i].Partitions {
				r.Topics[i].Partitions[j].UnknownTags = kmsg.Tags{}
			}
		}
		for i := range r.ForgottenTopics {
			r.ForgottenTopics[i].UnknownTags = kmsg.Tags{}
		}
	}
}

// TestHotDecodersMatchKmsg: decodeProduce and decodeFetch read every
// supported version as kmsg does, also when reusing a struct that held a
// larger or smaller request, and refuse every truncation.
func TestHotDecodersMatchKmsg(t *testing.T) {
	var reusedP kmsg.ProduceRequest
	for v := int16(3); v <= 11; v++ {
		for _, n := range []int{3, 1, 0, 2} {
			src := sampleProduce(n)
			src.SetVersion(v)
			body := src.AppendTo(nil)
			want := kmsg.NewPtrProduceRequest()
			want.SetVersion(v)
			if err := want.ReadFrom(body); err != nil {
				t.Fatal(err)
			}
			if err := decodeProduce(&reusedP, v, body); err != nil {
				t.Fatalf("v%d: %v", v, err)
			}
			got := reusedP
			got.Topics = append([]kmsg.ProduceRequestTopic(nil), reusedP.Topics...)
			if len(got.Topics) == 0 {
				got.Topics = nil
			}
			clearTags(want)
			clearTags(&got)
			if !reflect.DeepEqual(want, &got) {
				t.Fatalf("produce v%d n=%d:\n got %+v\nwant %+v", v, n, got, *want)
			}
			for cut := 0; cut < len(body); cut++ {
				var scratch kmsg.ProduceRequest
				if decodeProduce(&scratch, v, body[:cut]) == nil && kmsgProduceErr(v, body[:cut]) != nil {
					t.Fatalf("produce v%d accepted a body truncated at %d that kmsg refuses", v, cut)
				}
			}
		}
	}
	var reusedF kmsg.FetchRequest
	for v := int16(4); v <= 16; v++ {
		for _, n := range []int{3, 1, 0, 2} {
			src := sampleFetch(n)
			src.SetVersion(v)
			body := src.AppendTo(nil)
			want := kmsg.NewPtrFetchRequest()
			want.SetVersion(v)
			if err := want.ReadFrom(body); err != nil {
				t.Fatal(err)
			}
			if err := decodeFetch(&reusedF, v, body); err != nil {
				t.Fatalf("v%d: %v", v, err)
			}
			got := reusedF
			got.Topics = append([]kmsg.FetchRequestTopic(nil), reusedF.Topics...)
			if len(got.Topics) == 0 {
				got.Topics = nil
			}
			clearTags(want)
			clearTags(&got)
			if !reflect.DeepEqual(want, &got) {
				t.Fatalf("fetch v%d n=%d:\n got %+v\nwant %+v", v, n, got, *want)
			}
			for cut := 0; cut < len(body); cut++ {
				var scratch kmsg.FetchRequest
				if decodeFetch(&scratch, v, body[:cut]) == nil && kmsgFetchErr(v, body[:cut]) != nil {
					t.Fatalf("fetch v%d accepted a body truncated at %d that kmsg refuses", v, cut)
				}
			}
		}
	}
}

func kmsgProduceErr(v int16, b []byte) error {
	r := kmsg.NewPtrProduceRequest()
	r.SetVersion(v)
	return r.ReadFrom(b)
}

func kmsgFetchErr(v int16, b []byte) error {
	r := kmsg.NewPtrFetchRequest()
	r.SetVersion(v)
	return r.ReadFrom(b)
}

// TestHotDecodersReuseAllocs: decoding into a warmed-up struct allocates
// nothing (no transactional id, no cluster id: those are copied).
func TestHotDecodersReuseAllocs(t *testing.T) {
	p := sampleProduce(3)
	p.TransactionID = nil
	p.SetVersion(9)
	pb := p.AppendTo(nil)
	f := sampleFetch(3)
	f.ClusterID = nil
	f.SetVersion(12)
	fb := f.AppendTo(nil)
	if raceEnabled {
		t.Skip("the race detector allocates")
	}
	var pr kmsg.ProduceRequest
	var fr kmsg.FetchRequest
	run := func() {
		if decodeProduce(&pr, 9, pb) != nil || decodeFetch(&fr, 12, fb) != nil {
			t.Fatal("decode failed")
		}
	}
	run()
	if n := testing.AllocsPerRun(100, run); n != 0 {
		t.Fatalf("decoding allocates %.1f times, want 0", n)
	}
}

func FuzzHotDecoders(f *testing.F) {
	for v := int16(9); v <= 11; v++ {
		p := sampleProduce(2)
		p.SetVersion(v)
		f.Add(true, v, p.AppendTo(nil))
	}
	for v := int16(12); v <= 16; v++ {
		r := sampleFetch(2)
		r.SetVersion(v)
		f.Add(false, v, r.AppendTo(nil))
	}
	var pr kmsg.ProduceRequest
	var fr kmsg.FetchRequest
	f.Fuzz(func(t *testing.T, produce bool, v int16, body []byte) {
		if produce {
			_ = decodeProduce(&pr, 3+(v&7), body) // never panics
		} else {
			_ = decodeFetch(&fr, 4+(v&7)+(v>>3&1)*5, body)
		}
	})
}
