package integration

// Regression tests for broker faults found by `make compat` (issue 8): each
// encodes Kafka's answer that a client's own test suite relies on.

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"
)

// clientAt returns a client that sends API key at version at most (kgo
// otherwise sends the highest version both sides support).
func clientAt(t *testing.T, b *Broker, key, version int16) *kgo.Client {
	t.Helper()
	v := kversion.Stable()
	v.SetMaxKeyVersion(key, version)
	return newClient(t, b, kgo.MaxVersions(v))
}

// TestCompatFetchFullRequestNamingSession: a Fetch with session epoch -1
// (FINAL) or 0 (INITIAL) is a full request whatever session id it carries,
// and is answered with the data; kafka-go's Client.Fetch sends session id
// -1, epoch -1 (its TestClientFetch got "topic not found" from an empty
// FETCH_SESSION_ID_NOT_FOUND answer). Only an incremental request
// (epoch > 0) needs a session we do not keep.
func TestCompatFetchFullRequestNamingSession(t *testing.T) {
	b := startBroker(t, "")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	const topic = "compat-fetch-session"
	createTopic(t, ctx, b, topic, 1)
	produceSync(ctx, t, newClient(t, b), topic, "a", "b", "c")
	cl := clientAt(t, b, 1, 11) // Fetch v11 names topics, as kafka-go sends it

	fetch := func(sessionID, epoch int32) *kmsg.FetchResponse {
		t.Helper()
		req := kmsg.NewPtrFetchRequest()
		req.SetVersion(11)
		req.ReplicaID = -1
		req.MaxWaitMillis = 100
		req.MinBytes = 1
		req.MaxBytes = 1 << 20
		req.SessionID, req.SessionEpoch = sessionID, epoch
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic = topic
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.CurrentLeaderEpoch, rp.LogStartOffset, rp.PartitionMaxBytes = -1, -1, 1<<20
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatalf("fetch (session %d, epoch %d): %v", sessionID, epoch, err)
		}
		return resp
	}
	for _, c := range []struct{ id, epoch int32 }{{-1, -1}, {0, -1}, {7, -1}, {0, 0}, {7, 0}} {
		resp := fetch(c.id, c.epoch)
		if resp.ErrorCode != 0 || len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
			t.Fatalf("session %d epoch %d: error %d, %d topics; want a full answer", c.id, c.epoch, resp.ErrorCode, len(resp.Topics))
		}
		p := resp.Topics[0].Partitions[0]
		if p.ErrorCode != 0 || p.HighWatermark != 3 || len(batchesIn(t, p.RecordBatches)) == 0 {
			t.Errorf("session %d epoch %d: partition error %d, high watermark %d, %d bytes; want 0, 3, the records",
				c.id, c.epoch, p.ErrorCode, p.HighWatermark, len(p.RecordBatches))
		}
		// Epoch -1 asks for no session (KIP-227); epoch 0 closes the one it
		// names, if any, and the broker opens a new one (fetch sessions).
		if c.epoch == -1 && resp.SessionID != 0 {
			t.Errorf("session %d epoch %d: answer names session %d; want 0 (none kept)", c.id, c.epoch, resp.SessionID)
		}
		if c.epoch == 0 && (resp.SessionID == 0 || resp.SessionID == c.id) {
			t.Errorf("session %d epoch %d: answer names session %d; want a new session", c.id, c.epoch, resp.SessionID)
		}
	}
	if resp := fetch(7, 1); resp.ErrorCode != kerr.FetchSessionIDNotFound.Code {
		t.Errorf("incremental fetch (session 7, epoch 1): error %d, want FETCH_SESSION_ID_NOT_FOUND (%d)", resp.ErrorCode, kerr.FetchSessionIDNotFound.Code)
	}
}

