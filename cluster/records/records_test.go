package records

import (
	"bytes"
	"errors"
	"reflect"
	"testing"
)

func strp(s string) *string { return &s }

var (
	uuidA = UUID{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}
	uuidB = UUID{15: 0xff}
)

// samples returns records of every kind at every version, with every
// field the version has set to a non-zero value (and some with the
// optional ones left out).
func samples() []Record {
	var out []Record
	for v := int16(0); v <= MaxVersion(RegisterBrokerKey); v++ {
		r := &RegisterBrokerRecord{RecordVersion: v, BrokerID: 7, IncarnationID: uuidA, BrokerEpoch: 1 << 40,
			EndPoints: []BrokerEndpoint{{Name: "PLAINTEXT", Host: "127.0.0.1", Port: 9092, SecurityProtocol: 0}, {Name: "SSL", Host: "h", Port: 65535, SecurityProtocol: 1}},
			Features:  []BrokerFeature{{Name: "metadata.version", MinSupportedVersion: 1, MaxSupportedVersion: 20}},
			Rack:      strp("rack-1"), Fenced: true}
		if v >= 1 {
			r.InControlledShutdown = true
		}
		if v >= 2 {
			r.IsMigratingZkBroker = true
		}
		if v >= 3 {
			r.LogDirs = []UUID{uuidA, uuidB}
		}
		out = append(out, r)
	}
	out = append(out, &RegisterBrokerRecord{RecordVersion: 3, BrokerID: 1})
	for v := int16(0); v <= MaxVersion(BrokerRegistrationChangeKey); v++ {
		r := &BrokerRegistrationChangeRecord{RecordVersion: v, BrokerID: 3, BrokerEpoch: 99, Fenced: -1}
		if v >= 1 {
			r.InControlledShutdown = 1
		}
		if v >= 2 {
			r.LogDirs = []UUID{uuidB}
		}
		out = append(out, r)
	}
	pc := NewPartitionChangeRecord(uuidA, 4)
	out = append(out,
		&UnregisterBrokerRecord{BrokerID: 2, BrokerEpoch: 5},
		&TopicRecord{Name: "orders", TopicID: uuidA},
		&PartitionRecord{PartitionID: 2, TopicID: uuidA, Replicas: []int32{1, 2, 3}, ISR: []int32{1, 2}, Leader: 1, LeaderEpoch: 4, PartitionEpoch: 9},
		&PartitionRecord{PartitionID: 0, TopicID: uuidB, Replicas: []int32{1}, ISR: []int32{}, RemovingReplicas: []int32{2}, AddingReplicas: []int32{}, Leader: -1, LeaderEpoch: -1, PartitionEpoch: -1, LeaderRecoveryState: 1},
		&ConfigRecord{ResourceType: 2, ResourceName: "orders", Name: "retention.ms", Value: strp("3600000")},
		&ConfigRecord{ResourceType: 4, ResourceName: "", Name: "log.retention.ms"},
		&ConfigRecord{ResourceType: 32, ResourceName: "g", Name: "share.auto.offset.reset", Value: strp("")},
		pc,
		&PartitionChangeRecord{PartitionID: 1, TopicID: uuidB, ISR: []int32{1}, Leader: -1, Replicas: []int32{1, 2}, RemovingReplicas: []int32{}, AddingReplicas: []int32{2}, LeaderRecoveryState: 0},
		&FenceBrokerRecord{ID: 1, Epoch: 10},
		&UnfenceBrokerRecord{ID: 1, Epoch: 11},
		&RemoveTopicRecord{TopicID: uuidB},
		&UserScramCredentialRecord{Name: "alice", Mechanism: 1, Salt: []byte("salt"), StoredKey: bytes.Repeat([]byte{1}, 32), ServerKey: bytes.Repeat([]byte{2}, 32), Iterations: 4096},
		&UserScramCredentialRecord{Name: "", Mechanism: 2, Salt: []byte{}, StoredKey: []byte{}, ServerKey: []byte{}, Iterations: 8192},
		&FeatureLevelRecord{Name: "metadata.version", FeatureLevel: 21},
		&ClientQuotaRecord{Entity: []EntityData{{EntityType: "user", EntityName: strp("alice")}, {EntityType: "client-id"}}, Key: "producer_byte_rate", Value: 1048576.5},
		&ClientQuotaRecord{Entity: []EntityData{{EntityType: "ip", EntityName: strp("10.0.0.1")}}, Key: "connection_creation_rate", Remove: true},
		&ProducerIdsRecord{BrokerID: 1, BrokerEpoch: -1, NextProducerID: 2000},
		&AccessControlEntryRecord{ID: uuidA, ResourceType: 2, ResourceName: "orders", PatternType: 3, Principal: "User:alice", Host: "*", Operation: 3, PermissionType: 3},
		&RemoveAccessControlEntryRecord{ID: uuidA},
		&NoOpRecord{},
		&RemoveUserScramCredentialRecord{Name: "bob", Mechanism: 2},
	)
	return out
}

