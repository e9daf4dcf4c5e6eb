package integration

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// TestAcksZeroFailureClosesConnection sends acks=0 produce requests on raw
// connections. One that fails (an unknown topic, a batch with a bad CRC)
// gets no answer, so the broker closes the connection, as Kafka does, for
// the client to notice; one that succeeds leaves the connection open (an
// ApiVersions after it is answered) and its record is stored.
func TestAcksZeroFailureClosesConnection(t *testing.T) {
	b := startBroker(t, "")
	createTopic(t, t.Context(), b, "acks0", 1)

	produce := func(topic string, records []byte) []byte { return rawProduceRequest(7, 0, topic, records) }
	apiVersions := reqHeader(nil, apiKeyApiVersions, 0, 2, false)

	good := rawBatch(nil, []byte("zero"))
	c := dialRaw(t, b)
	if sendRaw(t, c, frame(produce("acks0", good))) {
		t.Fatal("connection closed while sending a valid acks=0 produce")
	}
	if out := roundTrip(t, c, apiVersions); out.closed {
		t.Fatal("connection closed after a valid acks=0 produce")
	}
	c.Close()

	corrupt := append([]byte(nil), good...)
	corrupt[len(corrupt)-1] ^= 0xff // the CRC no longer matches
	for name, req := range map[string][]byte{
		"unknown topic": produce("no-such-topic", good),
		"bad CRC":       produce("acks0", corrupt),
	} {
		c := dialRaw(t, b)
		if !sendRaw(t, c, frame(req)) {
			if out := awaitReaction(t, c); !out.closed {
				t.Errorf("%s: acks=0 produce answered %d bytes; want the connection closed", name, len(out.resp))
			}
		}
		c.Close()
	}

	recs := consumeN(t, t.Context(), newClient(t, b, kgo.ConsumeTopics("acks0"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart())), 1, 10*time.Second)
	if string(recs[0].Value) != "zero" {
		t.Fatalf("stored record %q, want \"zero\"", recs[0].Value)
	}
}
