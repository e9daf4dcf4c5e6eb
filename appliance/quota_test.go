package appliance

import (
	"bytes"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/VictoriaMetrics/metrics"
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
	t.Cleanup(func() { meta.close() })
	b.meta = meta
	b.image.Store(im)
	return b
}

// replayImage reopens the metadata log in dir as a restart does.
func replayImage(t *testing.T, b *Broker, dir string) *Image {
	t.Helper()
	b.meta.close()
	meta, im, err := openMetadataLog(dir, b.log)
	if err != nil {
		t.Fatal(err)
	}
	b.meta = meta
	b.image.Store(im)
	return im
}

func TestParseQuotaEntity(t *testing.T) {
	for _, tc := range []struct {
		parts []ClientQuotaEntityPart
		want  string // entity path, or "" for an error
	}{
		{[]ClientQuotaEntityPart{{Type: "user", Name: strp("alice")}}, "users/alice"},
		{[]ClientQuotaEntityPart{{Type: "client-id", Name: nil}}, "clients/<default>"},
		{[]ClientQuotaEntityPart{{Type: "client-id", Name: strp("c")}, {Type: "user", Name: nil}}, "users/<default>/clients/c"},
		{[]ClientQuotaEntityPart{{Type: "ip", Name: strp("10.0.0.1")}}, "ips/10.0.0.1"},
		{[]ClientQuotaEntityPart{{Type: "ip", Name: nil}}, "ips/<default>"},
		{nil, ""},
		{[]ClientQuotaEntityPart{{Type: "group", Name: strp("g")}}, ""},
		{[]ClientQuotaEntityPart{{Type: "user", Name: strp("a")}, {Type: "user", Name: strp("b")}}, ""},
		{[]ClientQuotaEntityPart{{Type: "ip", Name: strp("10.0.0.1")}, {Type: "user", Name: strp("a")}}, ""},
		{[]ClientQuotaEntityPart{{Type: "ip", Name: strp("not-an-ip")}}, ""},
	} {
		e, err := parseQuotaEntity(tc.parts)
		switch {
		case tc.want == "" && err == nil:
			t.Errorf("%v: parsed as %s, want an error", tc.parts, e)
		case tc.want != "" && err != nil:
			t.Errorf("%v: %v", tc.parts, err)
		case tc.want != "" && e.String() != tc.want:
			t.Errorf("%v: got %s, want %s", tc.parts, e, tc.want)
		}
	}
}

func TestValidateQuotaOp(t *testing.T) {
	user := quotaEntity{user: namedPart("u")}
	ip := quotaEntity{ip: defaultPart}
	for _, tc := range []struct {
		e      quotaEntity
		key    string
		value  float64
		remove bool
		ok     bool
	}{
		{user, quotaProducerByteRate, 1024, false, true},
		{user, quotaConsumerByteRate, 1.5, false, false}, // LONG
		{user, quotaProducerByteRate, 0, false, false},
		{user, quotaProducerByteRate, -5, false, false},
		{user, quotaProducerByteRate, math.NaN(), false, false},
		{user, quotaProducerByteRate, -5, true, true}, // value ignored on remove
		{user, quotaRequestPercentage, 12.5, false, true},
		{user, quotaControllerMutationRate, 0.5, false, true},
		{user, quotaConnectionCreationRate, 10, false, false},
		{user, "no_such_key", 10, false, false},
		{user, "no_such_key", 0, true, false},
		{ip, quotaConnectionCreationRate, 10, false, true},
		{ip, quotaConnectionCreationRate, 10.5, false, false},
		{ip, quotaProducerByteRate, 10, false, false},
	} {
		err := validateQuotaOp(tc.e, tc.key, tc.value, tc.remove)
		if (err == nil) != tc.ok {
			t.Errorf("%s %s=%v remove=%v: err %v, want ok=%v", tc.e, tc.key, tc.value, tc.remove, err, tc.ok)
		}
	}
}

