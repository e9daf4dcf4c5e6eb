package harness

import (
	"fmt"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/anishathalye/porcupine"
)

// History records operations as porcupine takes them: who called, with
// what, when, and what came back when. Check it with porcupine's checker and
// a model, LogModel for produces and reads of partitions. Safe for
// concurrent use.
type History struct {
	mu    sync.Mutex
	start time.Time
	ops   []porcupine.Operation
}

// NewHistory starts an empty history; times count from now.
func NewHistory() *History { return &History{start: time.Now()} }

// Call is an operation invoked and not returned yet.
type Call struct {
	h *History
	i int
}

func (h *History) now() int64 { return time.Since(h.start).Nanoseconds() }

// Invoke records the start of an operation of client with input.
func (h *History) Invoke(client int, input any) *Call {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.ops = append(h.ops, porcupine.Operation{ClientId: client, Input: input, Call: h.now(), Return: math.MaxInt64})
	return &Call{h: h, i: len(h.ops) - 1}
}

// Return records the operation's output, returned now.
func (c *Call) Return(output any) {
	c.h.mu.Lock()
	defer c.h.mu.Unlock()
	op := &c.h.ops[c.i]
	op.Output = output
	op.Return = max(c.h.now(), op.Call+1)
}

// Unknown records an output whose effect is unknown (a timeout: the
// operation may have taken effect, now or later): it keeps the return time
// at infinity, so the checker may place it anywhere after its call,
// including after every other operation (as if it never happened).
func (c *Call) Unknown(output any) {
	c.h.mu.Lock()
	defer c.h.mu.Unlock()
	c.h.ops[c.i].Output = output
}

// Operations returns a copy of the history; operations still open have
// the return time at infinity and a nil output (their effect is unknown).
func (h *History) Operations() []porcupine.Operation {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.ops)
}

// Len is the number of operations recorded.
func (h *History) Len() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.ops)
}

// ProduceInput is a produce of one record (Recorder writes these).
// Partition is the one asked for (-1 when the partitioner chose).
type ProduceInput struct {
	Topic     string
	Partition int32
	Value     string
}

// ProduceOutput is where the record went; with Err set the outcome is
// unknown.
type ProduceOutput struct {
	Partition int32
	Offset    int64
	Err       error
}

// ReadInput is a read of one offset of a partition.
type ReadInput struct {
	Topic     string
	Partition int32
	Offset    int64
}

// ReadOutput is what a read found: the value at the offset, or Found false
// when the offset is past the end of what readers see. With Err set the
// read tells nothing.
type ReadOutput struct {
	Found bool
	Value string
	Err   error
}

// LogModel is a porcupine model of partitions as append-only logs that
// start empty at offset 0 (use new topics, one record per produce, no
// transactions): a produce acknowledged at offset o is linearizable only at
// a point where the log holds o records; a read of offset o finds the value
// written there, or nothing when the log is shorter. Operations are
// partitioned by topic and partition (a produce's by the partition its
// output names, else its input's).
var LogModel = porcupine.Model{
	Partition: partitionByLog,
	Init:      func() any { return []string(nil) },
	Step: func(state, input, output any) (bool, any) {
		log := state.([]string)
		switch in := input.(type) {
		case ProduceInput:
			out, ok := output.(ProduceOutput)
			if !ok || out.Err != nil {
				// Unknown outcome: it took effect here, or (placed last)
				// never mattered.
				return true, append(slices.Clip(log), in.Value)
			}
			if out.Offset != int64(len(log)) {
				return false, state
			}
			return true, append(slices.Clip(log), in.Value)
		case ReadInput:
			out, ok := output.(ReadOutput)
			if !ok || out.Err != nil {
				return true, state
			}
			if in.Offset < int64(len(log)) {
				return out.Found && out.Value == log[in.Offset], state
			}
			return !out.Found, state
		}
		return false, state
	},
	Equal: func(a, b any) bool { return slices.Equal(a.([]string), b.([]string)) },
	DescribeOperation: func(input, output any) string {
		return fmt.Sprintf("%+v -> %+v", input, output)
	},
}

func partitionByLog(history []porcupine.Operation) [][]porcupine.Operation {
	groups := map[tp][]porcupine.Operation{}
	var order []tp
	for _, op := range history {
		var k tp
		switch in := op.Input.(type) {
		case ProduceInput:
			k = tp{in.Topic, in.Partition}
			if out, ok := op.Output.(ProduceOutput); ok && out.Err == nil {
				k.partition = out.Partition
			}
		case ReadInput:
			k = tp{in.Topic, in.Partition}
		}
		if _, ok := groups[k]; !ok {
			order = append(order, k)
		}
		groups[k] = append(groups[k], op)
	}
	out := make([][]porcupine.Operation, 0, len(order))
	for _, k := range order {
		out = append(out, groups[k])
	}
	return out
}
