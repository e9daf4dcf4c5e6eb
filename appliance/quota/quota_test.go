package quota

import (
	"bytes"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/VictoriaMetrics/metrics"
)

func strp(s string) *string { return &s }

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
		e, err := ParseEntity(tc.parts)
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
	user := Entity{User: Named("u")}
	ip := Entity{IP: Default()}
	for _, tc := range []struct {
		e      Entity
		key    string
		value  float64
		remove bool
		ok     bool
	}{
		{user, ProducerByteRate, 1024, false, true},
		{user, ConsumerByteRate, 1.5, false, false}, // LONG
		{user, ProducerByteRate, 0, false, false},
		{user, ProducerByteRate, -5, false, false},
		{user, ProducerByteRate, math.NaN(), false, false},
		{user, ProducerByteRate, -5, true, true}, // value ignored on remove
		{user, RequestPercentage, 12.5, false, true},
		{user, ControllerMutationRate, 0.5, false, true},
		{user, ConnectionCreationRate, 10, false, false},
		{user, "no_such_key", 10, false, false},
		{user, "no_such_key", 0, true, false},
		{ip, ConnectionCreationRate, 10, false, true},
		{ip, ConnectionCreationRate, 10.5, false, false},
		{ip, ProducerByteRate, 10, false, false},
	} {
		err := ValidateOp(tc.e, tc.key, tc.value, tc.remove)
		if (err == nil) != tc.ok {
			t.Errorf("%s %s=%v remove=%v: err %v, want ok=%v", tc.e, tc.key, tc.value, tc.remove, err, tc.ok)
		}
	}
}

// quotaValues builds quota values with producer_byte_rate set on each
// entity, as the image's replay of ClientQuotaRecords does, and their Kind
// bits.
func quotaValues(t *testing.T, vals map[string][]ClientQuotaEntityPart) (Values, uint8) {
	t.Helper()
	var v Values
	var kinds uint8
	for name, parts := range vals {
		var err error
		v, kinds, err = v.Apply(&ClientQuotaRecord{Entity: parts, Key: ProducerByteRate, Value: quotaValueOf(name)})
		if err != nil {
			t.Fatal(err)
		}
	}
	return v, kinds
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
	wantTags := map[string]Tags{
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
		im, kinds := quotaValues(t, vals)
		limit, tags, ok := im.Resolve(ProducerByteRate, "ANONYMOUS", "app")
		if !ok || limit != quotaValueOf(level) || tags != wantTags[level] {
			t.Errorf("levels %v: got %v %+v %v, want %v %+v", order[i:], limit, tags, ok, quotaValueOf(level), wantTags[level])
		}
		if _, _, ok := im.Resolve(ConsumerByteRate, "ANONYMOUS", "app"); ok {
			t.Errorf("levels %v: consumer_byte_rate resolved, none is set", order[i:])
		}
		if kinds != KindProduce || im.Kinds() != KindProduce {
			t.Errorf("quota kinds %b (%b), want produce only", kinds, im.Kinds())
		}
	}
	// Another client id only matches the defaults and user-level quotas.
	im, _ := quotaValues(t, map[string][]ClientQuotaEntityPart{"u/c": all["u/c"], "c": all["c"]})
	if _, _, ok := im.Resolve(ProducerByteRate, "ANONYMOUS", "other"); ok {
		t.Errorf("client id other matched a quota of client id app")
	}
	if n := testing.AllocsPerRun(100, func() { im.Resolve(ProducerByteRate, "ANONYMOUS", "app") }); n != 0 {
		t.Errorf("resolveQuota allocates %v times", n)
	}
	if Values(nil).Kinds() != 0 {
		t.Errorf("empty image has quota kinds")
	}
}

