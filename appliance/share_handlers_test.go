package appliance

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// shareTestClient starts a broker with topic "st" (2 partitions, 5
// records in partition 0) and returns a raw client to it.
func shareTestClient(t *testing.T) (*Broker, *kgo.Client, [16]byte) {
	t.Helper()
	return shareTestClientWith(t, nil)
}

// shareTestClientWith is shareTestClient on a broker with props.
func shareTestClientWith(t *testing.T, props map[string]string) (*Broker, *kgo.Client, [16]byte) {
	t.Helper()
	b := startTestBroker(t, props)
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr().String()), kgo.DefaultProduceTopic("st"), kgo.AllowAutoTopicCreation(),
		kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	creq := kmsg.NewPtrCreateTopicsRequest()
	ct := kmsg.NewCreateTopicsRequestTopic()
	ct.Topic, ct.NumPartitions, ct.ReplicationFactor = "st", 2, 1
	creq.Topics = append(creq.Topics, ct)
	if _, err := creq.RequestWith(ctx, cl); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 5; i++ {
		if err := cl.ProduceSync(ctx, &kgo.Record{Partition: 0, Value: []byte("v")}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	return b, cl, b.currentImage().Topics["st"].ID
}

// setShareEarliestRaw sets the group's share.auto.offset.reset to earliest
// (IncrementalAlterConfigs on the GROUP resource).
func setShareEarliestRaw(t *testing.T, cl *kgo.Client, group string) {
	t.Helper()
	alter := kmsg.NewPtrIncrementalAlterConfigsRequest()
	res := kmsg.NewIncrementalAlterConfigsRequestResource()
	res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeGroupConfig, group
	c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
	c.Name, c.Value = "share.auto.offset.reset", kmsg.StringPtr("earliest")
	res.Configs = append(res.Configs, c)
	alter.Resources = append(alter.Resources, res)
	shareReq(t, cl, alter)
}

// newShareFetch is a ShareFetch of partition 0 of topic tid (1 MiB, 100
// records) for member of group.
func newShareFetch(group, member string, tid [16]byte) *kmsg.ShareFetchRequest {
	req := kmsg.NewPtrShareFetchRequest()
	req.GroupID, req.MemberID = kmsg.StringPtr(group), kmsg.StringPtr(member)
	req.MaxBytes, req.MaxRecords = 1<<20, 100
	rt := kmsg.NewShareFetchRequestTopic()
	rt.TopicID = tid
	rp := kmsg.NewShareFetchRequestTopicPartition()
	rp.PartitionMaxBytes = 1 << 20
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return req
}

func shareReq[T kmsg.Request](t *testing.T, cl *kgo.Client, req T) kmsg.Response {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	resp, err := cl.Request(ctx, req)
	if err != nil {
		t.Fatalf("request key %d: %v", req.Key(), err)
	}
	return resp
}

func TestShareHandlersErrors(t *testing.T) {
	b, cl, tid := shareTestClient(t)
	_ = b
	const group = "hg"
	const m1 = "AAAAAAAAAAAAAAAAAAAAAQ==" // a Uuid string, padded as franz-go makes them
	// Config: earliest, and refusals of bad values.
	alter := func(name, value string) int16 {
		req := kmsg.NewPtrIncrementalAlterConfigsRequest()
		res := kmsg.NewIncrementalAlterConfigsRequestResource()
		res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeGroupConfig, group
		c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
		c.Name, c.Value = name, kmsg.StringPtr(value)
		res.Configs = append(res.Configs, c)
		req.Resources = append(req.Resources, res)
		return shareReq(t, cl, req).(*kmsg.IncrementalAlterConfigsResponse).Resources[0].ErrorCode
	}
	for _, tc := range []struct {
		name, value string
		want        int16
	}{
		{"share.auto.offset.reset", "earliest", 0},
		{"share.auto.offset.reset", "sometimes", kerr.InvalidConfig.Code},
		{"share.auto.offset.reset", "by_duration:PT1H", 0},
		{"share.auto.offset.reset", "by_duration:-PT1H", kerr.InvalidConfig.Code},
		{"share.record.lock.duration.ms", "100", kerr.InvalidConfig.Code},
		{"share.delivery.count.limit", "50", kerr.InvalidConfig.Code},
		{"share.isolation.level", "read_committed", 0},
		{"share.isolation.level", "read_dirty", kerr.InvalidConfig.Code},
		{"no.such.config", "1", kerr.InvalidConfig.Code},
		{"share.auto.offset.reset", "earliest", 0},
		{"share.isolation.level", "read_uncommitted", 0},
	} {
		if got := alter(tc.name, tc.value); got != tc.want {
			t.Errorf("set %s=%s: error %d, want %d", tc.name, tc.value, got, tc.want)
		}
	}
	dreq := kmsg.NewPtrDescribeConfigsRequest()
	dres := kmsg.NewDescribeConfigsRequestResource()
	dres.ResourceType, dres.ResourceName = kmsg.ConfigResourceTypeGroupConfig, group
	dres.ConfigNames = []string{"share.auto.offset.reset", "share.record.lock.duration.ms"}
	dreq.Resources = append(dreq.Resources, dres)
	got := map[string]string{}
	for _, c := range shareReq(t, cl, dreq).(*kmsg.DescribeConfigsResponse).Resources[0].Configs {
		got[c.Name] = *c.Value
	}
	if got["share.auto.offset.reset"] != "earliest" || got["share.record.lock.duration.ms"] != "30000" {
		t.Errorf("DescribeConfigs group: %v", got)
	}

	// Heartbeat errors.
	hb := func(member string, epoch int32, topics []string) *kmsg.ShareGroupHeartbeatResponse {
		req := kmsg.NewPtrShareGroupHeartbeatRequest()
		req.GroupID, req.MemberID, req.MemberEpoch, req.SubscribedTopicNames = group, member, epoch, topics
		return shareReq(t, cl, req).(*kmsg.ShareGroupHeartbeatResponse)
	}
	if r := hb("", 0, []string{"st"}); r.ErrorCode != kerr.InvalidRequest.Code {
		t.Errorf("empty member id: %d", r.ErrorCode)
	}
	if r := hb("m1", 0, nil); r.ErrorCode != kerr.InvalidRequest.Code {
		t.Errorf("join without topics: %d", r.ErrorCode)
	}
	if r := hb("m1", 5, nil); r.ErrorCode != kerr.UnknownMemberID.Code {
		t.Errorf("unknown member: %d", r.ErrorCode)
	}
	r := hb(m1, 0, []string{"st"})
	if r.ErrorCode != 0 || r.MemberEpoch < 1 || r.Assignment == nil || len(r.Assignment.TopicPartitions) != 1 ||
		len(r.Assignment.TopicPartitions[0].Partitions) != 2 || r.HeartbeatIntervalMillis != 5000 {
		t.Fatalf("join: %+v", r)
	}

	// ShareFetch session errors.
	fetch := func(epoch int32, acks []kmsg.ShareFetchRequestTopicPartitionAcknowledgementBatch, wait int32) *kmsg.ShareFetchResponse {
		req := kmsg.NewPtrShareFetchRequest()
		req.GroupID, req.MemberID = kmsg.StringPtr(group), kmsg.StringPtr(m1)
		req.ShareSessionEpoch, req.MaxWaitMillis, req.MinBytes, req.MaxBytes, req.MaxRecords = epoch, wait, 1, 1<<20, 100
		rt := kmsg.NewShareFetchRequestTopic()
		rt.TopicID = tid
		rp := kmsg.NewShareFetchRequestTopicPartition()
		rp.Partition, rp.PartitionMaxBytes, rp.AcknowledgementBatches = 0, 1<<20, acks
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		return shareReq(t, cl, req).(*kmsg.ShareFetchResponse)
	}
	accept := []kmsg.ShareFetchRequestTopicPartitionAcknowledgementBatch{{FirstOffset: 0, LastOffset: 1, AcknowledgeTypes: []int8{1}}}
	if f := fetch(3, nil, 0); f.ErrorCode != kerr.ShareSessionNotFound.Code {
		t.Errorf("fetch without a session: %d", f.ErrorCode)
	}
	if f := fetch(0, accept, 0); f.ErrorCode != kerr.InvalidRequest.Code {
		t.Errorf("acks on epoch 0: %d", f.ErrorCode)
	}
	f := fetch(0, nil, 0)
	if f.ErrorCode != 0 || f.AcquisitionLockTimeoutMillis != 30000 || len(f.Topics) != 1 {
		t.Fatalf("open session: %+v", f)
	}
	acq := f.Topics[0].Partitions[0].AcquiredRecords
	if len(acq) != 1 || acq[0].FirstOffset != 0 || acq[0].LastOffset != 4 || acq[0].DeliveryCount != 1 || len(f.Topics[0].Partitions[0].Records) == 0 {
		t.Fatalf("acquired %+v", acq)
	}
	if f := fetch(5, nil, 0); f.ErrorCode != kerr.InvalidShareSessionEpoch.Code {
		t.Errorf("wrong epoch: %d", f.ErrorCode)
	}
	// Piggybacked accept of 0-1, then nothing left to acquire: the long
	// poll waits its MaxWaitMs and answers empty.
	start := time.Now()
	f = fetch(1, accept, 300)
	if p := f.Topics[0].Partitions[0]; f.ErrorCode != 0 || p.AcknowledgeErrorCode != 0 || len(p.AcquiredRecords) != 0 {
		t.Fatalf("ack + fetch: %+v", f)
	}
	if el := time.Since(start); el < 250*time.Millisecond || el > 5*time.Second {
		t.Errorf("long poll took %v, want about 300ms", el)
	}
	// Accepting again is INVALID_RECORD_STATE.
	f = fetch(2, accept, 0)
	if p := f.Topics[0].Partitions[0]; p.AcknowledgeErrorCode != kerr.InvalidRecordState.Code {
		t.Errorf("double accept: %d", p.AcknowledgeErrorCode)
	}
	// DescribeShareGroupOffsets v1: the live SPSO and the lag.
	dso := kmsg.NewPtrDescribeShareGroupOffsetsRequest()
	dso.Groups = []kmsg.DescribeShareGroupOffsetsRequestGroup{{GroupID: group}}
	if r := shareReq(t, cl, dso).(*kmsg.DescribeShareGroupOffsetsResponse); len(r.Groups) != 1 || len(r.Groups[0].Topics) != 1 ||
		r.Groups[0].Topics[0].Partitions[0].StartOffset != 2 || r.Groups[0].Topics[0].Partitions[0].Lag != 3 {
		t.Errorf("DescribeShareGroupOffsets: %+v", r.Groups)
	}
	// ShareAcknowledge: release 2-4; a renew without IsRenewAck is INVALID_REQUEST.
	ack := func(epoch int32, first, last int64, typ int8, renew bool) *kmsg.ShareAcknowledgeResponse {
		req := kmsg.NewPtrShareAcknowledgeRequest()
		req.GroupID, req.MemberID, req.ShareSessionEpoch, req.IsRenewAck = kmsg.StringPtr(group), kmsg.StringPtr(m1), epoch, renew
		rt := kmsg.NewShareAcknowledgeRequestTopic()
		rt.TopicID = tid
		rp := kmsg.NewShareAcknowledgeRequestTopicPartition()
		rp.Partition = 0
		rp.AcknowledgementBatches = []kmsg.ShareAcknowledgeRequestTopicPartitionAcknowledgementBatch{{FirstOffset: first, LastOffset: last, AcknowledgeTypes: []int8{typ}}}
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		return shareReq(t, cl, req).(*kmsg.ShareAcknowledgeResponse)
	}
	if a := ack(0, 2, 4, 2, false); a.ErrorCode != kerr.InvalidShareSessionEpoch.Code {
		t.Errorf("ShareAcknowledge epoch 0: %d", a.ErrorCode)
	}
	if a := ack(3, 2, 2, 4, false); a.Topics[0].Partitions[0].ErrorCode != kerr.InvalidRequest.Code {
		t.Errorf("renew without IsRenewAck: %d", a.Topics[0].Partitions[0].ErrorCode)
	}
	if a := ack(4, 2, 4, 2, false); a.ErrorCode != 0 || a.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Errorf("release: %+v", a)
	}
	f = fetch(5, nil, 0)
	if acq := f.Topics[0].Partitions[0].AcquiredRecords; len(acq) != 1 || acq[0].FirstOffset != 2 || acq[0].LastOffset != 4 || acq[0].DeliveryCount != 2 {
		t.Errorf("redelivery after release: %+v", acq)
	}
	// The group is not empty: no offset changes, no delete.
	aog := kmsg.NewPtrAlterShareGroupOffsetsRequest()
	aog.GroupID = group
	at := kmsg.NewAlterShareGroupOffsetsRequestTopic()
	at.Topic = "st"
	at.Partitions = []kmsg.AlterShareGroupOffsetsRequestTopicPartition{{Partition: 0, StartOffset: 1}}
	aog.Topics = append(aog.Topics, at)
	if r := shareReq(t, cl, aog).(*kmsg.AlterShareGroupOffsetsResponse); r.ErrorCode != kerr.NonEmptyGroup.Code {
		t.Errorf("alter offsets of a non-empty group: %d", r.ErrorCode)
	}
	dg := kmsg.NewPtrDeleteGroupsRequest()
	dg.Groups = []string{group}
	if r := shareReq(t, cl, dg).(*kmsg.DeleteGroupsResponse); r.Groups[0].ErrorCode != kerr.NonEmptyGroup.Code {
		t.Errorf("delete a non-empty share group: %d", r.Groups[0].ErrorCode)
	}
	// ListGroups v5 types it "share"; DescribeGroups (classic groups only,
	// v5) shows it as Dead, as Kafka does for groups of another type.
	for _, tc := range []struct {
		filter []string
		want   bool
	}{{nil, true}, {[]string{"share"}, true}, {[]string{"Share"}, true}, {[]string{"classic"}, false}} {
		lg := kmsg.NewPtrListGroupsRequest()
		lg.TypesFilter = tc.filter
		found := false
		for _, g := range shareReq(t, cl, lg).(*kmsg.ListGroupsResponse).Groups {
			if g.Group == group {
				found = g.GroupType == "share" && g.ProtocolType == "share" && g.GroupState == "Stable"
			}
		}
		if found != tc.want {
			t.Errorf("ListGroups types %v: listed %v, want %v", tc.filter, found, tc.want)
		}
	}
	dgr := kmsg.NewPtrDescribeGroupsRequest()
	dgr.Groups = []string{group}
	if r := shareReq(t, cl, dgr).(*kmsg.DescribeGroupsResponse); r.Groups[0].State != "Dead" || r.Groups[0].ErrorCode != kerr.GroupIDNotFound.Code {
		t.Errorf("DescribeGroups of a share group: %+v", r.Groups[0])
	}
	// Leave, then delete works and the group is gone.
	if r := hb(m1, -1, nil); r.ErrorCode != 0 || r.MemberEpoch != -1 {
		t.Fatalf("leave: %+v", r)
	}
	if r := shareReq(t, cl, dg).(*kmsg.DeleteGroupsResponse); r.Groups[0].ErrorCode != 0 {
		t.Errorf("delete an empty share group: %d", r.Groups[0].ErrorCode)
	}
	if r := shareReq(t, cl, dg).(*kmsg.DeleteGroupsResponse); r.Groups[0].ErrorCode != kerr.GroupIDNotFound.Code {
		t.Errorf("delete twice: %d", r.Groups[0].ErrorCode)
	}
	sgd := kmsg.NewPtrShareGroupDescribeRequest()
	sgd.GroupIDs = []string{group, ""}
	d := shareReq(t, cl, sgd).(*kmsg.ShareGroupDescribeResponse)
	if d.Groups[0].ErrorCode != kerr.GroupIDNotFound.Code || d.Groups[1].ErrorCode != kerr.InvalidGroupID.Code {
		t.Errorf("describe deleted / empty id: %d %d", d.Groups[0].ErrorCode, d.Groups[1].ErrorCode)
	}
	// Unknown topic id in a fetch.
	const m9 = "AAAAAAAAAAAAAAAAAAAACQ"
	hbo := kmsg.NewPtrShareGroupHeartbeatRequest()
	hbo.GroupID, hbo.MemberID, hbo.SubscribedTopicNames = "other", m9, []string{"st"}
	if r := shareReq(t, cl, hbo).(*kmsg.ShareGroupHeartbeatResponse); r.ErrorCode != 0 {
		t.Fatalf("join other: %d", r.ErrorCode)
	}
	req := kmsg.NewPtrShareFetchRequest()
	req.GroupID, req.MemberID = kmsg.StringPtr("other"), kmsg.StringPtr(m9)
	rt := kmsg.NewShareFetchRequestTopic()
	rt.TopicID = [16]byte{9, 9}
	rp := kmsg.NewShareFetchRequestTopicPartition()
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	fr := shareReq(t, cl, req).(*kmsg.ShareFetchResponse)
	if fr.ErrorCode != 0 || len(fr.Topics) != 1 || fr.Topics[0].Partitions[0].ErrorCode != kerr.UnknownTopicID.Code {
		t.Errorf("unknown topic id: %+v", fr)
	}
	// A classic group's id is not a share group.
	jg := kmsg.NewPtrOffsetCommitRequest()
	jg.Group, jg.Generation = "classic-g", -1
	ot := kmsg.NewOffsetCommitRequestTopic()
	ot.Topic = "st"
	ot.Partitions = []kmsg.OffsetCommitRequestTopicPartition{{Partition: 0, Offset: 1, LeaderEpoch: -1}}
	jg.Topics = append(jg.Topics, ot)
	shareReq(t, cl, jg)
	hbc := kmsg.NewPtrShareGroupHeartbeatRequest()
	hbc.GroupID, hbc.MemberID, hbc.SubscribedTopicNames = "classic-g", "m", []string{"st"}
	if r := shareReq(t, cl, hbc).(*kmsg.ShareGroupHeartbeatResponse); r.ErrorCode != kerr.GroupIDNotFound.Code {
		t.Errorf("share heartbeat on a classic group: %d", r.ErrorCode)
	}
}

