package ioring

import (
	"bytes"
	"errors"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// TestReadShort reads a 100-byte file at several offsets: full, short at
// EOF, and 0 past it.
func TestReadShort(t *testing.T) {
	content := bytes.Repeat([]byte{'a'}, 100)
	cases := []struct {
		name string
		off  int64
		n    int
		want int32
	}{
		{"inside", 10, 50, 50},
		{"short at eof", 60, 100, 40},
		{"past eof", 200, 10, 0},
	}
	r := newRing(t, Options{Entries: 4})
	fd := tempFile(t, content)
	// No t.Run: subtests run on other goroutines, and the ring belongs to
	// this one's OS thread (single issuer).
	for _, c := range cases {
		var h rec
		buf := make([]byte, c.n)
		mustUD(t)(r.Read(fd, buf, c.off, false, &h))
		waitUntil(t, r, h.done)
		if h.last().Res != c.want {
			t.Fatalf("%s: read res %d, want %d", c.name, h.last().Res, c.want)
		}
	}
}

// TestWritePipeNonblock writes to an O_NONBLOCK pipe that is nearly full
// (short write) and full. io_uring does not honour O_NONBLOCK on files that
// support non-blocking I/O (pipes): a write to a full pipe waits for room
// (poll) unless RWF_NOWAIT is passed, which yields EAGAIN.
func TestWritePipeNonblock(t *testing.T) {
	page := unix.Getpagesize()
	cases := []struct {
		name    string
		free    int // bytes of room left in the pipe
		n       int
		rwFlags uint32
		drain   bool // read from the pipe to let the write finish
		want    int32
	}{
		{"short", page, 2 * page, 0, false, int32(page)},
		{"full rwf_nowait", 0, 100, unix.RWF_NOWAIT, false, -int32(unix.EAGAIN)},
		{"full waits for room", 0, 100, 0, true, 100},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := newRing(t, Options{Entries: 4})
			rd, wr := pipe(t, unix.O_NONBLOCK)
			size, err := unix.FcntlInt(uintptr(wr), unix.F_GETPIPE_SZ, 0)
			must(t, err)
			if n, err := unix.Write(wr, make([]byte, size-c.free)); err != nil || n != size-c.free {
				t.Fatalf("fill pipe: %d, %v", n, err)
			}
			var h rec
			data := make([]byte, c.n)
			s, ud, err := r.Start(&h, data)
			must(t, err)
			s.PrepWrite(wr, data, -1)
			s.OpFlags = c.rwFlags
			s.UserData = ud
			if c.drain {
				if n, _ := r.Wait(1, 20*time.Millisecond); n != 0 {
					t.Fatalf("write to a full pipe completed: %+v", h.cqes)
				}
				_, err := unix.Read(rd, make([]byte, page))
				must(t, err)
			}
			waitUntil(t, r, h.done)
			if h.last().Res != c.want {
				t.Fatalf("write res %d (%v), want %d", h.last().Res, h.last().Err(), c.want)
			}
		})
	}
}

func TestWritevAndRead(t *testing.T) {
	r := newRing(t, Options{Entries: 4})
	fd := tempFile(t, nil)
	parts := [][]byte{[]byte("kafka "), []byte("record "), []byte("batch")}
	iov := make([]unix.Iovec, len(parts))
	for i, p := range parts {
		iov[i].Base = &p[0]
		iov[i].SetLen(len(p))
	}
	var hw, hr rec
	mustUD(t)(r.Writev(fd, iov, 0, &hw))
	waitUntil(t, r, hw.done)
	if hw.last().Res != 18 {
		t.Fatalf("writev res %d", hw.last().Res)
	}
	buf := make([]byte, 32)
	mustUD(t)(r.Read(fd, buf, 0, false, &hr))
	waitUntil(t, r, hr.done)
	if got := string(buf[:max(hr.last().Res, 0)]); got != "kafka record batch" {
		t.Fatalf("read back %q", got)
	}
}