func TestSampledRate(t *testing.T) {
	cfg := Config{WindowNum: 11, WindowMs: 1000}
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
	if live > cfg.WindowNum {
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
	s := newSampledRate(Config{WindowNum: 2, WindowMs: 1000})
	if d := s.recordAndThrottle(5000, 2<<20, 1<<20, 2*time.Second); d != time.Second {
		t.Errorf("2 MiB burst: throttle %v, want 1s", d)
	}
}

func TestQuotaConfigFromProps(t *testing.T) {
	c, err := ConfigFromProps(nil)
	if err != nil || c.WindowNum != 11 || c.WindowMs != 1000 || c.maxThrottle() != 11*time.Second {
		t.Fatalf("defaults: %+v %v", c, err)
	}
	c, err = ConfigFromProps(map[string]string{"quota.window.num": "2", "quota.window.size.seconds": "3"})
	if err != nil || c.WindowNum != 2 || c.WindowMs != 3000 {
		t.Fatalf("overrides: %+v %v", c, err)
	}
	for _, bad := range []map[string]string{{"quota.window.num": "0"}, {"quota.window.size.seconds": "x"}} {
		if _, err := ConfigFromProps(bad); err == nil {
			t.Errorf("%v: no error", bad)
		}
	}
}

func TestQuotaManagerRecord(t *testing.T) {
	set := metrics.NewSet()
	q, err := NewManager(Config{WindowNum: 2, WindowMs: 1000}, set)
	if err != nil {
		t.Fatal(err)
	}
	im, _ := quotaValues(t, map[string][]ClientQuotaEntityPart{"c": {{Type: "client-id", Name: strp("slow")}}})
	im[Entity{ClientID: Named("slow")}][ProducerByteRate] = 1000
	now := time.Unix(100, 0)
	if d := q.Record(im, Produce, "ANONYMOUS", "slow", 500, now); d != 0 {
		t.Errorf("under quota: throttled %v", d)
	}
	if d := q.Record(im, Produce, "ANONYMOUS", "slow", 1500, now); d != time.Second {
		t.Errorf("2000 B in 1 s against 1000 B/s: throttled %v, want 1s", d)
	}
	if d := q.Record(im, Produce, "ANONYMOUS", "fast", 1<<30, now); d != 0 {
		t.Errorf("client without quota throttled %v", d)
	}
	if d := q.Record(im, Fetch, "ANONYMOUS", "slow", 1<<30, now); d != 0 {
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
	entities := map[string]Entity{
		"users/alice":                 {User: Named("alice")},
		"users/<default>":             {User: Default()},
		"users/alice/clients/app":     {User: Named("alice"), ClientID: Named("app")},
		"users/<default>/clients/app": {User: Default(), ClientID: Named("app")},
		"clients/app":                 {ClientID: Named("app")},
		"clients/<default>":           {ClientID: Default()},
		"ips/10.0.0.1":                {IP: Named("10.0.0.1")},
	}
	im := Values{}
	for _, e := range entities {
		im[e] = map[string]float64{RequestPercentage: 1}
	}
	for _, tc := range []struct {
		comps  []FilterComponent
		strict bool
		want   []string
	}{
		{nil, false, []string{"clients/<default>", "clients/app", "ips/10.0.0.1", "users/<default>", "users/<default>/clients/app", "users/alice", "users/alice/clients/app"}},
		{nil, true, nil},
		{[]FilterComponent{{"user", 0, strp("alice")}}, false, []string{"users/alice", "users/alice/clients/app"}},
		{[]FilterComponent{{"user", 0, strp("alice")}}, true, []string{"users/alice"}},
		{[]FilterComponent{{"user", 1, nil}}, false, []string{"users/<default>", "users/<default>/clients/app"}},
		{[]FilterComponent{{"user", 2, nil}}, true, []string{"users/<default>", "users/alice"}},
		{[]FilterComponent{{"user", 2, nil}, {"client-id", 0, strp("app")}}, true, []string{"users/<default>/clients/app", "users/alice/clients/app"}},
		{[]FilterComponent{{"client-id", 2, nil}}, true, []string{"clients/<default>", "clients/app"}},
		{[]FilterComponent{{"ip", 2, nil}}, false, []string{"ips/10.0.0.1"}},
	} {
		f, err := NewFilter(tc.comps, tc.strict)
		if err != nil {
			t.Fatalf("%v: %v", tc.comps, err)
		}
		var got []string
		for _, d := range im.Describe(f) {
			got = append(got, d.Entity.String())
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
	for _, bad := range [][]FilterComponent{
		{{"", 2, nil}},
		{{"group", 2, nil}},
		{{"user", 2, nil}, {"user", 1, nil}},
		{{"user", 0, nil}},
		{{"user", 1, strp("x")}},
		{{"user", 2, strp("x")}},
		{{"user", 3, nil}},
		{{"ip", 2, nil}, {"client-id", 2, nil}},
	} {
		if _, err := NewFilter(bad, false); err == nil {
			t.Errorf("%+v: no error", bad)
		}
	}
}
