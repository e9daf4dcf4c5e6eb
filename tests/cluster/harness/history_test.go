package harness

import (
	"errors"
	"testing"

	"github.com/anishathalye/porcupine"
)

// op builds a history operation for the model tests.
func op(client int, in, out any, call, ret int64) porcupine.Operation {
	return porcupine.Operation{ClientId: client, Input: in, Output: out, Call: call, Return: ret}
}

func TestLogModel(t *testing.T) {
	p := func(v string) ProduceInput { return ProduceInput{Topic: "t", Partition: 0, Value: v} }
	ok := func(off int64) ProduceOutput { return ProduceOutput{Partition: 0, Offset: off} }
	r := func(off int64) ReadInput { return ReadInput{Topic: "t", Partition: 0, Offset: off} }
	found := func(v string) ReadOutput { return ReadOutput{Found: true, Value: v} }
	timeout := ProduceOutput{Partition: 0, Err: errors.New("timed out")}
	const inf = int64(1) << 62
	for _, tc := range []struct {
		name string
		ops  []porcupine.Operation
		want bool
	}{
		{"concurrent produces take either order", []porcupine.Operation{
			op(0, p("a"), ok(1), 0, 10), op(1, p("b"), ok(0), 1, 9), op(2, r(1), found("a"), 11, 12),
		}, true},
		{"an acknowledged record read back different", []porcupine.Operation{
			op(0, p("a"), ok(0), 0, 1), op(1, r(0), found("b"), 2, 3),
		}, false},
		{"an acknowledged record not found later", []porcupine.Operation{
			op(0, p("a"), ok(0), 0, 1), op(1, r(0), ReadOutput{}, 2, 3),
		}, false},
		{"an offset given twice", []porcupine.Operation{
			op(0, p("a"), ok(0), 0, 1), op(1, p("b"), ok(0), 2, 3),
		}, false},
		{"a timed-out produce that was written", []porcupine.Operation{
			op(0, p("a"), timeout, 0, inf), op(1, p("b"), ok(1), 2, 3), op(2, r(0), found("a"), 4, 5),
		}, true},
		{"a timed-out produce that was not", []porcupine.Operation{
			op(0, p("a"), timeout, 0, inf), op(1, p("b"), ok(0), 2, 3), op(2, r(1), ReadOutput{}, 4, 5),
		}, true},
		{"partitions are separate logs", []porcupine.Operation{
			op(0, p("a"), ok(0), 0, 1), op(1, ProduceInput{Topic: "t", Partition: 1, Value: "b"}, ProduceOutput{Partition: 1}, 2, 3),
		}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := porcupine.CheckOperations(LogModel, tc.ops); got != tc.want {
				t.Fatalf("CheckOperations = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestHistoryRecords(t *testing.T) {
	h := NewHistory()
	a := h.Invoke(0, ProduceInput{Topic: "t", Value: "x"})
	b := h.Invoke(1, ProduceInput{Topic: "t", Value: "y"})
	h.Invoke(2, ReadInput{Topic: "t"}) // never returns
	a.Return(ProduceOutput{Offset: 0})
	b.Unknown(ProduceOutput{Err: errors.New("timeout")})
	ops := h.Operations()
	if len(ops) != 3 || h.Len() != 3 {
		t.Fatalf("%d operations, want 3", len(ops))
	}
	if ops[0].Return <= ops[0].Call || ops[0].Return == 1<<63-1 {
		t.Errorf("returned operation: call %d return %d", ops[0].Call, ops[0].Return)
	}
	if ops[1].Return != 1<<63-1 || ops[2].Return != 1<<63-1 || ops[2].Output != nil {
		t.Errorf("unknown and open operations must return at infinity: %+v %+v", ops[1], ops[2])
	}
	if ops[1].ClientId != 1 || ops[1].Output.(ProduceOutput).Err == nil {
		t.Errorf("operation 1: %+v", ops[1])
	}
}