func TestShareFetchReadCommitted(t *testing.T) {
	b := startTestBroker(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr().String()), kgo.DefaultProduceTopic("tx"), kgo.AllowAutoTopicCreation(),
		kgo.TransactionalID("share-tx"))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	txn := func(commit bool, n int) {
		if err := cl.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		for i := 0; i < n; i++ {
			if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte("v")}).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
		if err := cl.EndTransaction(ctx, kgo.TransactionEndTry(commit)); err != nil {
			t.Fatal(err)
		}
	}
	txn(false, 3) // offsets 0-2, abort marker 3
	txn(true, 2)  // offsets 4-5, commit marker 6
	tid := b.currentImage().Topics["tx"].ID
	for _, kv := range [][2]string{{"share.auto.offset.reset", "earliest"}, {"share.isolation.level", "read_committed"}} {
		req := kmsg.NewPtrIncrementalAlterConfigsRequest()
		res := kmsg.NewIncrementalAlterConfigsRequestResource()
		res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeGroupConfig, "rc"
		c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
		c.Name, c.Value = kv[0], kmsg.StringPtr(kv[1])
		res.Configs = append(res.Configs, c)
		req.Resources = append(req.Resources, res)
		if r := shareReq(t, cl, req).(*kmsg.IncrementalAlterConfigsResponse); r.Resources[0].ErrorCode != 0 {
			t.Fatalf("set %s: %d", kv[0], r.Resources[0].ErrorCode)
		}
	}
	const m = "AAAAAAAAAAAAAAAAAAAAAA"
	hb := kmsg.NewPtrShareGroupHeartbeatRequest()
	hb.GroupID, hb.MemberID, hb.SubscribedTopicNames = "rc", m, []string{"tx"}
	if r := shareReq(t, cl, hb).(*kmsg.ShareGroupHeartbeatResponse); r.ErrorCode != 0 {
		t.Fatalf("join: %d", r.ErrorCode)
	}
	f := shareReq(t, cl, newShareFetch("rc", m, tid)).(*kmsg.ShareFetchResponse)
	if f.ErrorCode != 0 || len(f.Topics) != 1 {
		t.Fatalf("fetch: %+v", f)
	}
	var got []int64
	for _, a := range f.Topics[0].Partitions[0].AcquiredRecords {
		for o := a.FirstOffset; o <= a.LastOffset; o++ {
			got = append(got, o)
		}
	}
	// The aborted records 0-2 are archived, never acquired; the markers
	// (3, 6) are acquired and acknowledged as gaps by clients.
	if want := []int64{3, 4, 5, 6}; !slices.Equal(got, want) {
		t.Fatalf("acquired offsets %v, want %v", got, want)
	}
}