// quotaImage builds an image with producer_byte_rate set on each entity.
func quotaImage(t *testing.T, vals map[string][]ClientQuotaEntityPart) *Image {
	t.Helper()
	var recs []MetadataRecord
	for name, parts := range vals {
		recs = append(recs, MetadataRecord{ClientQuota: &ClientQuotaRecord{Entity: parts, Key: quotaProducerByteRate, Value: quotaValueOf(name)}})
	}
	im, err := emptyImage().Apply(0, recs)
	if err != nil {
		t.Fatal(err)
	}
	return im
}

// quotaValueOf gives each precedence level a distinct value.
func quotaValueOf(level string) float64 {
	return map[string]float64{"u/c": 1, "u/dc": 2, "u": 3, "du/c": 4, "du/dc": 5, "du": 6, "c": 7, "dc": 8}[level]
}

func TestResolveQuotaPrecedence(t *testing.T) {
	all := map[string][]ClientQuotaEntityPart{
		"u/c":   {{Type: "user", Name: strp("ANONYMOUS")}, {Type: "client-id", Name: strp("app")}},
		"u/dc":  {{Type: "user", Name: strp("ANONYMOUS")}, {Type: "client-id"}},
		"u":     {{Type: "user", Name: strp("ANONYMOUS")}},
		"du/c":  {{Type: "user"}, {Type: "client-id", Name: strp("app")}},
		"du/dc": {{Type: "user"}, {Type: "client-id"}},
		"du":    {{Type: "user"}},
		"c":     {{Type: "client-id", Name: strp("app")}},
		"dc":    {{Type: "client-id"}},
	}
	order := []string{"u/c", "u/dc", "u", "du/c", "du/dc", "du", "c", "dc"}
	wantTags := map[string]quotaTags{
		"u/c": {"ANONYMOUS", "app"}, "u/dc": {"ANONYMOUS", "app"}, "u": {"ANONYMOUS", ""},
		"du/c": {"ANONYMOUS", "app"}, "du/dc": {"ANONYMOUS", "app"}, "du": {"ANONYMOUS", ""},
		"c": {"", "app"}, "dc": {"", "app"},
	}
	// Remove levels from the most specific down: each time the next one wins.
	for i, level := range order {
		vals := map[string][]ClientQuotaEntityPart{}
		for _, l := range order[i:] {
			vals[l] = all[l]
		}
		im := quotaImage(t, vals)
		limit, tags, ok := im.resolveQuota(quotaProducerByteRate, "ANONYMOUS", "app")
		if !ok || limit != quotaValueOf(level) || tags != wantTags[level] {
			t.Errorf("levels %v: got %v %+v %v, want %v %+v", order[i:], limit, tags, ok, quotaValueOf(level), wantTags[level])
		}
		if _, _, ok := im.resolveQuota(quotaConsumerByteRate, "ANONYMOUS", "app"); ok {
			t.Errorf("levels %v: consumer_byte_rate resolved, none is set", order[i:])
		}
		if im.quotaKinds != quotaKindProduceBit {
			t.Errorf("quotaKinds %b, want produce only", im.quotaKinds)
		}
	}
	// Another client id only matches the defaults and user-level quotas.
	im := quotaImage(t, map[string][]ClientQuotaEntityPart{"u/c": all["u/c"], "c": all["c"]})
	if _, _, ok := im.resolveQuota(quotaProducerByteRate, "ANONYMOUS", "other"); ok {
		t.Errorf("client id other matched a quota of client id app")
	}
	if n := testing.AllocsPerRun(100, func() { im.resolveQuota(quotaProducerByteRate, "ANONYMOUS", "app") }); n != 0 {
		t.Errorf("resolveQuota allocates %v times", n)
	}
	if (&Image{}).quotaKinds != 0 {
		t.Errorf("empty image has quota kinds")
	}
}

