package share

// Fakes of what a Manager runs with: an Env with a manual clock and an
// in-memory log, and an Image of fixed topics.

import (
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

type fakeTimer struct {
	when    time.Time
	seq     int
	fn      func()
	stopped bool
}

func (t *fakeTimer) Stop() { t.stopped = true }

// fakeEnv is an Env with a manual clock and an in-memory log.
type fakeEnv struct {
	t       time.Time
	timers  []*fakeTimer
	seq     int
	records []kmsg.Record
}

func (e *fakeEnv) AfterFunc(d time.Duration, fn func()) interface{ Stop() } {
	e.seq++
	t := &fakeTimer{when: e.t.Add(d), seq: e.seq, fn: fn}
	e.timers = append(e.timers, t)
	return t
}

func (e *fakeEnv) Persist(recs []kmsg.Record, done func(error)) {
	e.records = append(e.records, recs...)
	done(nil)
}

// advance moves the clock, firing due timers in order.
func (e *fakeEnv) advance(d time.Duration) {
	end := e.t.Add(d)
	for {
		var next *fakeTimer
		for _, t := range e.timers {
			if !t.stopped && !t.when.After(end) && (next == nil || t.when.Before(next.when) || t.when.Equal(next.when) && t.seq < next.seq) {
				next = t
			}
		}
		if next == nil {
			break
		}
		next.stopped = true
		if next.when.After(e.t) {
			e.t = next.when
		}
		next.fn()
	}
	e.t = end
	live := e.timers[:0]
	for _, t := range e.timers {
		if !t.stopped {
			live = append(live, t)
		}
	}
	e.timers = live
}

// fakeImage is an Image of fixed topics, without group configs.
type fakeImage []Topic

func (im fakeImage) TopicByID(id TopicID) (Topic, bool) {
	for _, t := range im {
		if t.ID == id {
			return t, true
		}
	}
	return Topic{}, false
}

func (im fakeImage) TopicByName(name string) (Topic, bool) {
	for _, t := range im {
		if t.Name == name {
			return t, true
		}
	}
	return Topic{}, false
}

func (im fakeImage) Leader(TopicID, int32) (int32, int32) { return 1, 0 }

func (im fakeImage) GroupConfigs(string) map[string]string { return nil }