// ShareFetch and ShareAcknowledge of a member that is not in the group
// acquire nothing (UNKNOWN_MEMBER_ID); a member id that is not a Uuid
// string, an unknown ShareAcquireMode and negative limits are
// INVALID_REQUEST.
func TestShareFetchMemberAndLimits(t *testing.T) {
	_, cl, tid := shareTestClient(t)
	const group, member = "mg", "AAAAAAAAAAAAAAAAAAAAAQ"
	fetch := func(member string, mod func(*kmsg.ShareFetchRequest)) *kmsg.ShareFetchResponse {
		req := newShareFetch(group, member, tid)
		if mod != nil {
			mod(req)
		}
		return shareReq(t, cl, req).(*kmsg.ShareFetchResponse)
	}
	setShareEarliestRaw(t, cl, group)

	// Not a member (the group does not even exist yet).
	if f := fetch(member, nil); f.ErrorCode != kerr.UnknownMemberID.Code || len(f.Topics) != 0 {
		t.Fatalf("fetch of a non-member: %+v", f)
	}
	ack := kmsg.NewPtrShareAcknowledgeRequest()
	ack.GroupID, ack.MemberID, ack.ShareSessionEpoch = kmsg.StringPtr(group), kmsg.StringPtr(member), 1
	if r := shareReq(t, cl, ack).(*kmsg.ShareAcknowledgeResponse); r.ErrorCode != kerr.UnknownMemberID.Code {
		t.Errorf("acknowledge of a non-member: %d", r.ErrorCode)
	}
	for _, bad := range []string{"m1", "AAAAAAAAAAAAAAAAAAAA", "AAAAAAAAAAAAAAAAAAAAAQ=", "AAAAAAAAAAAAAAAAAAAAAAAA", "AAAAAAAAAAAAAAAAAAAA+Q", "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"} {
		if f := fetch(bad, nil); f.ErrorCode != kerr.InvalidRequest.Code {
			t.Errorf("fetch with member id %q: %d, want INVALID_REQUEST", bad, f.ErrorCode)
		}
		ack.MemberID = kmsg.StringPtr(bad)
		if r := shareReq(t, cl, ack).(*kmsg.ShareAcknowledgeResponse); r.ErrorCode != kerr.InvalidRequest.Code {
			t.Errorf("acknowledge with member id %q: %d, want INVALID_REQUEST", bad, r.ErrorCode)
		}
	}
	hb := kmsg.NewPtrShareGroupHeartbeatRequest()
	hb.GroupID, hb.MemberID, hb.SubscribedTopicNames = group, member, []string{"st"}
	if r := shareReq(t, cl, hb).(*kmsg.ShareGroupHeartbeatResponse); r.ErrorCode != 0 {
		t.Fatalf("join: %d", r.ErrorCode)
	}
	// Another id in the joined group is still not a member.
	if f := fetch("AAAAAAAAAAAAAAAAAAAAAg", nil); f.ErrorCode != kerr.UnknownMemberID.Code {
		t.Errorf("fetch of another id: %d", f.ErrorCode)
	}
	for name, mod := range map[string]func(*kmsg.ShareFetchRequest){
		"acquire mode 2":  func(r *kmsg.ShareFetchRequest) { r.ShareAcquireMode = 2 },
		"acquire mode -1": func(r *kmsg.ShareFetchRequest) { r.ShareAcquireMode = -1 },
		"max records -1":  func(r *kmsg.ShareFetchRequest) { r.MaxRecords = -1 },
		"batch size -1":   func(r *kmsg.ShareFetchRequest) { r.BatchSize = -1 },
		"max bytes -1":    func(r *kmsg.ShareFetchRequest) { r.MaxBytes = -1 },
	} {
		if f := fetch(member, mod); f.ErrorCode != kerr.InvalidRequest.Code {
			t.Errorf("%s: %d, want INVALID_REQUEST", name, f.ErrorCode)
		}
	}
	// The member fetches; 0 limits mean the defaults.
	f := fetch(member, func(r *kmsg.ShareFetchRequest) {
		r.MaxRecords, r.BatchSize, r.MaxBytes, r.ShareAcquireMode = 0, 0, 0, 1
	})
	if f.ErrorCode != 0 || len(f.Topics) != 1 || len(f.Topics[0].Partitions[0].AcquiredRecords) != 1 || f.Topics[0].Partitions[0].AcquiredRecords[0].LastOffset != 4 {
		t.Fatalf("member fetch: %+v", f)
	}
	// After it leaves it acquires nothing more.
	hb.MemberEpoch = -1
	if r := shareReq(t, cl, hb).(*kmsg.ShareGroupHeartbeatResponse); r.ErrorCode != 0 {
		t.Fatalf("leave: %d", r.ErrorCode)
	}
	if f := fetch(member, func(r *kmsg.ShareFetchRequest) { r.ShareSessionEpoch = 1 }); f.ErrorCode != kerr.UnknownMemberID.Code {
		t.Errorf("fetch after leaving: %d", f.ErrorCode)
	}
}