func TestSampledRate(t *testing.T) {
	cfg := quotaConfig{windowNum: 11, windowMs: 1000}
	s := newSampledRate(cfg)
	// A first record is measured over at least num-1 full windows.
	s.record(0, 10000)
	if rate, span := s.measure(0); rate != 1000 || span != 10000 {
		t.Fatalf("after one record: rate %v span %v, want 1000 over 10000 ms", rate, span)
	}
	// 1000 units per 100 ms for 20 s: the rate settles at 10000/s.
	s = newSampledRate(cfg)
	for ms := int64(0); ms < 20000; ms += 100 {
		s.record(ms, 1000)
	}
	rate, span := s.measure(19900)
	if span < 10000 || span > 11000 {
		t.Errorf("span %d ms, want within (num-1, num] windows", span)
	}
	if rate < 9000 || rate > 11000 {
		t.Errorf("steady rate %v, want about 10000", rate)
	}
	// After num windows of silence everything is forgotten.
	if rate, _ := s.measure(19900 + 11000); rate != 0 {
		t.Errorf("rate after idle %v, want 0", rate)
	}
	// Samples rotate: no more than num are live.
	live := 0
	for _, smp := range s.samples {
		if smp.used {
			live++
		}
	}
	if live > cfg.windowNum {
		t.Errorf("%d live samples", live)
	}
}

func TestThrottleTime(t *testing.T) {
	max := 11 * time.Second
	for _, tc := range []struct {
		observed, quota float64
		span            int64
		want            time.Duration
	}{
		{100, 100, 10000, 0},
		{50, 100, 10000, 0},
		{150, 100, 10000, 5 * time.Second}, // half over quota: half the span
		{200, 100, 2000, 2 * time.Second},  // twice the quota over 2 s
		{110, 100, 10000, time.Second},     // 10 % over
		{1e9, 100, 10000, max},             // capped
		{100, 0, 10000, 0},                 // no quota
		{2.5 * (1 << 20), 1 << 20, 1000, 1500 * time.Millisecond},
	} {
		if got := throttleTime(tc.observed, tc.quota, tc.span, max); got != tc.want {
			t.Errorf("throttleTime(%v, %v, %d) = %v, want %v", tc.observed, tc.quota, tc.span, got, tc.want)
		}
	}
	// Through a rate: 2 MiB at once against 1 MiB/s with two 1 s windows is
	// measured over 1 s, 1 MiB/s over quota: throttled 1 s.
	s := newSampledRate(quotaConfig{windowNum: 2, windowMs: 1000})
	if d := s.recordAndThrottle(5000, 2<<20, 1<<20, 2*time.Second); d != time.Second {
		t.Errorf("2 MiB burst: throttle %v, want 1s", d)
	}
}

func TestQuotaConfigFromProps(t *testing.T) {
	c, err := quotaConfigFromProps(nil)
	if err != nil || c.windowNum != 11 || c.windowMs != 1000 || c.maxThrottle() != 11*time.Second {
		t.Fatalf("defaults: %+v %v", c, err)
	}
	c, err = quotaConfigFromProps(map[string]string{"quota.window.num": "2", "quota.window.size.seconds": "3"})
	if err != nil || c.windowNum != 2 || c.windowMs != 3000 {
		t.Fatalf("overrides: %+v %v", c, err)
	}
	for _, bad := range []map[string]string{{"quota.window.num": "0"}, {"quota.window.size.seconds": "x"}} {
		if _, err := quotaConfigFromProps(bad); err == nil {
			t.Errorf("%v: no error", bad)
		}
	}
}

