package metrics

import (
	"errors"
	"fmt"
	"reflect"
	"time"

	"github.com/ringbroker/ringbroker/appliance/wire"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// RequestDone counts a request of API key whose response (a handler's
// result, see wire.Handler) is ready, start being when it was dispatched.
// It runs on the connection's writer goroutine. Results that are not
// responses (nil for acks=0, a fetch's raw response) count no errors:
// fetches count theirs with CountError.
func (m *Metrics) RequestDone(key int16, start time.Time, resp any) {
	if m == nil || key < 0 || int(key) > MaxAPIKey || m.apis[key] == nil {
		return
	}
	a := m.apis[key]
	a.requests.Inc()
	if !start.IsZero() {
		a.latency.UpdateDuration(start)
	}
	switch r := resp.(type) {
	case nil:
		// acks=0.
	case wire.Close:
		m.CountError(key, kerr.UnknownServerError.Code)
	case *kmsg.ProduceResponse:
		for i := range r.Topics {
			for j := range r.Topics[i].Partitions {
				if c := r.Topics[i].Partitions[j].ErrorCode; c != 0 {
					m.CountError(key, c)
				}
			}
		}
	case *wire.FixedVersion:
		m.countResponseErrors(key, r.Resp)
	case kmsg.Response:
		m.countResponseErrors(key, r)
	}
}

// CountError counts error code of an API key's response in
// ringbroker_request_errors_total.
func (m *Metrics) CountError(key int16, code int16) {
	if m == nil {
		return
	}
	name := "UNKNOWN"
	if e := kerr.ErrorForCode(code); e != nil {
		var ke *kerr.Error
		if errors.As(e, &ke) {
			name = ke.Message
		}
	}
	api := fmt.Sprintf("Key%d", key)
	if int(key) <= MaxAPIKey && key >= 0 && m.apis[key] != nil {
		api = m.apis[key].name
	}
	m.set.GetOrCreateCounter(fmt.Sprintf(`ringbroker_request_errors_total{api=%q,error=%q}`, api, name)).Inc()
}

// countResponseErrors counts every non-zero int16 ErrorCode field in resp,
// at any depth (top level, per topic, per partition, per group). Only the
// less frequent APIs get here; Produce and Fetch are counted directly.
func (m *Metrics) countResponseErrors(key int16, resp kmsg.Response) {
	v := reflect.ValueOf(resp)
	if v.Kind() == reflect.Pointer {
		if v.IsNil() {
			return
		}
		v = v.Elem()
	}
	if has, ok := m.errFields.Load(v.Type()); ok && !has.(bool) {
		return
	}
	found := false
	walkErrorCodes(v, 0, func(code int16) {
		found = true
		if code != 0 {
			m.CountError(key, code)
		}
	})
	m.errFields.Store(v.Type(), found)
}

func walkErrorCodes(v reflect.Value, depth int, fn func(int16)) {
	if depth > 6 {
		return
	}
	switch v.Kind() {
	case reflect.Struct:
		t := v.Type()
		for i := 0; i < v.NumField(); i++ {
			f := v.Field(i)
			if t.Field(i).Name == "ErrorCode" && f.Kind() == reflect.Int16 {
				fn(int16(f.Int()))
				continue
			}
			if f.Kind() == reflect.Slice || f.Kind() == reflect.Struct {
				walkErrorCodes(f, depth+1, fn)
			}
		}
	case reflect.Slice:
		if v.Type().Elem().Kind() != reflect.Struct {
			return
		}
		for i := 0; i < v.Len(); i++ {
			walkErrorCodes(v.Index(i), depth+1, fn)
		}
	}
}
