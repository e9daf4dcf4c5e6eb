package quota

// The rate a byte-rate quota is checked against, sampled as Kafka's
// metrics library samples a Rate (KIP-13): quota.window.num samples of
// quota.window.size.seconds each; a sample older than all of them together
// is forgotten. The rate is the sum of the live samples over the time since
// the oldest one started, but never over less than num-1 full windows, so a
// new client is not judged on its first milliseconds.

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Config is the broker's quota sampling config.
type Config struct {
	WindowNum int   // quota.window.num, default 11
	WindowMs  int64 // quota.window.size.seconds in ms, default 1000
}

// ConfigFromProps reads quota.window.num and quota.window.size.seconds
// (Kafka's names and defaults; both must be >= 1).
func ConfigFromProps(props map[string]string) (Config, error) {
	c := Config{WindowNum: 11, WindowMs: 1000}
	if v := strings.TrimSpace(props["quota.window.num"]); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return c, fmt.Errorf("cannot parse quota.window.num=%q: want an integer >= 1", v)
		}
		c.WindowNum = n
	}
	if v := strings.TrimSpace(props["quota.window.size.seconds"]); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return c, fmt.Errorf("cannot parse quota.window.size.seconds=%q: want an integer >= 1", v)
		}
		c.WindowMs = int64(n) * 1000
	}
	return c, nil
}

// maxThrottle caps one throttle time at the whole sampled span (num windows).
func (c Config) maxThrottle() time.Duration {
	return time.Duration(int64(c.WindowNum)*c.WindowMs) * time.Millisecond
}

// rateSample is one window of a sampledRate.
type rateSample struct {
	startMs int64 // when the sample's window began (the first record in it)
	value   float64
	used    bool
}

// sampledRate is a rate over WindowNum samples of WindowMs each. Not safe
// for concurrent use (the Manager's mutex guards it).
type sampledRate struct {
	cfg     Config
	samples []rateSample
	current int
	lastMs  int64 // last record, for expiring idle rates
}

func newSampledRate(cfg Config) *sampledRate {
	return &sampledRate{cfg: cfg, samples: make([]rateSample, cfg.WindowNum)}
}

// purge forgets samples that began num windows or more before nowMs.
func (s *sampledRate) purge(nowMs int64) {
	expire := int64(s.cfg.WindowNum) * s.cfg.WindowMs
	for i := range s.samples {
		if s.samples[i].used && nowMs-s.samples[i].startMs >= expire {
			s.samples[i] = rateSample{}
		}
	}
}

// record adds v at nowMs, starting a new sample when the current one's
// window has passed.
func (s *sampledRate) record(nowMs int64, v float64) {
	s.purge(nowMs)
	cur := &s.samples[s.current]
	if cur.used && nowMs-cur.startMs >= s.cfg.WindowMs {
		s.current = (s.current + 1) % len(s.samples)
		cur = &s.samples[s.current]
		*cur = rateSample{}
	}
	if !cur.used {
		*cur = rateSample{startMs: nowMs, used: true}
	}
	cur.value += v
	s.lastMs = nowMs
}

// measure returns the rate in units per second at nowMs and the span in ms
// it was taken over: since the oldest live sample began, at least num-1
// full windows.
func (s *sampledRate) measure(nowMs int64) (rate float64, spanMs int64) {
	s.purge(nowMs)
	total := 0.0
	oldest := nowMs
	for _, smp := range s.samples {
		if smp.used {
			total += smp.value
			oldest = min(oldest, smp.startMs)
		}
	}
	spanMs = nowMs - oldest
	full := spanMs / s.cfg.WindowMs
	if minFull := int64(s.cfg.WindowNum - 1); full < minFull {
		spanMs += (minFull - full) * s.cfg.WindowMs
	}
	if spanMs <= 0 {
		// One window of one sample: Kafka's Rate never divides by zero either.
		spanMs = s.cfg.WindowMs
	}
	return total / (float64(spanMs) / 1000), spanMs
}

// throttleTime is how long a client over its quota waits: with the observed
// rate above quota, (observed - quota) / quota of the sampled span, the
// time in which the excess drains at the quota rate (KIP-13); capped at
// maxThrottle. Zero at or under quota.
func throttleTime(observed, quota float64, spanMs int64, maxThrottle time.Duration) time.Duration {
	if observed <= quota || quota <= 0 {
		return 0
	}
	ms := (observed - quota) / quota * float64(spanMs)
	d := time.Duration(ms * float64(time.Millisecond))
	if d > maxThrottle {
		d = maxThrottle
	}
	return d
}

// recordAndThrottle records v at nowMs and returns the throttle time for
// quota (bytes/s).
func (s *sampledRate) recordAndThrottle(nowMs int64, v, quota float64, maxThrottle time.Duration) time.Duration {
	s.record(nowMs, v)
	rate, span := s.measure(nowMs)
	return throttleTime(rate, quota, span, maxThrottle)
}