func TestQuotaManagerRecord(t *testing.T) {
	set := metrics.NewSet()
	q, err := newQuotaManager(map[string]string{"quota.window.num": "2"}, set)
	if err != nil {
		t.Fatal(err)
	}
	im := quotaImage(t, map[string][]ClientQuotaEntityPart{"c": {{Type: "client-id", Name: strp("slow")}}})
	im.clientQuotas[quotaEntity{clientID: namedPart("slow")}][quotaProducerByteRate] = 1000
	now := time.Unix(100, 0)
	if d := q.record(im, quotaProduce, "ANONYMOUS", "slow", 500, now); d != 0 {
		t.Errorf("under quota: throttled %v", d)
	}
	if d := q.record(im, quotaProduce, "ANONYMOUS", "slow", 1500, now); d != time.Second {
		t.Errorf("2000 B in 1 s against 1000 B/s: throttled %v, want 1s", d)
	}
	if d := q.record(im, quotaProduce, "ANONYMOUS", "fast", 1<<30, now); d != 0 {
		t.Errorf("client without quota throttled %v", d)
	}
	if d := q.record(im, quotaFetch, "ANONYMOUS", "slow", 1<<30, now); d != 0 {
		t.Errorf("fetch without consumer_byte_rate throttled %v", d)
	}
	var buf bytes.Buffer
	set.WritePrometheus(&buf)
	for _, want := range []string{`ringbroker_quota_throttle_time_seconds_total{type="Produce"} 1`, `ringbroker_quota_throttled_requests_total{type="Produce"} 1`,
		`ringbroker_quota_throttled_requests_total{type="Fetch"} 0`} {
		if !strings.Contains(buf.String(), want+"\n") {
			t.Errorf("metrics lack %s:\n%s", want, buf.String())
		}
	}
}

