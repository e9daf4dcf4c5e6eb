package metadata

import (
	"errors"
	"testing"

	"github.com/ringbroker/ringbroker/appliance/wire"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"golang.org/x/sys/unix"
)

func TestManualAssignmentPartitions(t *testing.T) {
	as := func(ps ...int32) []kmsg.CreateTopicsRequestTopicReplicaAssignment {
		var out []kmsg.CreateTopicsRequestTopicReplicaAssignment
		for _, p := range ps {
			out = append(out, kmsg.CreateTopicsRequestTopicReplicaAssignment{Partition: p, Replicas: []int32{1}})
		}
		return out
	}
	two := as(0)
	two[0].Replicas = []int32{1, 2}
	for _, c := range []struct {
		name  string
		as    []kmsg.CreateTopicsRequestTopicReplicaAssignment
		parts int32
		rf    int16
		want  int32
		err   *kerr.Error
	}{
		{"three in order", as(0, 1, 2), -1, -1, 3, nil},
		{"out of order", as(1, 0), -1, -1, 2, nil},
		{"gap", as(0, 2), -1, -1, 0, kerr.InvalidReplicaAssignment},
		{"duplicate", as(0, 0), -1, -1, 0, kerr.InvalidReplicaAssignment},
		{"two replicas", two, -1, -1, 0, kerr.InvalidReplicaAssignment},
		{"with count", as(0), 1, -1, 0, kerr.InvalidRequest},
		{"with rf", as(0), -1, 1, 0, kerr.InvalidRequest},
	} {
		n, err := manualAssignmentPartitions(c.as, c.parts, c.rf, 1)
		var want int16
		if c.err != nil {
			want = c.err.Code
		}
		if n != c.want || wire.ErrCode(err) != want {
			t.Errorf("%s: got %d, %v; want %d, %v", c.name, n, err, c.want, c.err)
		}
	}
}

func TestCheckConfigResource(t *testing.T) {
	for _, tc := range []struct {
		typ   kmsg.ConfigResourceType
		name  string
		keys  []string
		nulls []string
		want  *kerr.Error
	}{
		{kmsg.ConfigResourceTypeTopic, "t", []string{"a", "b"}, nil, nil},
		{kmsg.ConfigResourceTypeTopic, "t", []string{"a", "a"}, nil, kerr.InvalidRequest},
		{kmsg.ConfigResourceTypeTopic, "t", []string{"a"}, []string{"a"}, kerr.InvalidRequest},
		{kmsg.ConfigResourceTypeTopic, "", nil, nil, kerr.InvalidRequest},
		{kmsg.ConfigResourceTypeTopic, "bad/name", nil, nil, kerr.InvalidTopicException},
		{kmsg.ConfigResourceTypeBroker, "1", nil, nil, nil}, // the name and keys: alterBrokerConfigsWith
		{kmsg.ConfigResourceTypeBroker, "1", []string{"a", "a"}, nil, kerr.InvalidRequest},
		{kmsg.ConfigResourceTypeBrokerLogger, "1", nil, nil, kerr.InvalidRequest},
	} {
		err := checkConfigResource(tc.typ, tc.name, tc.keys, tc.nulls)
		if (tc.want == nil) != (err == nil) || (tc.want != nil && !errors.Is(err, tc.want)) {
			t.Errorf("%d %q %v %v: err %v, want %v", tc.typ, tc.name, tc.keys, tc.nulls, err, tc.want)
		}
	}
}

func TestCheckPartitionBudget(t *testing.T) {
	var old unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &old); err != nil {
		t.Skip(err)
	}
	if old.Cur < 4096 {
		t.Skipf("RLIMIT_NOFILE %d too low to test", old.Cur)
	}
	lowered := old
	lowered.Cur = 4096
	if err := unix.Setrlimit(unix.RLIMIT_NOFILE, &lowered); err != nil {
		t.Skip(err)
	}
	defer unix.Setrlimit(unix.RLIMIT_NOFILE, &old)
	im := NewImage(testChecks{})
	if err := CheckPartitionBudget(im, 900); err != nil { // 900*3+1024 = 3724 <= 4096
		t.Fatalf("900 partitions refused: %v", err)
	}
	err := CheckPartitionBudget(im, 1100) // 4324 > 4096
	if !errors.Is(err, kerr.PolicyViolation) {
		t.Fatalf("1100 partitions: %v, want POLICY_VIOLATION", err)
	}
	// Descriptors held now (closed segments' .log files, connections)
	// count: with 400 more open, the 900 no longer fit.
	var held []int
	defer func() {
		for _, fd := range held {
			unix.Close(fd)
		}
	}()
	for range 400 {
		fd, err := unix.Dup(0)
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, fd)
	}
	if err := CheckPartitionBudget(im, 900); !errors.Is(err, kerr.PolicyViolation) {
		t.Fatalf("900 partitions with 400 more descriptors open: %v, want POLICY_VIOLATION", err)
	}
}