// TestCompatCreateTopicsManualAssignment: a manual replica assignment that
// puts every partition on this node alone creates the topic (kafka-go's
// TestClientCreateTopics); Kafka's rules for the rest: the assignment
// excludes num_partitions / replication_factor (INVALID_REQUEST), partitions
// are 0..n-1 and replicas live brokers (INVALID_REPLICA_ASSIGNMENT).
func TestCompatCreateTopicsManualAssignment(t *testing.T) {
	b := startBroker(t, "")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	assign := func(replicas ...[]int32) []kmsg.CreateTopicsRequestTopicReplicaAssignment {
		var out []kmsg.CreateTopicsRequestTopicReplicaAssignment
		for p, r := range replicas {
			a := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
			a.Partition, a.Replicas = int32(p), r
			out = append(out, a)
		}
		return out
	}
	gapped := assign([]int32{1}, []int32{1})
	gapped[1].Partition = 2
	cases := []struct {
		name       string
		partitions int32
		rf         int16
		assignment []kmsg.CreateTopicsRequestTopicReplicaAssignment
		want       int16
	}{
		{"compat-assign-ok", -1, -1, assign([]int32{1}, []int32{1}, []int32{1}), 0},
		{"compat-assign-other-broker", -1, -1, assign([]int32{1}, []int32{2}), kerr.InvalidReplicaAssignment.Code},
		{"compat-assign-two-replicas", -1, -1, assign([]int32{1, 2}), kerr.InvalidReplicaAssignment.Code},
		{"compat-assign-gap", -1, -1, gapped, kerr.InvalidReplicaAssignment.Code},
		{"compat-assign-and-count", 3, -1, assign([]int32{1}), kerr.InvalidRequest.Code},
	}
	for _, version := range []int16{0, 5} {
		cl := clientAt(t, b, 19, version)
		for _, c := range cases {
			req := kmsg.NewPtrCreateTopicsRequest()
			req.SetVersion(version)
			req.TimeoutMillis = 10000
			rt := kmsg.NewCreateTopicsRequestTopic()
			rt.Topic = c.name + "-v" + string(rune('0'+version))
			rt.NumPartitions, rt.ReplicationFactor, rt.ReplicaAssignment = c.partitions, c.rf, c.assignment
			req.Topics = append(req.Topics, rt)
			resp, err := req.RequestWith(ctx, cl)
			if err != nil {
				t.Fatalf("%s v%d: %v", c.name, version, err)
			}
			if got := resp.Topics[0].ErrorCode; got != c.want {
				t.Errorf("%s v%d: error %d, want %d", c.name, version, got, c.want)
			}
		}
	}
	md, err := newAdmin(t, b).ListTopics(ctx, "compat-assign-ok-v0")
	if err != nil {
		t.Fatal(err)
	}
	if d := md["compat-assign-ok-v0"]; d.Err != nil || len(d.Partitions) != 3 {
		t.Errorf("compat-assign-ok-v0: %v, %d partitions; want 3", d.Err, len(d.Partitions))
	}
}

// TestCompatMetadataAutoCreateLeaderNotAvailable: as in Kafka, the Metadata
// request that auto-creates a topic is answered LEADER_NOT_AVAILABLE with
// no partitions, and the next one has them (kafka-go's TestConn
// delete_topics subtests read an empty partition list right after such a
// request).
func TestCompatMetadataAutoCreateLeaderNotAvailable(t *testing.T) {
	b := startBroker(t, "")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, version := range []int16{1, 6, 12} {
		cl := clientAt(t, b, 3, version)
		topic := "compat-autocreate-v" + string(rune('a'+version))
		meta := func() kmsg.MetadataResponseTopic {
			t.Helper()
			req := kmsg.NewPtrMetadataRequest()
			req.SetVersion(version)
			req.AllowAutoTopicCreation = true
			rt := kmsg.NewMetadataRequestTopic()
			rt.Topic = kmsg.StringPtr(topic)
			req.Topics = append(req.Topics, rt)
			resp, err := req.RequestWith(ctx, cl)
			if err != nil || len(resp.Topics) != 1 {
				t.Fatalf("metadata v%d: %v (%d topics)", version, err, len(resp.Topics))
			}
			return resp.Topics[0]
		}
		if first := meta(); first.ErrorCode != kerr.LeaderNotAvailable.Code || len(first.Partitions) != 0 {
			t.Errorf("v%d creating request: error %d, %d partitions; want LEADER_NOT_AVAILABLE (%d), none",
				version, first.ErrorCode, len(first.Partitions), kerr.LeaderNotAvailable.Code)
		}
		if second := meta(); second.ErrorCode != 0 || len(second.Partitions) != 1 {
			t.Errorf("v%d next request: error %d, %d partitions; want 0 and num.partitions (1)", version, second.ErrorCode, len(second.Partitions))
		}
	}
}
