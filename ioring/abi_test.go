package ioring

import (
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// TestABILayout checks our structures against the kernel's sizes and field
// offsets (include/uapi/linux/io_uring.h).
func TestABILayout(t *testing.T) {
	sizes := []struct {
		name      string
		got, want uintptr
	}{
		{"io_uring_sqe", unsafe.Sizeof(SQE{}), sizeofSQE},
		{"io_uring_cqe", unsafe.Sizeof(CQE{}), sizeofCQE},
		{"io_uring_params", unsafe.Sizeof(params{}), sizeofParams},
		{"io_sqring_offsets", unsafe.Sizeof(sqRingOffsets{}), 40},
		{"io_cqring_offsets", unsafe.Sizeof(cqRingOffsets{}), 40},
		{"io_uring_getevents_arg", unsafe.Sizeof(getEventsArg{}), sizeofGetEventsArg},
		{"io_uring_probe", unsafe.Sizeof(probeHdr{}), sizeofProbeHdr},
		{"io_uring_probe_op", unsafe.Sizeof(probeOp{}), sizeofProbeOp},
		{"io_uring_buf", unsafe.Sizeof(bufRingEntry{}), sizeofBufRingEntry},
		{"io_uring_buf_reg", unsafe.Sizeof(bufReg{}), sizeofBufReg},
		{"io_uring_rsrc_register", unsafe.Sizeof(rsrcRegister{}), 32},
		{"io_uring_rsrc_update2", unsafe.Sizeof(rsrcUpdate2{}), 32},
		{"io_uring_files_update", unsafe.Sizeof(filesUpdate{}), sizeofFilesUpdate},
		{"__kernel_timespec", unsafe.Sizeof(kernelTimespec{}), 16},
		{"unix.Timespec as __kernel_timespec", unsafe.Sizeof(unix.Timespec{}), 16},
	}
	for _, s := range sizes {
		if s.got != s.want {
			t.Errorf("sizeof %s = %d, want %d", s.name, s.got, s.want)
		}
	}
	var q SQE
	offs := []struct {
		name      string
		got, want uintptr
	}{
		{"sqe.flags", unsafe.Offsetof(q.Flags), 1},
		{"sqe.ioprio", unsafe.Offsetof(q.IoPrio), 2},
		{"sqe.fd", unsafe.Offsetof(q.Fd), 4},
		{"sqe.off", unsafe.Offsetof(q.Off), 8},
		{"sqe.addr", unsafe.Offsetof(q.Addr), 16},
		{"sqe.len", unsafe.Offsetof(q.Len), 24},
		{"sqe.rw_flags", unsafe.Offsetof(q.OpFlags), 28},
		{"sqe.user_data", unsafe.Offsetof(q.UserData), 32},
		{"sqe.buf_index", unsafe.Offsetof(q.BufIndex), 40},
		{"sqe.personality", unsafe.Offsetof(q.Personality), 42},
		{"sqe.splice_fd_in", unsafe.Offsetof(q.SpliceFdIn), 44},
		{"sqe.addr3", unsafe.Offsetof(q.Addr3), 48},
		{"cqe.res", unsafe.Offsetof(CQE{}.Res), 8},
		{"cqe.flags", unsafe.Offsetof(CQE{}.Flags), 12},
		{"params.features", unsafe.Offsetof(params{}.features), 20},
		{"params.sq_off", unsafe.Offsetof(params{}.sqOff), 40},
		{"params.cq_off", unsafe.Offsetof(params{}.cqOff), 80},
		{"buf.bid", unsafe.Offsetof(bufRingEntry{}.bid), 12},
		{"buf.resv (ring tail)", unsafe.Offsetof(bufRingEntry{}.resv), 14},
		{"getevents_arg.ts", unsafe.Offsetof(getEventsArg{}.ts), 16},
	}
	for _, o := range offs {
		if o.got != o.want {
			t.Errorf("offset of %s = %d, want %d", o.name, o.got, o.want)
		}
	}
	// Opcode numbering spot checks against the kernel enum.
	ops := []struct {
		op   Op
		want int
	}{{OpAccept, 13}, {OpAsyncCancel, 14}, {OpFallocate, 17}, {OpClose, 19}, {OpRead, 22}, {OpSend, 26},
		{OpRecv, 27}, {OpSplice, 30}, {OpMsgRing, 40}, {OpSendZC, 47}, {OpSendmsgZC, 48}}
	for _, o := range ops {
		if int(o.op) != o.want {
			t.Errorf("opcode %d, want %d", o.op, o.want)
		}
	}
}

// TestCQEHelpers checks the flag decoding.
func TestCQEHelpers(t *testing.T) {
	c := CQE{Res: -int32(unix.ECANCELED), Flags: CQEFBuffer | CQEFMore | 7<<CQEBufferShift}
	if c.Err() != unix.ECANCELED || !c.More() || c.Notif() {
		t.Fatalf("decode %+v: err %v more %v notif %v", c, c.Err(), c.More(), c.Notif())
	}
	if id, ok := c.BufferID(); !ok || id != 7 {
		t.Fatalf("BufferID = %d, %v; want 7, true", id, ok)
	}
	if (CQE{Res: 5}).Err() != nil {
		t.Fatal("Err of res 5 is not nil")
	}
}
