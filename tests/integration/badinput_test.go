package integration

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

const (
	badInputMaxRequest = 1 << 20 // socket.request.max.bytes for TestBadInput
	badInputReact      = 5 * time.Second
	errUnsupportedVer  = 35 // UNSUPPORTED_VERSION
	apiKeyProduce      = 0
	apiKeyMetadata     = 3
	apiKeyApiVersions  = 18
)

// reqHeader appends a request header v1 (api key, version, correlation id,
// nullable client id) and, when flexible, the header v2 tagged-field count.
func reqHeader(dst []byte, key, version int16, corr int32, flexible bool) []byte {
	dst = binary.BigEndian.AppendUint16(dst, uint16(key))
	dst = binary.BigEndian.AppendUint16(dst, uint16(version))
	dst = binary.BigEndian.AppendUint32(dst, uint32(corr))
	const clientID = "rb-badinput"
	dst = binary.BigEndian.AppendUint16(dst, uint16(len(clientID)))
	dst = append(dst, clientID...)
	if flexible {
		dst = append(dst, 0) // no tagged fields
	}
	return dst
}

// frame prefixes payload with its int32 size.
func frame(payload []byte) []byte {
	return append(binary.BigEndian.AppendUint32(nil, uint32(len(payload))), payload...)
}

// appendCompactString appends a KIP-482 compact string.
func appendCompactString(dst []byte, s string) []byte {
	return append(binary.AppendUvarint(dst, uint64(len(s)+1)), s...)
}

// rawOutcome is how the broker reacted on a raw connection.
type rawOutcome struct {
	closed bool   // connection closed (EOF or reset) before a full response
	resp   []byte // a response frame without its size prefix
}

