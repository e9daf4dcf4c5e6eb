package main

import (
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Limits are the machine's physical limits, measured in the same run on the
// data directory's filesystem and on loopback. Bandwidths in MB/s (10^6).
type Limits struct {
	Dir             string   `json:"dir"`
	DirectWriteMBPS float64  `json:"odirect_seq_write_1mib_mb_per_s"`
	DirectReadMBPS  float64  `json:"odirect_seq_read_1mib_mb_per_s"`
	DirectBytes     int64    `json:"odirect_bytes"`
	FdatasyncOps    uint64   `json:"fdatasync_4k_ops"`
	FdatasyncP50Ms  float64  `json:"fdatasync_4k_p50_ms"`
	FdatasyncP99Ms  float64  `json:"fdatasync_4k_p99_ms"`
	LoopbackTCPMBPS float64  `json:"loopback_tcp_1stream_mb_per_s"`
	Errors          []string `json:"errors,omitempty"`
	MeasuredSeconds float64  `json:"measured_seconds"`
}

// LimitOpts bounds the limit measurements.
type LimitOpts struct {
	FileBytes int64         // O_DIRECT test file size
	PhaseTime time.Duration // cap per bandwidth phase
	SyncOps   int           // fdatasync appends
	TCPTime   time.Duration // loopback stream duration
}

// MeasureLimits runs every limit probe in dir; a probe that fails records
// its error and leaves its figure 0.
func MeasureLimits(dir string, o LimitOpts) *Limits {
	start := time.Now()
	l := &Limits{Dir: dir}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		l.Errors = append(l.Errors, err.Error())
		return l
	}
	w, r, n, err := directBandwidth(dir, o.FileBytes, o.PhaseTime)
	if err != nil {
		l.Errors = append(l.Errors, err.Error())
	}
	l.DirectWriteMBPS, l.DirectReadMBPS, l.DirectBytes = w, r, n
	h, err := fdatasyncLatency(dir, o.SyncOps, o.PhaseTime)
	if err != nil {
		l.Errors = append(l.Errors, err.Error())
	} else {
		l.FdatasyncOps = h.Count()
		l.FdatasyncP50Ms = float64(h.Percentile(50)) / 1000
		l.FdatasyncP99Ms = float64(h.Percentile(99)) / 1000
	}
	t, err := loopbackTCP(o.TCPTime)
	if err != nil {
		l.Errors = append(l.Errors, err.Error())
	}
	l.LoopbackTCPMBPS = t
	l.MeasuredSeconds = time.Since(start).Seconds()
	return l
}

// alignedBuf returns a size-byte slice whose start is aligned to align.
func alignedBuf(size, align int) []byte {
	b := make([]byte, size+align)
	off := 0
	if r := int(uintptr(unsafe.Pointer(&b[0])) & uintptr(align-1)); r != 0 {
		off = align - r
	}
	return b[off : off+size : off+size]
}

