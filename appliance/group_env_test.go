package appliance

// A group.Env with a manual clock and an in-memory log, for the share
// group tests that drive a shareManager beside its group.Manager.

import (
	"fmt"
	"time"

	"github.com/ringbroker/ringbroker/appliance/group"
	"github.com/twmb/franz-go/pkg/kmsg"
)

type fakeTimer struct {
	when    time.Time
	seq     int
	fn      func()
	stopped bool
}

func (t *fakeTimer) Stop() { t.stopped = true }

// fakeGroupEnv is a group.Env with a manual clock and an in-memory log.
type fakeGroupEnv struct {
	t       time.Time
	timers  []*fakeTimer
	seq     int
	ids     map[string]int
	records []kmsg.Record
}

func (e *fakeGroupEnv) Post(fn func())               { fn() }
func (e *fakeGroupEnv) Warn(msg string, args ...any) {}
func (e *fakeGroupEnv) Now() time.Time               { return e.t }

func (e *fakeGroupEnv) AfterFunc(d time.Duration, fn func()) group.Timer {
	e.seq++
	t := &fakeTimer{when: e.t.Add(d), seq: e.seq, fn: fn}
	e.timers = append(e.timers, t)
	return t
}

func (e *fakeGroupEnv) NewMemberID(clientID string) string {
	e.ids[clientID]++
	return fmt.Sprintf("%s-%d", clientID, e.ids[clientID])
}

func (e *fakeGroupEnv) Persist(recs []kmsg.Record, done func(error)) {
	e.records = append(e.records, recs...)
	done(nil)
}

// advance moves the clock, firing due timers in order.
func (e *fakeGroupEnv) advance(d time.Duration) {
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

// newGroupManager is a group.Manager over env, for a shareManager's
// classic side.
func newGroupManager(env group.Env, cfg group.Config) *group.Manager {
	return group.NewManager(env, cfg)
}

// defaultGroupConfig is group.DefaultConfig.
func defaultGroupConfig() group.Config { return group.DefaultConfig() }