// dialRaw opens a plain TCP connection to the broker.
func dialRaw(t *testing.T, b *Broker) net.Conn {
	t.Helper()
	c, err := net.DialTimeout("tcp", b.Addr, 5*time.Second)
	if err != nil {
		t.Fatalf("dial %s: %v", b.Addr, err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// sendRaw writes data; a reset or broken pipe while writing counts as the
// broker having closed the connection.
func sendRaw(t *testing.T, c net.Conn, data []byte) (closed bool) {
	t.Helper()
	c.SetWriteDeadline(time.Now().Add(badInputReact))
	if _, err := c.Write(data); err != nil {
		if isClosedErr(err) {
			return true
		}
		t.Fatalf("write %d bytes: %v", len(data), err)
	}
	return false
}

func isClosedErr(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
}

// awaitReaction waits up to badInputReact for one response frame or for the
// broker to close the connection, and fails the test if neither happens.
func awaitReaction(t *testing.T, c net.Conn) rawOutcome {
	t.Helper()
	start := time.Now()
	c.SetReadDeadline(start.Add(badInputReact))
	var size [4]byte
	if _, err := io.ReadFull(c, size[:]); err != nil {
		if isClosedErr(err) {
			t.Logf("broker closed the connection after %v", time.Since(start).Round(time.Millisecond))
			return rawOutcome{closed: true}
		}
		t.Fatalf("broker neither answered nor closed the connection within %v: %v", badInputReact, err)
	}
	n := int32(binary.BigEndian.Uint32(size[:]))
	if n < 4 || n > 1<<20 {
		t.Fatalf("response frame size %d (bytes %x)", n, size)
	}
	resp := make([]byte, n)
	if _, err := io.ReadFull(c, resp); err != nil {
		t.Fatalf("reading a %d-byte response: %v", n, err)
	}
	t.Logf("broker answered %d bytes after %v", n, time.Since(start).Round(time.Millisecond))
	return rawOutcome{resp: resp}
}

// roundTrip sends one framed request and returns the broker's reaction.
func roundTrip(t *testing.T, c net.Conn, payload []byte) rawOutcome {
	t.Helper()
	if sendRaw(t, c, frame(payload)) {
		return rawOutcome{closed: true}
	}
	return awaitReaction(t, c)
}

// respReader reads big-endian fields with a sticky error.
type respReader struct {
	b   []byte
	err error
}

func (r *respReader) take(n int) []byte {
	if r.err != nil {
		return nil
	}
	if n < 0 || len(r.b) < n {
		r.err = fmt.Errorf("need %d bytes, have %d", n, len(r.b))
		return nil
	}
	v := r.b[:n]
	r.b = r.b[n:]
	return v
}

func (r *respReader) i16() int16 {
	if v := r.take(2); v != nil {
		return int16(binary.BigEndian.Uint16(v))
	}
	return 0
}

func (r *respReader) i32() int32 {
	if v := r.take(4); v != nil {
		return int32(binary.BigEndian.Uint32(v))
	}
	return 0
}

func (r *respReader) uvarint() uint64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.err = errors.New("bad uvarint")
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *respReader) skipTags() {
	for range r.uvarint() {
		r.uvarint()
		r.take(int(r.uvarint()))
	}
}

type apiRange struct{ key, min, max int16 }

// healthyTraffic is a franz-go producer and a direct consumer that keep
// working while raw connections misbehave.
type healthyTraffic struct {
	b           *Broker
	produced    atomic.Int64
	consumed    atomic.Int64
	mu          sync.Mutex
	errs        []string
	stopProduce context.CancelFunc
	stopConsume context.CancelFunc
	produceDone chan struct{}
	consumeDone chan struct{}
}

// startHealthyTraffic produces one record at a time (each must succeed
// within 10s) and consumes them back, until finish.
func startHealthyTraffic(t *testing.T, b *Broker) *healthyTraffic {
	const topic = "healthy"
	createTopic(t, t.Context(), b, topic, 1)
	prod := newClient(t, b, kgo.DefaultProduceTopic(topic), kgo.ProducerLinger(0))
	cons := newClient(t, b, kgo.ConsumePartitions(startOffsets(topic, 1)), kgo.FetchMaxWait(200*time.Millisecond))
	pctx, pcancel := context.WithCancel(t.Context())
	cctx, ccancel := context.WithCancel(t.Context())
	h := &healthyTraffic{
		b:           b,
		stopProduce: pcancel,
		stopConsume: ccancel,
		produceDone: make(chan struct{}),
		consumeDone: make(chan struct{}),
	}
	go func() {
		defer close(h.produceDone)
		for i := 0; i < 1_000_000 && pctx.Err() == nil; i++ {
			ctx, cancel := context.WithTimeout(pctx, 10*time.Second)
			err := prod.ProduceSync(ctx, &kgo.Record{Value: fmt.Appendf(nil, "healthy-%d", i)}).FirstErr()
			cancel()
			if err != nil {
				if pctx.Err() == nil {
					h.fail("produce %d: %v", i, err)
				}
				return
			}
			h.produced.Add(1)
		}
	}()
	go func() {
		defer close(h.consumeDone)
		for cctx.Err() == nil {
			fs := cons.PollFetches(cctx)
			fs.EachError(func(_ string, _ int32, err error) {
				if cctx.Err() == nil {
					h.fail("fetch: %v", err)
				}
			})
			fs.EachRecord(func(r *kgo.Record) {
				if want := fmt.Sprintf("healthy-%d", r.Offset); string(r.Value) != want {
					h.fail("offset %d: value %q, want %q", r.Offset, r.Value, want)
				}
				h.consumed.Add(1)
			})
		}
	}()
	t.Cleanup(func() {
		pcancel()
		ccancel()
		<-h.produceDone
		<-h.consumeDone
	})
	return h
}

func (h *healthyTraffic) fail(format string, args ...any) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.errs) < 10 {
		h.errs = append(h.errs, fmt.Sprintf(format, args...))
	}
}

func (h *healthyTraffic) errors() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.errs...)
}

// check waits until the healthy client has produced and consumed a few
// more records, and fails the test if it has reported errors or the broker
// has exited.
func (h *healthyTraffic) check(t *testing.T) {
	t.Helper()
	p0, c0 := h.produced.Load(), h.consumed.Load()
	waitFor(t, 15*time.Second, "the healthy client to produce and consume 3 more records", func() bool {
		return !h.b.Running() || len(h.errors()) > 0 || (h.produced.Load() >= p0+3 && h.consumed.Load() >= c0+3)
	})
	if !h.b.Running() {
		t.Fatalf("broker exited (%s)", h.b.exitDesc())
	}
	if errs := h.errors(); len(errs) > 0 {
		t.Fatalf("healthy client failed: %v", errs)
	}
}

// finish stops producing, waits until everything produced was consumed and
// stops consuming.
func (h *healthyTraffic) finish(t *testing.T) {
	t.Helper()
	h.stopProduce()
	<-h.produceDone
	waitFor(t, 30*time.Second, "the healthy consumer to catch up", func() bool {
		return len(h.errors()) > 0 || h.consumed.Load() >= h.produced.Load()
	})
	h.stopConsume()
	<-h.consumeDone
	if errs := h.errors(); len(errs) > 0 {
		t.Fatalf("healthy client failed: %v", errs)
	}
	// The produce cut short by stopProduce may still have been written.
	if p, c := h.produced.Load(), h.consumed.Load(); c != p && c != p+1 {
		t.Fatalf("healthy client consumed %d records, produced %d", c, p)
	}
	t.Logf("healthy client produced and consumed %d records meanwhile", h.produced.Load())
}