func TestFsyncFallocate(t *testing.T) {
	r := newRing(t, Options{Entries: 4})
	fd := tempFile(t, []byte("data"))
	for _, c := range []struct {
		name  string
		flags uint32
	}{{"fsync", 0}, {"fdatasync", FsyncDataSync}} {
		var h rec
		mustUD(t)(r.Fsync(fd, c.flags, &h))
		waitUntil(t, r, h.done)
		if h.last().Res != 0 {
			t.Fatalf("%s: %v", c.name, h.last().Err())
		}
	}
	cases := []struct {
		name     string
		mode     uint32
		off, len int64
		wantSize int64
	}{
		{"extend", 0, 0, 1 << 20, 1 << 20},
		{"keep size", unix.FALLOC_FL_KEEP_SIZE, 1 << 20, 1 << 20, 1 << 20},
	}
	for _, c := range cases {
		var h rec
		mustUD(t)(r.Fallocate(fd, c.mode, c.off, c.len, &h))
		waitUntil(t, r, h.done)
		if h.last().Res != 0 {
			t.Fatalf("fallocate %s: %v", c.name, h.last().Err())
		}
		var st unix.Stat_t
		must(t, unix.Fstat(fd, &st))
		if st.Size != c.wantSize {
			t.Fatalf("fallocate %s: size %d, want %d", c.name, st.Size, c.wantSize)
		}
		if c.mode&unix.FALLOC_FL_KEEP_SIZE != 0 && st.Blocks*512 < c.off+c.len {
			t.Fatalf("fallocate %s: %d blocks allocated", c.name, st.Blocks)
		}
	}
}

// TestSpliceFileToSocket moves file bytes to a socket through a pipe with
// two splices, never through user memory.
func TestSpliceFileToSocket(t *testing.T) {
	r := newRing(t, Options{Entries: 4})
	content := bytes.Repeat([]byte("segment!"), 1024)
	fd := tempFile(t, content)
	prd, pwr := pipe(t, 0)
	c, s := tcpPair(t)
	var h1, h2 rec
	mustUD(t)(r.Splice(fd, 100, pwr, -1, 4096, 0, &h1))
	waitUntil(t, r, h1.done)
	if h1.last().Res != 4096 {
		t.Fatalf("splice file->pipe: %d (%v)", h1.last().Res, h1.last().Err())
	}
	mustUD(t)(r.Splice(prd, -1, c, -1, 4096, 0, &h2))
	waitUntil(t, r, h2.done)
	if h2.last().Res != 4096 {
		t.Fatalf("splice pipe->socket: %d (%v)", h2.last().Res, h2.last().Err())
	}
	got := make([]byte, 0, 4096)
	buf := make([]byte, 4096)
	for len(got) < 4096 {
		n, err := unix.Read(s, buf)
		must(t, err)
		got = append(got, buf[:n]...)
	}
	if !bytes.Equal(got, content[100:100+4096]) {
		t.Fatal("spliced bytes differ")
	}
	// Past EOF the splice moves 0 bytes.
	var h3 rec
	mustUD(t)(r.Splice(fd, int64(len(content)), pwr, -1, 4096, 0, &h3))
	waitUntil(t, r, h3.done)
	if h3.last().Res != 0 {
		t.Fatalf("splice past EOF: %d", h3.last().Res)
	}
}