func TestQuotaFilter(t *testing.T) {
	entities := map[string]quotaEntity{
		"users/alice":                 {user: namedPart("alice")},
		"users/<default>":             {user: defaultPart},
		"users/alice/clients/app":     {user: namedPart("alice"), clientID: namedPart("app")},
		"users/<default>/clients/app": {user: defaultPart, clientID: namedPart("app")},
		"clients/app":                 {clientID: namedPart("app")},
		"clients/<default>":           {clientID: defaultPart},
		"ips/10.0.0.1":                {ip: namedPart("10.0.0.1")},
	}
	im := emptyImage()
	im.clientQuotas = map[quotaEntity]map[string]float64{}
	for _, e := range entities {
		im.clientQuotas[e] = map[string]float64{quotaRequestPercentage: 1}
	}
	for _, tc := range []struct {
		comps  []quotaFilterComponent
		strict bool
		want   []string
	}{
		{nil, false, []string{"clients/<default>", "clients/app", "ips/10.0.0.1", "users/<default>", "users/<default>/clients/app", "users/alice", "users/alice/clients/app"}},
		{nil, true, nil},
		{[]quotaFilterComponent{{"user", 0, strp("alice")}}, false, []string{"users/alice", "users/alice/clients/app"}},
		{[]quotaFilterComponent{{"user", 0, strp("alice")}}, true, []string{"users/alice"}},
		{[]quotaFilterComponent{{"user", 1, nil}}, false, []string{"users/<default>", "users/<default>/clients/app"}},
		{[]quotaFilterComponent{{"user", 2, nil}}, true, []string{"users/<default>", "users/alice"}},
		{[]quotaFilterComponent{{"user", 2, nil}, {"client-id", 0, strp("app")}}, true, []string{"users/<default>/clients/app", "users/alice/clients/app"}},
		{[]quotaFilterComponent{{"client-id", 2, nil}}, true, []string{"clients/<default>", "clients/app"}},
		{[]quotaFilterComponent{{"ip", 2, nil}}, false, []string{"ips/10.0.0.1"}},
	} {
		f, err := newQuotaFilter(tc.comps, tc.strict)
		if err != nil {
			t.Fatalf("%v: %v", tc.comps, err)
		}
		var got []string
		for _, d := range im.describeClientQuotas(f) {
			got = append(got, d.entity.String())
		}
		if len(got) != len(tc.want) {
			t.Errorf("%+v strict=%v: got %v, want %v", tc.comps, tc.strict, got, tc.want)
			continue
		}
		for i := range got {
			if got[i] != tc.want[i] {
				t.Errorf("%+v strict=%v: got %v, want %v", tc.comps, tc.strict, got, tc.want)
				break
			}
		}
	}
	for _, bad := range [][]quotaFilterComponent{
		{{"", 2, nil}},
		{{"group", 2, nil}},
		{{"user", 2, nil}, {"user", 1, nil}},
		{{"user", 0, nil}},
		{{"user", 1, strp("x")}},
		{{"user", 2, strp("x")}},
		{{"user", 3, nil}},
		{{"ip", 2, nil}, {"client-id", 2, nil}},
	} {
		if _, err := newQuotaFilter(bad, false); err == nil {
			t.Errorf("%+v: no error", bad)
		}
	}
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
		entry(app, op(quotaProducerByteRate, 1<<20, false), op(quotaConsumerByteRate, 2<<20, false)),
		entry([]ClientQuotaEntityPart{{Type: "user"}}, op(quotaRequestPercentage, 50, false)),
		entry([]ClientQuotaEntityPart{{Type: "user", Name: strp("x")}}, op("bogus", 1, false)),
		entry([]ClientQuotaEntityPart{{Type: "client-id", Name: strp("y")}}, op(quotaProducerByteRate, 1.5, false)),
		entry([]ClientQuotaEntityPart{{Type: "client-id", Name: strp("z")}}, op(quotaProducerByteRate, -1, false)),
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
	if r := alter(true, entry(app, op(quotaProducerByteRate, 5, false))); r.Entries[0].ErrorCode != 0 {
		t.Fatalf("validate only: %v", r.Entries[0].ErrorMessage)
	}
	check := func(im *Image) {
		t.Helper()
		if v := im.clientQuotas[quotaEntity{clientID: namedPart("app")}]; v[quotaProducerByteRate] != 1<<20 || v[quotaConsumerByteRate] != 2<<20 {
			t.Errorf("client app quotas %v", v)
		}
		if v := im.clientQuotas[quotaEntity{user: defaultPart}]; v[quotaRequestPercentage] != 50 {
			t.Errorf("default user quotas %v", v)
		}
		if len(im.clientQuotas) != 2 || im.quotaKinds != quotaKindProduceBit|quotaKindFetchBit {
			t.Errorf("quotas %v kinds %b", im.clientQuotas, im.quotaKinds)
		}
	}
	check(b.currentImage())
	check(replayImage(t, b, dir))

	dreq := kmsg.NewPtrDescribeClientQuotasRequest()
	dreq.Components = []kmsg.DescribeClientQuotasRequestComponent{{EntityType: "client-id", MatchType: 0, Match: strp("app")}}
	dresp := adminRun(t, b, dreq, 0).(*kmsg.DescribeClientQuotasResponse)
	if dresp.ErrorCode != 0 || len(dresp.Entries) != 1 || len(dresp.Entries[0].Values) != 2 ||
		dresp.Entries[0].Values[0].Key != quotaConsumerByteRate || dresp.Entries[0].Values[1].Value != 1<<20 {
		t.Errorf("describe: %+v", dresp)
	}
	dreq.Components = []kmsg.DescribeClientQuotasRequestComponent{{EntityType: "nope", MatchType: 2}}
	if dresp := adminRun(t, b, dreq, 1).(*kmsg.DescribeClientQuotasResponse); dresp.ErrorCode != kerr.InvalidRequest.Code || dresp.ErrorMessage == nil {
		t.Errorf("bad filter: %+v", dresp)
	}

	// Removing every key removes the entity.
	alter(false, entry(app, op(quotaProducerByteRate, 0, true), op(quotaConsumerByteRate, 0, true)))
	im := replayImage(t, b, dir)
	if _, ok := im.clientQuotas[quotaEntity{clientID: namedPart("app")}]; ok || im.quotaKinds != 0 {
		t.Errorf("after removal: %v kinds %b", im.clientQuotas, im.quotaKinds)
	}
}