// directBandwidth writes a file of up to size bytes with O_DIRECT in 1 MiB
// sequential writes (then fdatasync), and reads it back the same way. Each
// phase stops early after limit.
func directBandwidth(dir string, size int64, limit time.Duration) (wMBPS, rMBPS float64, written int64, err error) {
	const bs = 1 << 20
	path := filepath.Join(dir, "ringbench-odirect.tmp")
	defer os.Remove(path)
	fd, err := unix.Open(path, unix.O_CREAT|unix.O_TRUNC|unix.O_WRONLY|unix.O_DIRECT|unix.O_CLOEXEC, 0o644)
	if err != nil {
		return 0, 0, 0, fmt.Errorf("cannot open %q with O_DIRECT: %w", path, err)
	}
	buf := alignedBuf(bs, 4096)
	for i := range buf {
		buf[i] = byte(i*7 + 1)
	}
	start := time.Now()
	for written < size && time.Since(start) < limit {
		n, werr := unix.Pwrite(fd, buf, written)
		if werr != nil {
			unix.Close(fd)
			return 0, 0, written, fmt.Errorf("cannot write O_DIRECT at %d: %w", written, werr)
		}
		written += int64(n)
	}
	if serr := unix.Fdatasync(fd); serr != nil {
		unix.Close(fd)
		return 0, 0, written, fmt.Errorf("cannot fdatasync %q: %w", path, serr)
	}
	wMBPS = float64(written) / 1e6 / time.Since(start).Seconds()
	unix.Close(fd)

	fd, err = unix.Open(path, unix.O_RDONLY|unix.O_DIRECT|unix.O_CLOEXEC, 0)
	if err != nil {
		return wMBPS, 0, written, fmt.Errorf("cannot open %q with O_DIRECT for reading: %w", path, err)
	}
	defer unix.Close(fd)
	var read int64
	start = time.Now()
	for read < written && time.Since(start) < limit {
		n, rerr := unix.Pread(fd, buf, read)
		if rerr != nil {
			return wMBPS, 0, written, fmt.Errorf("cannot read O_DIRECT at %d: %w", read, rerr)
		}
		if n == 0 {
			break
		}
		read += int64(n)
	}
	rMBPS = float64(read) / 1e6 / time.Since(start).Seconds()
	return wMBPS, rMBPS, written, nil
}

// fdatasyncLatency appends 4 KiB blocks to a preallocated file, each
// followed by fdatasync, and returns their latency in microseconds.
func fdatasyncLatency(dir string, ops int, limit time.Duration) (*Hist, error) {
	const bs = 4096
	path := filepath.Join(dir, "ringbench-fdatasync.tmp")
	defer os.Remove(path)
	f, err := os.OpenFile(path, os.O_CREATE|os.O_TRUNC|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("cannot create %q: %w", path, err)
	}
	defer f.Close()
	fd := int(f.Fd())
	if err := unix.Fallocate(fd, 0, 0, int64(ops)*bs); err != nil {
		return nil, fmt.Errorf("cannot fallocate %q: %w", path, err)
	}
	if err := unix.Fsync(fd); err != nil {
		return nil, fmt.Errorf("cannot fsync %q: %w", path, err)
	}
	buf := make([]byte, bs)
	h := NewHist()
	start := time.Now()
	for i := 0; i < ops && time.Since(start) < limit; i++ {
		buf[0] = byte(i)
		t := time.Now()
		if _, err := unix.Pwrite(fd, buf, int64(i)*bs); err != nil {
			return nil, fmt.Errorf("cannot write %q: %w", path, err)
		}
		if err := unix.Fdatasync(fd); err != nil {
			return nil, fmt.Errorf("cannot fdatasync %q: %w", path, err)
		}
		h.Record(int64(time.Since(t) / time.Microsecond))
	}
	return h, nil
}

// loopbackTCP streams 128 KiB writes over one loopback connection for d and
// returns the received MB/s.
func loopbackTCP(d time.Duration) (float64, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("cannot listen on loopback: %w", err)
	}
	defer ln.Close()
	type res struct {
		n   int64
		dur time.Duration
		err error
	}
	done := make(chan res, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			done <- res{err: err}
			return
		}
		defer c.Close()
		start := time.Now()
		n, err := io.CopyBuffer(io.Discard, c, make([]byte, 128<<10))
		done <- res{n: n, dur: time.Since(start), err: err}
	}()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		return 0, fmt.Errorf("cannot dial loopback: %w", err)
	}
	buf := make([]byte, 128<<10)
	start := time.Now()
	for time.Since(start) < d {
		if _, err := c.Write(buf); err != nil {
			c.Close()
			return 0, fmt.Errorf("cannot write to loopback: %w", err)
		}
	}
	c.Close()
	r := <-done
	if r.err != nil {
		return 0, fmt.Errorf("cannot read loopback: %w", r.err)
	}
	return float64(r.n) / 1e6 / r.dur.Seconds(), nil
}