// TestBadInput feeds the broker malformed frames on raw connections. For
// each, the broker must answer with Kafka's error or close the connection
// within 5s, a healthy franz-go client keeps producing and consuming, and
// the process stays up.
func TestBadInput(t *testing.T) {
	b := startBroker(t, "", fmt.Sprintf("socket.request.max.bytes=%d", badInputMaxRequest))
	h := startHealthyTraffic(t, b)
	h.check(t)

	rng := rand.New(rand.NewPCG(7, 11))
	cases := []struct {
		name string
		run  func(t *testing.T, c net.Conn)
	}{
		{"control: ApiVersions v0", func(t *testing.T, c net.Conn) {
			out := roundTrip(t, c, reqHeader(nil, apiKeyApiVersions, 0, 101, false))
			if out.closed {
				t.Fatal("broker closed the connection on a valid ApiVersions v0")
			}
			checkApiVersionsV0(t, out.resp, 101, 0)
		}},
		{"control: ApiVersions v3 (response header v0)", func(t *testing.T, c net.Conn) {
			req := reqHeader(nil, apiKeyApiVersions, 3, 102, true)
			req = appendCompactString(req, "rb-badinput")
			req = appendCompactString(req, "1.0")
			req = append(req, 0)
			out := roundTrip(t, c, req)
			if out.closed {
				t.Fatal("broker closed the connection on a valid ApiVersions v3")
			}
			checkApiVersionsV3(t, out.resp, 102)
		}},
		{"garbage: HTTP request", func(t *testing.T, c net.Conn) {
			// "GET " read as a size is 1195725856, far above the limit.
			if !sendRaw(t, c, []byte("GET / HTTP/1.1\r\nHost: localhost\r\n\r\n")) {
				mustClose(t, awaitReaction(t, c))
			}
		}},
		{"garbage: random frame", func(t *testing.T, c net.Conn) {
			payload := make([]byte, 300)
			for i := range payload {
				payload[i] = byte(rng.Uint32())
			}
			payload[0], payload[1] = 0x7e, 0x5a // api key 32346: unknown
			if !sendRaw(t, c, frame(payload)) {
				awaitReaction(t, c) // an answer or a close are both fine
			}
		}},
		{"negative size", func(t *testing.T, c net.Conn) {
			data := append(binary.BigEndian.AppendUint32(nil, 0x80000000),
				reqHeader(nil, apiKeyApiVersions, 0, 103, false)...)
			if !sendRaw(t, c, data) {
				mustClose(t, awaitReaction(t, c))
			}
		}},
		{"size -1", func(t *testing.T, c net.Conn) {
			if !sendRaw(t, c, []byte{0xff, 0xff, 0xff, 0xff, 0, 18, 0, 0}) {
				mustClose(t, awaitReaction(t, c))
			}
		}},
		{"zero size", func(t *testing.T, c net.Conn) {
			if !sendRaw(t, c, []byte{0, 0, 0, 0}) {
				mustClose(t, awaitReaction(t, c))
			}
		}},
		{"frame above socket.request.max.bytes", func(t *testing.T, c net.Conn) {
			// Claims 2 MiB but sends only the header: the broker must
			// refuse on the size alone, not wait for the body.
			data := binary.BigEndian.AppendUint32(nil, 2<<20)
			data = reqHeader(data, apiKeyProduce, 9, 104, true)
			if !sendRaw(t, c, data) {
				mustClose(t, awaitReaction(t, c))
			}
		}},
		{"truncated frame then half-close", func(t *testing.T, c net.Conn) {
			data := binary.BigEndian.AppendUint32(nil, 200)
			data = reqHeader(data, apiKeyMetadata, 1, 105, false)
			if sendRaw(t, c, data) {
				return
			}
			if err := c.(*net.TCPConn).CloseWrite(); err != nil {
				t.Fatalf("CloseWrite: %v", err)
			}
			mustClose(t, awaitReaction(t, c))
		}},
		{"truncated frame then close", func(t *testing.T, c net.Conn) {
			data := binary.BigEndian.AppendUint32(nil, 200)
			data = reqHeader(data, apiKeyMetadata, 1, 106, false)
			sendRaw(t, c, data)
			c.Close()
		}},
		{"truncated frame then reset", func(t *testing.T, c net.Conn) {
			data := binary.BigEndian.AppendUint32(nil, 200)
			data = reqHeader(data, apiKeyMetadata, 1, 112, false)
			if !sendRaw(t, c, data) {
				// The broker must have read the bytes before the RST,
				// which would discard them.
				waitFor(t, badInputReact, "the broker to read the truncated frame", func() bool { return peerHasRead(t, c) })
			}
			c.(*net.TCPConn).SetLinger(0)
			c.Close()
		}},
		{"unknown api key 9999", func(t *testing.T, c net.Conn) {
			out := roundTrip(t, c, reqHeader(nil, 9999, 0, 107, false))
			if !out.closed {
				if corr := int32(binary.BigEndian.Uint32(out.resp)); corr != 107 {
					t.Errorf("response correlation id %d, want 107", corr)
				}
				t.Logf("answer to api key 9999: %x", out.resp)
			}
		}},
		{"ApiVersions v99 gets a v0 response with UNSUPPORTED_VERSION", func(t *testing.T, c net.Conn) {
			// A client newer than the broker sends ApiVersions at its own
			// highest version, with a flexible (v2) header since v3+ is
			// flexible. Kafka answers in v0 format with error 35 and its
			// version ranges (KIP-511), so the client can retry lower.
			req := reqHeader(nil, apiKeyApiVersions, 99, 108, true)
			req = appendCompactString(req, "rb-badinput")
			req = appendCompactString(req, "1.0")
			req = append(req, 0)
			out := roundTrip(t, c, req)
			if out.closed {
				t.Fatal("broker closed the connection; want an ApiVersions v0 response with error 35")
			}
			checkApiVersionsV0(t, out.resp, 108, errUnsupportedVer)
		}},
		{"Produce v2 is unsupported", func(t *testing.T, c net.Conn) {
			req := reqHeader(nil, apiKeyProduce, 2, 109, false)
			req = binary.BigEndian.AppendUint16(req, 1)    // acks
			req = binary.BigEndian.AppendUint32(req, 5000) // timeout ms
			req = binary.BigEndian.AppendUint32(req, 1)    // topics
			req = binary.BigEndian.AppendUint16(req, 7)    // topic name length
			req = append(req, "healthy"...)                //
			req = binary.BigEndian.AppendUint32(req, 1)    // partitions
			req = binary.BigEndian.AppendUint32(req, 0)    // partition
			req = binary.BigEndian.AppendUint32(req, 0)    // record set size
			out := roundTrip(t, c, req)
			if out.closed {
				return
			}
			// Produce v2 response: correlation id, [topic [partition
			// error_code base_offset log_append_time]] throttle_time_ms.
			r := &respReader{b: out.resp}
			corr := r.i32()
			nt := r.i32()
			r.take(int(r.i16()))
			np := r.i32()
			part := r.i32()
			code := r.i16()
			if r.err != nil || corr != 109 || nt != 1 || np != 1 || part != 0 || code != errUnsupportedVer {
				t.Errorf("Produce v2 answer: corr=%d topics=%d partitions=%d partition=%d error=%d (%v); want corr 109, 1 topic, 1 partition 0 with error 35, or a close\n%s",
					corr, nt, np, part, code, r.err, hex.Dump(out.resp))
			}
		}},
		{"Metadata v1 with a huge topic count", func(t *testing.T, c net.Conn) {
			req := reqHeader(nil, apiKeyMetadata, 1, 110, false)
			req = binary.BigEndian.AppendUint32(req, 1_000_000) // topics, none follow
			req = append(req, 0, 3, 'a', 'b', 'c')
			awaitAnyReaction(t, roundTrip(t, c, req), 110)
		}},
	}
	for _, tc := range cases {
		if !b.Running() {
			t.Fatalf("broker exited (%s); remaining cases not run", b.exitDesc())
		}
		t.Run(tc.name, func(t *testing.T) {
			c := dialRaw(t, b)
			tc.run(t, c)
			c.Close()
			if !b.Running() {
				t.Fatalf("broker exited (%s)", b.exitDesc())
			}
			h.check(t)
		})
	}

	// Still serving raw clients after all of it.
	c := dialRaw(t, b)
	out := roundTrip(t, c, reqHeader(nil, apiKeyApiVersions, 0, 111, false))
	if out.closed {
		t.Fatal("broker closed a valid ApiVersions v0 after the bad input")
	}
	checkApiVersionsV0(t, out.resp, 111, 0)

	h.check(t)
	h.finish(t)
	if !b.Running() {
		t.Fatalf("broker exited (%s)", b.exitDesc())
	}
	// Each engine logs the three peers that left part way through a frame
	// (a FIN after a half-close, a FIN, a RST).
	var lines int
	eventually(t, 5*time.Second, 20*time.Millisecond, func() bool {
		data, err := os.ReadFile(b.logPaths[len(b.logPaths)-1])
		if err != nil {
			t.Fatal(err)
		}
		lines = bytes.Count(data, []byte("truncated request frame"))
		return lines >= 3
	})
	if lines < 3 {
		t.Errorf("broker log has %d lines about a truncated request frame, want one per truncated case (3)", lines)
	}
}

