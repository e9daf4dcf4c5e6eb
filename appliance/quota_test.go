package appliance

import (
	"testing"

	"github.com/ringbroker/ringbroker/appliance/quota"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func strp(s string) *string { return &s }

// metaTestBroker is adminTestBroker with a metadata log in dir, so
// controller changes are committed and can be replayed.
func metaTestBroker(t *testing.T, dir string) *Broker {
	t.Helper()
	b := adminTestBroker(t, map[string]string{"log.dirs": dir})
	meta, im, err := openMetadataLog(dir, b.log)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { meta.Close() })
	b.ctl.meta = meta
	b.ctl.image.Store(im)
	return b
}

// replayImage reopens the metadata log in dir as a restart does.
func replayImage(t *testing.T, b *Broker, dir string) *Image {
	t.Helper()
	b.ctl.meta.Close()
	meta, im, err := openMetadataLog(dir, b.log)
	if err != nil {
		t.Fatal(err)
	}
	b.ctl.meta = meta
	b.ctl.image.Store(im)
	return im
}

// TestClientQuotaHandlersPersist sets, describes and removes quotas through
// the handlers, and replays the metadata log as a restart does.
func TestClientQuotaHandlersPersist(t *testing.T) {
	dir := t.TempDir()
	b := metaTestBroker(t, dir)
	entry := func(parts []ClientQuotaEntityPart, ops ...kmsg.AlterClientQuotasRequestEntryOp) kmsg.AlterClientQuotasRequestEntry {
		e := kmsg.NewAlterClientQuotasRequestEntry()
		for _, p := range parts {
			ep := kmsg.NewAlterClientQuotasRequestEntryEntity()
			ep.Type, ep.Name = p.Type, p.Name
			e.Entity = append(e.Entity, ep)
		}
		e.Ops = ops
		return e
	}
	op := func(key string, v float64, remove bool) kmsg.AlterClientQuotasRequestEntryOp {
		return kmsg.AlterClientQuotasRequestEntryOp{Key: key, Value: v, Remove: remove}
	}
	alter := func(validateOnly bool, entries ...kmsg.AlterClientQuotasRequestEntry) *kmsg.AlterClientQuotasResponse {
		req := kmsg.NewPtrAlterClientQuotasRequest()
		req.Entries, req.ValidateOnly = entries, validateOnly
		return adminRun(t, b, req, 1).(*kmsg.AlterClientQuotasResponse)
	}
	app := []ClientQuotaEntityPart{{Type: "client-id", Name: strp("app")}}
	resp := alter(false,
		entry(app, op(quota.ProducerByteRate, 1<<20, false), op(quota.ConsumerByteRate, 2<<20, false)),
		entry([]ClientQuotaEntityPart{{Type: "user"}}, op(quota.RequestPercentage, 50, false)),
		entry([]ClientQuotaEntityPart{{Type: "user", Name: strp("x")}}, op("bogus", 1, false)),
		entry([]ClientQuotaEntityPart{{Type: "client-id", Name: strp("y")}}, op(quota.ProducerByteRate, 1.5, false)),
		entry([]ClientQuotaEntityPart{{Type: "client-id", Name: strp("z")}}, op(quota.ProducerByteRate, -1, false)),
	)
	wantCodes := []int16{0, 0, kerr.InvalidRequest.Code, kerr.InvalidRequest.Code, kerr.InvalidRequest.Code}
	for i, e := range resp.Entries {
		if e.ErrorCode != wantCodes[i] {
			t.Errorf("entry %d: code %d (%v), want %d", i, e.ErrorCode, e.ErrorMessage, wantCodes[i])
		}
		if e.ErrorCode != 0 && (e.ErrorMessage == nil || *e.ErrorMessage == "") {
			t.Errorf("entry %d: error without a message", i)
		}
	}
	// validate_only changes nothing.
	if r := alter(true, entry(app, op(quota.ProducerByteRate, 5, false))); r.Entries[0].ErrorCode != 0 {
		t.Fatalf("validate only: %v", r.Entries[0].ErrorMessage)
	}
	check := func(im *Image) {
		t.Helper()
		if v := buildQuotaTable(im.ClientQuotas).vals[quotaEntity{ClientID: quota.Named("app")}]; v[quota.ProducerByteRate] != 1<<20 || v[quota.ConsumerByteRate] != 2<<20 {
			t.Errorf("client app quotas %v", v)
		}
		if v := buildQuotaTable(im.ClientQuotas).vals[quotaEntity{User: quota.Default()}]; v[quota.RequestPercentage] != 50 {
			t.Errorf("default user quotas %v", v)
		}
		if len(buildQuotaTable(im.ClientQuotas).vals) != 2 || buildQuotaTable(im.ClientQuotas).kinds != quota.KindProduce|quota.KindFetch {
			t.Errorf("quotas %v kinds %b", buildQuotaTable(im.ClientQuotas).vals, buildQuotaTable(im.ClientQuotas).kinds)
		}
	}
	check(b.currentImage())
	check(replayImage(t, b, dir))

	dreq := kmsg.NewPtrDescribeClientQuotasRequest()
	dreq.Components = []kmsg.DescribeClientQuotasRequestComponent{{EntityType: "client-id", MatchType: 0, Match: strp("app")}}
	dresp := adminRun(t, b, dreq, 0).(*kmsg.DescribeClientQuotasResponse)
	if dresp.ErrorCode != 0 || len(dresp.Entries) != 1 || len(dresp.Entries[0].Values) != 2 ||
		dresp.Entries[0].Values[0].Key != quota.ConsumerByteRate || dresp.Entries[0].Values[1].Value != 1<<20 {
		t.Errorf("describe: %+v", dresp)
	}
	dreq.Components = []kmsg.DescribeClientQuotasRequestComponent{{EntityType: "nope", MatchType: 2}}
	if dresp := adminRun(t, b, dreq, 1).(*kmsg.DescribeClientQuotasResponse); dresp.ErrorCode != kerr.InvalidRequest.Code || dresp.ErrorMessage == nil {
		t.Errorf("bad filter: %+v", dresp)
	}

	// Removing every key removes the entity.
	alter(false, entry(app, op(quota.ProducerByteRate, 0, true), op(quota.ConsumerByteRate, 0, true)))
	im := replayImage(t, b, dir)
	if _, ok := buildQuotaTable(im.ClientQuotas).vals[quotaEntity{ClientID: quota.Named("app")}]; ok || buildQuotaTable(im.ClientQuotas).kinds != 0 {
		t.Errorf("after removal: %v kinds %b", buildQuotaTable(im.ClientQuotas).vals, buildQuotaTable(im.ClientQuotas).kinds)
	}
}
