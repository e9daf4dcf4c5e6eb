package ioring

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// TestAvailableSeccomp runs a child test process that installs a seccomp
// filter answering io_uring_setup with EPERM or ENOSYS (what container
// runtimes do) and checks that Available reports it.
func TestAvailableSeccomp(t *testing.T) {
	if os.Getenv("IORING_SECCOMP_CHILD") != "" {
		t.Skip("child")
	}
	cases := []struct {
		errno unix.Errno
		want  string
	}{
		{unix.EPERM, "forbidden"},
		{unix.ENOSYS, "absent"},
	}
	for _, c := range cases {
		cmd := exec.Command(os.Args[0], "-test.run=^TestAvailableSeccompChild$", "-test.v")
		cmd.Env = append(os.Environ(), fmt.Sprintf("IORING_SECCOMP_CHILD=%d", int(c.errno)))
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("child with %v: %v\n%s", c.errno, err, out)
		}
		if !strings.Contains(string(out), "AVAILABLE=false") || !strings.Contains(string(out), c.want) {
			t.Fatalf("child with %v: want not available, %q:\n%s", c.errno, c.want, out)
		}
	}
}

// TestAvailableSeccompChild is the child half of TestAvailableSeccomp.
func TestAvailableSeccompChild(t *testing.T) {
	env := os.Getenv("IORING_SECCOMP_CHILD")
	if env == "" {
		t.Skip("only run as a child of TestAvailableSeccomp")
	}
	var errno uint32
	fmt.Sscan(env, &errno)
	filter := []unix.SockFilter{
		{Code: unix.BPF_LD | unix.BPF_W | unix.BPF_ABS, K: 0}, // seccomp_data.nr
		{Code: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, K: unix.SYS_IO_URING_SETUP, Jt: 0, Jf: 1},
		{Code: unix.BPF_RET | unix.BPF_K, K: unix.SECCOMP_RET_ERRNO | errno},
		{Code: unix.BPF_RET | unix.BPF_K, K: unix.SECCOMP_RET_ALLOW},
	}
	prog := unix.SockFprog{Len: uint16(len(filter)), Filter: &filter[0]}
	must(t, unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0))
	if _, _, e := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, unix.SECCOMP_FILTER_FLAG_TSYNC, uintptr(unsafe.Pointer(&prog))); e != 0 {
		t.Fatalf("seccomp: %v", e)
	}
	ok, reason := Available()
	fmt.Printf("AVAILABLE=%v %s\n", ok, reason)
	if _, err := New(Options{}); err == nil {
		t.Fatal("New succeeded under the filter")
	}
}