// mustClose fails the test unless the broker closed the connection.
func mustClose(t *testing.T, out rawOutcome) {
	t.Helper()
	if !out.closed {
		t.Errorf("broker answered %d bytes, want the connection closed:\n%s", len(out.resp), hex.Dump(out.resp))
	}
}

// awaitAnyReaction accepts a close or a response carrying corr.
func awaitAnyReaction(t *testing.T, out rawOutcome, corr int32) {
	t.Helper()
	if out.closed {
		return
	}
	if got := int32(binary.BigEndian.Uint32(out.resp)); got != corr {
		t.Errorf("response correlation id %d, want %d", got, corr)
	}
}

// checkApiVersionsV0 checks an ApiVersions response in v0 format:
// correlation id, error_code, [api_key min_version max_version], nothing
// after; the list must be non-empty and include ApiVersions itself.
func checkApiVersionsV0(t *testing.T, resp []byte, corr int32, wantErr int16) {
	t.Helper()
	r := &respReader{b: resp}
	gotCorr := r.i32()
	code := r.i16()
	n := r.i32()
	var apis []apiRange
	for i := int32(0); i < n && r.err == nil && i < 1000; i++ {
		apis = append(apis, apiRange{r.i16(), r.i16(), r.i16()})
	}
	if r.err != nil || len(r.b) != 0 {
		t.Fatalf("ApiVersions v0 response does not parse (%v, %d bytes left):\n%s", r.err, len(r.b), hex.Dump(resp))
	}
	if gotCorr != corr || code != wantErr || n <= 0 {
		t.Fatalf("ApiVersions v0 response: corr=%d error=%d apis=%d; want corr=%d error=%d and a non-empty list",
			gotCorr, code, n, corr, wantErr)
	}
	checkApiRanges(t, apis)
}