// TestFixedBuffersAndFiles writes and reads through a registered buffer
// and a registered file.
func TestFixedBuffersAndFiles(t *testing.T) {
	r := newRing(t, Options{Entries: 4})
	mem, err := unix.Mmap(-1, 0, 8192, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	must(t, err)
	t.Cleanup(func() { unix.Munmap(mem) })
	heap := make([]byte, 4096)
	must(t, r.RegisterBuffers([][]byte{mem, heap}))
	fd := tempFile(t, nil)
	must(t, r.RegisterFiles([]int32{-1, int32(fd)}))
	copy(mem, "fixed buffer payload")

	cases := []struct {
		name  string
		fd    int
		fixed bool
		buf   []byte
		idx   uint16
	}{
		{"mmap buffer, registered file", 1, true, mem, 0},
		{"heap buffer, plain fd", fd, false, heap, 1},
	}
	for _, c := range cases { // no t.Run: the ring is this goroutine's
		var hw, hr rec
		copy(c.buf, "fixed buffer payload")
		ud := mustUD(t)(r.WriteFixed(c.fd, c.buf[:20], 0, c.idx, c.fixed, &hw))
		// A registered buffer is kept reachable by the op but not pinned
		// per op (the kernel pinned its pages at registration).
		if _, s := r.tab.lookup(ud); s == nil || s.pinned || s.keep[0] != unsafe.Pointer(&c.buf[0]) {
			t.Fatalf("%s: write fixed in flight: slot %+v", c.name, s)
		}
		waitUntil(t, r, hw.done)
		if hw.last().Res != 20 {
			t.Fatalf("%s: write fixed: %d (%v)", c.name, hw.last().Res, hw.last().Err())
		}
		dst := c.buf[1024:1044]
		mustUD(t)(r.ReadFixed(c.fd, dst, 0, c.idx, c.fixed, &hr))
		waitUntil(t, r, hr.done)
		if hr.last().Res != 20 || string(dst) != "fixed buffer payload" {
			t.Fatalf("%s: read fixed: %d %q", c.name, hr.last().Res, dst)
		}
	}
	// A plain read through the registered file, then an empty slot: EBADF.
	var h1, h2 rec
	buf := make([]byte, 6)
	if _, s := r.tab.lookup(mustUD(t)(r.Read(1, buf, 0, true, &h1))); s == nil || !s.pinned {
		t.Fatalf("plain read in flight: buffer not pinned")
	}
	mustUD(t)(r.Read(0, buf, 0, true, &h2))
	waitUntil(t, r, func() bool { return h1.done() && h2.done() })
	if h1.last().Res != 6 || string(buf) != "fixed " {
		t.Fatalf("read registered file: %d %q", h1.last().Res, buf)
	}
	wantErrno(t, h2.last(), unix.EBADF)
	if n, err := r.UpdateFiles(0, []int32{int32(fd)}); err != nil || n != 1 {
		t.Fatalf("UpdateFiles: %d, %v", n, err)
	}
	// Close registered slot 0 through the ring; reading it then fails.
	var hc, h3 rec
	sqe, ud, err := r.Start(&hc, nil)
	must(t, err)
	sqe.PrepCloseFixed(0)
	sqe.UserData = ud
	waitUntil(t, r, hc.done)
	if hc.last().Res != 0 {
		t.Fatalf("close fixed: %v", hc.last().Err())
	}
	mustUD(t)(r.Read(0, buf, 0, true, &h3))
	waitUntil(t, r, h3.done)
	wantErrno(t, h3.last(), unix.EBADF)
	must(t, r.UnregisterFiles())
	must(t, r.UnregisterBuffers())
}

// TestFixedBufferTable fills a sparse buffer table slot by slot: an op on
// an empty slot fails with EFAULT, an updated slot reads and writes at any
// offset inside its buffer, and slots outside the table are refused.
func TestFixedBufferTable(t *testing.T) {
	r := newRing(t, Options{Entries: 4})
	must(t, r.RegisterBufferTable(3))
	if err := r.RegisterBufferTable(3); !errors.Is(err, unix.EBUSY) {
		t.Fatalf("second table: %v, want EBUSY", err)
	}
	fd := tempFile(t, nil)
	buf := make([]byte, 64<<10)
	copy(buf[40000:], "slot one payload")

	var h0 rec
	mustUD(t)(r.WriteFixed(fd, buf[40000:40016], 0, 1, false, &h0))
	waitUntil(t, r, h0.done)
	wantErrno(t, h0.last(), unix.EFAULT)

	must(t, r.UpdateBuffers(1, [][]byte{buf}))
	var hw, hr rec
	mustUD(t)(r.WriteFixed(fd, buf[40000:40016], 4096, 1, false, &hw))
	waitUntil(t, r, hw.done)
	if hw.last().Res != 16 {
		t.Fatalf("write from slot 1: %d (%v)", hw.last().Res, hw.last().Err())
	}
	dst := buf[100:116]
	mustUD(t)(r.ReadFixed(fd, dst, 4096, 1, false, &hr))
	waitUntil(t, r, hr.done)
	if hr.last().Res != 16 || string(dst) != "slot one payload" {
		t.Fatalf("read into slot 1: %d %q", hr.last().Res, dst)
	}
	// A slice outside the registered buffer is refused by the kernel.
	other := make([]byte, 16)
	var hx rec
	mustUD(t)(r.ReadFixed(fd, other, 4096, 1, false, &hx))
	waitUntil(t, r, hx.done)
	wantErrno(t, hx.last(), unix.EFAULT)
	if err := r.UpdateBuffers(2, [][]byte{buf, buf}); err == nil {
		t.Fatal("UpdateBuffers past the table's end: no error")
	}
	if err := r.UpdateBuffers(0, [][]byte{{}}); err == nil {
		t.Fatal("UpdateBuffers with an empty buffer: no error")
	}
	must(t, r.UnregisterBuffers())
	if err := r.UpdateBuffers(0, [][]byte{buf}); err == nil {
		t.Fatal("UpdateBuffers after UnregisterBuffers: no error")
	}
}

func TestCloseOp(t *testing.T) {
	r := newRing(t, Options{Entries: 4})
	var p [2]int
	must(t, unix.Pipe2(p[:], unix.O_CLOEXEC))
	defer unix.Close(p[1])
	var h rec
	mustUD(t)(r.CloseFd(p[0], &h))
	waitUntil(t, r, h.done)
	if h.last().Res != 0 {
		t.Fatalf("close: %v", h.last().Err())
	}
	if _, err := unix.FcntlInt(uintptr(p[0]), unix.F_GETFD, 0); err != unix.EBADF {
		t.Fatalf("fd still open after close op: %v", err)
	}
}

// TestPlugPad: with Options.PlugPad a submission of exactly two file
// writes gets a NOP behind them (so the kernel plugs the block layer for
// both) whose CQE is skipped: both writes complete and land, nothing else
// is reaped and nothing stays in flight. One write, three, or two SQEs of
// which one is no read or write are submitted as they are; without the
// option nothing is padded.
func TestPlugPad(t *testing.T) {
	for _, pad := range []bool{true, false} {
		r := newRing(t, Options{Entries: 8, PlugPad: pad})
		if r.features&FeatCQESkip == 0 {
			t.Skip("no IORING_FEAT_CQE_SKIP")
		}
		fd := tempFile(t, nil)
		for _, c := range []struct {
			writes int
			nop    bool
			padded bool
		}{{2, false, true}, {1, false, false}, {3, false, false}, {1, true, false}, {2, false, true}} {
			before := r.Stats()
			hs := make([]rec, c.writes)
			for i := range hs {
				b := bytes.Repeat([]byte{byte('a' + i)}, 512)
				mustUD(t)(r.Write(fd, b, int64(i)*512, false, &hs[i]))
			}
			var hn rec
			if c.nop {
				mustUD(t)(r.Nop(&hn))
			}
			got := 0
			want := c.writes
			if c.nop {
				want++
			}
			for deadline := time.Now().Add(5 * time.Second); got < want; {
				if time.Now().After(deadline) {
					t.Fatalf("pad=%v %+v: %d of %d completions", pad, c, got, want)
				}
				n, err := r.Wait(1, time.Second)
				if err != nil {
					t.Fatal(err)
				}
				got += n
			}
			for i := range hs {
				if !hs[i].done() || hs[i].last().Res != 512 {
					t.Fatalf("pad=%v %+v: write %d: %+v", pad, c, i, hs[i].cqes)
				}
			}
			after := r.Stats()
			padded := after.PlugPads - before.PlugPads
			if padded != 0 && !(pad && c.padded) || padded != 1 && pad && c.padded {
				t.Fatalf("pad=%v %+v: %d NOPs added", pad, c, padded)
			}
			if got != want || after.Untracked != before.Untracked || r.InFlight() != 0 {
				t.Fatalf("pad=%v %+v: %d CQEs reaped (want %d), %d untracked, %d in flight",
					pad, c, got, want, after.Untracked-before.Untracked, r.InFlight())
			}
			if sub := after.Submitted - before.Submitted; sub != uint64(want)+padded {
				t.Fatalf("pad=%v %+v: the kernel took %d SQEs, want %d", pad, c, sub, uint64(want)+padded)
			}
		}
	}
}