func TestRecordRoundTrip(t *testing.T) {
	seen := map[APIKey]map[int16]bool{}
	for _, want := range samples() {
		b := Encode([]byte("prefix"), want)
		if !bytes.HasPrefix(b, []byte("prefix")) {
			t.Fatalf("%s: Encode did not append", want.APIKey())
		}
		got, err := Decode(b[len("prefix"):])
		if err != nil {
			t.Fatalf("%s v%d: %v", want.APIKey(), want.Version(), err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s v%d round trip:\n got %+v\nwant %+v", want.APIKey(), want.Version(), got, want)
		}
		if got.Version() != want.Version() || got.APIKey() != want.APIKey() {
			t.Errorf("%s: decoded as %s v%d", want.APIKey(), got.APIKey(), got.Version())
		}
		if again := got.AppendTo(nil); !bytes.Equal(again, b[len("prefix"):]) {
			t.Errorf("%s v%d: re-encoding differs", want.APIKey(), want.Version())
		}
		if seen[want.APIKey()] == nil {
			seen[want.APIKey()] = map[int16]bool{}
		}
		seen[want.APIKey()][want.Version()] = true
	}
	for k := APIKey(0); k < 64; k++ {
		for v := int16(0); v <= MaxVersion(k); v++ {
			if !seen[k][v] {
				t.Errorf("no round-trip sample of %s version %d", k, v)
			}
		}
	}
}

// TestRecordFrameBytes pins the frame and a body byte for byte.
func TestRecordFrameBytes(t *testing.T) {
	got := (&TopicRecord{Name: "ab", TopicID: uuidB}).AppendTo(nil)
	want := append([]byte{1, 2, 0, 3, 'a', 'b'}, uuidB[:]...)
	want = append(want, 0)
	if !bytes.Equal(got, want) {
		t.Fatalf("TopicRecord bytes %x, want %x", got, want)
	}
	got = (&ConfigRecord{ResourceType: 2, ResourceName: "t", Name: "k"}).AppendTo(nil)
	if want := []byte{1, 4, 0, 2, 2, 't', 2, 'k', 0, 0}; !bytes.Equal(got, want) {
		t.Fatalf("ConfigRecord bytes %x, want %x", got, want)
	}
	got = NewPartitionChangeRecord(uuidA, 1).AppendTo(nil)
	if want := append(append([]byte{1, 5, 0, 0, 0, 0, 1}, uuidA[:]...), 0); !bytes.Equal(got, want) {
		t.Fatalf("empty PartitionChangeRecord bytes %x, want %x", got, want)
	}
}

func TestRecordDecodeMalformed(t *testing.T) {
	topic := (&TopicRecord{Name: "ab", TopicID: uuidB}).AppendTo(nil)
	change := (&PartitionChangeRecord{PartitionID: 1, TopicID: uuidA, ISR: []int32{1}, Leader: 2, LeaderRecoveryState: -1}).AppendTo(nil)
	tagged := func(tags ...byte) []byte {
		b := append([]byte{1, 5, 0, 0, 0, 0, 1}, uuidA[:]...)
		return append(b, tags...)
	}
	for _, c := range []struct {
		name string
		in   []byte
		want error
	}{
		{"empty", nil, ErrTruncated},
		{"frame only", []byte{1}, ErrTruncated},
		{"no version", []byte{1, 2}, ErrTruncated},
		{"frame version 0", []byte{0, 2, 0}, ErrUnknownFrameVersion},
		{"frame version 2", []byte{2, 2, 0}, ErrUnknownFrameVersion},
		{"unknown api key 6", []byte{1, 6, 0, 0}, ErrUnknownAPIKey},
		{"unknown api key 999", []byte{1, 0xe7, 0x07, 0, 0}, ErrUnknownAPIKey},
		{"api key over int16", []byte{1, 0x80, 0x80, 0x02, 0}, ErrUnknownAPIKey},
		{"topic version 1", []byte{1, 2, 1, 1}, ErrUnknownVersion},
		{"register broker version 4", []byte{1, 0, 4}, ErrUnknownVersion},
		{"varint over 64 bits", []byte{1, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}, ErrMalformed},
		{"varint over 31 bits", []byte{1, 0xff, 0xff, 0xff, 0xff, 0x0f, 0}, ErrMalformed},
		{"topic truncated in uuid", topic[:len(topic)-5], ErrTruncated},
		{"topic without tags", topic[:len(topic)-1], ErrTruncated},
		{"topic trailing byte", append(append([]byte{}, topic...), 0), ErrTrailingBytes},
		{"topic null name", append(append([]byte{1, 2, 0, 0}, uuidB[:]...), 0), ErrMalformed},
		{"string longer than input", []byte{1, 2, 0, 100, 'a'}, ErrTruncated},
		{"bool 2", []byte{1, 14, 0, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 2, 0}, ErrMalformed},
		{"null replicas", append(append([]byte{1, 3, 0, 0, 0, 0, 1}, uuidA[:]...), 0), ErrMalformed},
		{"array longer than input", append(append([]byte{1, 3, 0, 0, 0, 0, 1}, uuidA[:]...), 0x7f, 0, 0, 0, 1), ErrTruncated},
		{"tags descending", tagged(2, 1, 4, 0, 0, 0, 2, 0, 2, 1, 0), ErrMalformed},
		{"tag repeated", tagged(2, 1, 4, 0, 0, 0, 2, 1, 4, 0, 0, 0, 3), ErrMalformed},
		{"tag size past end", tagged(1, 1, 9, 0, 0, 0, 2), ErrTruncated},
		{"tag value shorter than size", tagged(1, 1, 5, 0, 0, 0, 2, 7), ErrMalformed},
		{"tag value longer than size", tagged(1, 1, 3, 0, 0, 0), ErrMalformed},
		{"tag count past end", tagged(3, 1, 4, 0, 0, 0, 2), ErrTruncated},
		{"change truncated", change[:len(change)-2], ErrTruncated},
	} {
		t.Run(c.name, func(t *testing.T) {
			r, err := Decode(c.in)
			if !errors.Is(err, c.want) || r != nil {
				t.Fatalf("Decode(%x) = %v, %v; want error %v", c.in, r, err, c.want)
			}
		})
	}
}

// TestRecordUnknownTagSkipped: a tagged field this version does not know
// is skipped, as Kafka's readers do.
func TestRecordUnknownTagSkipped(t *testing.T) {
	b := append([]byte{1, 2, 0, 2, 'x'}, uuidA[:]...)
	b = append(b, 2, 5, 2, 0xaa, 0xbb, 9, 0)
	got, err := Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	if want := (&TopicRecord{Name: "x", TopicID: uuidA}); !reflect.DeepEqual(got, want) {
		t.Fatalf("got %+v, want %+v", got, want)
	}
	// RegisterBrokerRecord v2 ignores tag 0 (LogDirs is a v3 field).
	v2 := (&RegisterBrokerRecord{RecordVersion: 2, BrokerID: 1}).AppendTo(nil)
	v2 = append(v2[:len(v2)-1], 1, 0, 17, 2)
	v2 = append(v2, uuidA[:]...)
	got, err = Decode(v2)
	if err != nil {
		t.Fatal(err)
	}
	if rb := got.(*RegisterBrokerRecord); rb.LogDirs != nil || rb.RecordVersion != 2 {
		t.Fatalf("v2 took tag 0 as LogDirs: %+v", rb)
	}
}

func TestRecordEncodeBadVersionPanics(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("encoding RegisterBrokerRecord version 9 did not panic")
		}
	}()
	(&RegisterBrokerRecord{RecordVersion: 9}).AppendTo(nil)
}

func FuzzDecode(f *testing.F) {
	for _, r := range samples() {
		f.Add(r.AppendTo(nil))
	}
	f.Add([]byte{1, 5, 0, 0, 0, 0, 1})
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := Decode(b)
		if err != nil {
			if r != nil {
				t.Fatalf("Decode returned a record with error %v", err)
			}
			for _, s := range []error{ErrTruncated, ErrMalformed, ErrTrailingBytes, ErrUnknownFrameVersion, ErrUnknownAPIKey, ErrUnknownVersion} {
				if errors.Is(err, s) {
					return
				}
			}
			t.Fatalf("error without a sentinel: %v", err)
		}
		// What decodes re-encodes to a record that decodes equal.
		again, err := Decode(r.AppendTo(nil))
		if err != nil {
			t.Fatalf("re-encoded %s does not decode: %v", r.APIKey(), err)
		}
		if !reflect.DeepEqual(again, r) {
			t.Fatalf("%s: re-decoded %+v, first %+v", r.APIKey(), again, r)
		}
	})
}
