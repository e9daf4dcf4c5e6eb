package quorum

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
)

// regApp is a register on the log: "w <value> <tag>" sets it, "r <tag>"
// reads it at its place in the log (so reads are linearizable too).
type regApp struct {
	mu    sync.Mutex
	value int
	reads map[uint64]int
}

func (a *regApp) Apply(c Committed) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	f := strings.Fields(string(c.Payload))
	switch f[0] {
	case "w":
		v, err := strconv.Atoi(f[1])
		if err != nil {
			return err
		}
		a.value = v
	case "r":
		a.reads[c.Index] = a.value
	}
	return nil
}

func (a *regApp) Snapshot() ([]byte, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return []byte(strconv.Itoa(a.value)), nil
}

func (a *regApp) Restore(b []byte, _, _ uint64) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.value = 0
	if len(b) > 0 {
		v, err := strconv.Atoi(string(b))
		if err != nil {
			return err
		}
		a.value = v
	}
	return nil
}

func (a *regApp) readAt(i uint64) (int, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	v, ok := a.reads[i]
	return v, ok
}

type regInput struct {
	write bool
	value int
}

var registerModel = porcupine.Model{
	Init: func() any { return 0 },
	Step: func(state, input, output any) (bool, any) {
		in := input.(regInput)
		if in.write {
			return true, in.value
		}
		return output.(int) == state.(int), state
	},
	Equal: func(a, b any) bool { return a == b },
}

// TestLinearizableRegister runs clients against a register built on
// Propose while the leader is isolated and healed again and again, on
// a lossy network, and checks the history with porcupine.
func TestLinearizableRegister(t *testing.T) {
	const clients, opsPerClient = 4, 25
	ids := []uint64{1, 2, 3}
	hub, faults := NewHub(), NewFaults(7)
	faults.SetAll(LinkFaults{Drop: 0.02, Duplicate: 0.02, Reorder: 0.02})
	cfg := testConfig()
	cfg.Voters = ids
	nodes := map[uint64]*Node{}
	apps := map[uint64]*regApp{}
	for _, id := range ids {
		c := cfg
		c.ID = id
		apps[id] = &regApp{reads: map[uint64]int{}}
		n, err := New(c, NewMemStorage(), faults.Wrap(id, hub.Transport(id)), apps[id], discard())
		if err != nil {
			t.Fatal(err)
		}
		nodes[id] = n
		defer n.Stop()
	}
	start := time.Now()
	deadline := start.Add(40 * time.Second)
	var mu sync.Mutex
	var history []porcupine.Operation
	var wg sync.WaitGroup
	for cl := range clients {
		wg.Go(func() {
			target := ids[cl%len(ids)]
			for op := 0; op < opsPerClient && time.Now().Before(deadline); op++ {
				if cl == 0 && op%5 == 0 {
					// Client 0 moves the faults along: isolate whoever
					// leads, or heal.
					if op%10 == 0 {
						if l, _ := nodes[target].Leader(); l != 0 {
							faults.Isolate(l)
						}
					} else {
						faults.Heal()
					}
				}
				write := op%2 == 0
				in := regInput{write: write, value: cl*1000 + op + 1}
				payload := fmt.Sprintf("r c%d-%d", cl, op)
				if write {
					payload = fmt.Sprintf("w %d c%d-%d", in.value, cl, op)
				}
				for time.Now().Before(deadline) {
					call := time.Since(start).Nanoseconds()
					ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
					idx, err := nodes[target].Propose(ctx, []byte(payload))
					cancel()
					ret := time.Since(start).Nanoseconds()
					var nl *NotLeaderError
					switch {
					case err == nil:
						o := porcupine.Operation{ClientId: cl, Input: in, Call: call, Return: ret}
						if !write {
							v, ok := apps[target].readAt(idx)
							if !ok {
								t.Errorf("client %d: read at %d has no result", cl, idx)
								return
							}
							o.Output = v
						}
						mu.Lock()
						history = append(history, o)
						mu.Unlock()
					case errors.As(err, &nl):
						if nl.Leader != 0 {
							target = nl.Leader
						} else {
							target = ids[(int(target)+cl)%len(ids)]
						}
						continue
					case errors.Is(err, ErrProposalDropped):
						continue // not committed: try again
					default:
						// Timed out or unknown: a write may have happened
						// at any time from now on; a read tells nothing.
						if write {
							mu.Lock()
							history = append(history, porcupine.Operation{ClientId: cl, Input: in, Call: call, Return: math.MaxInt64})
							mu.Unlock()
						}
						target = ids[(int(target)+1)%len(ids)]
						// The same value is not written twice: next op.
					}
					break
				}
			}
		})
	}
	wg.Wait()
	faults.Heal()
	if len(history) < clients*opsPerClient/2 {
		t.Fatalf("only %d operations completed of %d", len(history), clients*opsPerClient)
	}
	res := porcupine.CheckOperationsTimeout(registerModel, history, 30*time.Second)
	if res == porcupine.Illegal {
		t.Fatalf("history of %d operations is not linearizable", len(history))
	}
	t.Logf("%d operations, check %v, faults %+v", len(history), res, faults.Stats())
}