// checkApiVersionsV3 checks an ApiVersions v3 response, whose header is v0
// (no tagged fields, KIP-511) and whose body is flexible.
func checkApiVersionsV3(t *testing.T, resp []byte, corr int32) {
	t.Helper()
	r := &respReader{b: resp}
	gotCorr := r.i32()
	code := r.i16()
	n := int(r.uvarint()) - 1
	var apis []apiRange
	for i := 0; i < n && r.err == nil && i < 1000; i++ {
		apis = append(apis, apiRange{r.i16(), r.i16(), r.i16()})
		r.skipTags()
	}
	r.i32() // throttle_time_ms
	r.skipTags()
	if r.err != nil || len(r.b) != 0 {
		t.Fatalf("ApiVersions v3 response does not parse with a v0 response header (%v, %d bytes left):\n%s",
			r.err, len(r.b), hex.Dump(resp))
	}
	if gotCorr != corr || code != 0 || n <= 0 {
		t.Fatalf("ApiVersions v3 response: corr=%d error=%d apis=%d; want corr=%d error=0 and a non-empty list",
			gotCorr, code, n, corr)
	}
	checkApiRanges(t, apis)
}

func checkApiRanges(t *testing.T, apis []apiRange) {
	t.Helper()
	var sawApiVersions bool
	for _, a := range apis {
		if a.min < 0 || a.min > a.max {
			t.Errorf("api key %d: versions %d..%d", a.key, a.min, a.max)
		}
		if a.key == apiKeyApiVersions {
			sawApiVersions = true
			if a.max < 3 {
				t.Errorf("ApiVersions max version %d, want >= 3", a.max)
			}
		}
	}
	if !sawApiVersions {
		t.Errorf("api list %v lacks ApiVersions (18)", apis)
	}
}
