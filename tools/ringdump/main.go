// Command ringdump prints and checks a partition directory in Kafka's
// on-disk layout, as written by ringbroker or by Apache Kafka:
//
//	ringdump [--records] [--no-index] <partition-dir | segment.log>
//
// For every segment it prints each record batch (base and last offset,
// record count, size, file position, leader epoch, timestamps, producer id,
// epoch and base sequence, codec, transactional and control flags, and for
// control batches the COMMIT or ABORT marker) and verifies its CRC32C; then
// the offset index and time index entries, checked against the batches; then
// the producer snapshot files, the leader-epoch checkpoint and
// partition.metadata. --records also prints each record (decompressing
// batches as needed).
//
// Exit status: 0 when everything checks out; 1 when a batch fails its CRC,
// a segment ends in a torn (partial) batch, or an index or snapshot is
// inconsistent, with a summary of every problem on stderr; 2 on usage or
// I/O errors.
package main

import (
	"encoding/base64"
	"encoding/binary"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/ringbroker/ringbroker/nvme"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// dumper walks one directory and collects problems.
type dumper struct {
	out      io.Writer
	records  bool
	noIndex  bool
	problems []string

	segments, batches, records64 int64
}

func (d *dumper) problem(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	d.problems = append(d.problems, msg)
	fmt.Fprintf(d.out, "  PROBLEM: %s\n", msg)
}

func run(args []string, out, errOut io.Writer) int {
	fs := flag.NewFlagSet("ringdump", flag.ContinueOnError)
	fs.SetOutput(errOut)
	records := fs.Bool("records", false, "print every record (keys, values, headers)")
	noIndex := fs.Bool("no-index", false, "do not print index entries (they are still checked)")
	fs.Usage = func() {
		fmt.Fprintln(errOut, "usage: ringdump [--records] [--no-index] <partition-dir | segment.log>")
		fs.PrintDefaults()
	}
	// Flags may follow the path.
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return 2
		}
		if fs.NArg() == 0 {
			break
		}
		pos = append(pos, fs.Arg(0))
		args = fs.Args()[1:]
	}
	if len(pos) != 1 {
		fs.Usage()
		return 2
	}
	d := &dumper{out: out, records: *records, noIndex: *noIndex}
	path := pos[0]
	st, err := os.Stat(path)
	if err != nil {
		fmt.Fprintf(errOut, "ringdump: cannot open %s: %v\n", path, err)
		return 2
	}
	var logs []string
	dir := path
	if st.IsDir() {
		ents, err := os.ReadDir(path)
		if err != nil {
			fmt.Fprintf(errOut, "ringdump: cannot read directory %s: %v\n", path, err)
			return 2
		}
		for _, e := range ents {
			if isSegmentLog(e.Name()) {
				logs = append(logs, filepath.Join(path, e.Name()))
			}
		}
		sort.Strings(logs) // 20-digit names sort by base offset
		fmt.Fprintf(out, "Partition directory %s\n", path)
		d.dumpMetadata(path)
	} else {
		logs = []string{path}
		dir = filepath.Dir(path)
	}
	if len(logs) == 0 {
		fmt.Fprintf(out, "no segments (*.log) in %s\n", path)
	}
	for _, l := range logs {
		if err := d.dumpSegment(l); err != nil {
			fmt.Fprintf(errOut, "ringdump: %v\n", err)
			return 2
		}
	}
	if st.IsDir() {
		d.dumpSnapshots(dir)
	}
	fmt.Fprintf(out, "\nSummary: %d segments, %d batches, %d records, %d problems\n", d.segments, d.batches, d.records64, len(d.problems))
	if len(d.problems) > 0 {
		fmt.Fprintf(errOut, "ringdump: %d problems in %s:\n", len(d.problems), path)
		for _, p := range d.problems {
			fmt.Fprintf(errOut, "  %s\n", p)
		}
		return 1
	}
	return 0
}

// isSegmentLog matches Kafka's "<20 digits>.log".
func isSegmentLog(name string) bool {
	stem, ok := strings.CutSuffix(name, ".log")
	if !ok || len(stem) != 20 {
		return false
	}
	_, err := strconv.ParseUint(stem, 10, 64)
	return err == nil
}

func baseOffsetOf(path string) int64 {
	stem := strings.TrimSuffix(filepath.Base(path), ".log")
	n, err := strconv.ParseInt(stem, 10, 64)
	if err != nil {
		return 0
	}
	return n
}

func (d *dumper) dumpMetadata(dir string) {
	if id, err := nvme.ReadPartitionMetadata(dir); err == nil {
		fmt.Fprintf(d.out, "partition.metadata: topic_id %s\n", uuidString(id))
	} else if !os.IsNotExist(unwrapAll(err)) {
		d.problem("partition.metadata: %v", err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "leader-epoch-checkpoint"))
	switch {
	case err == nil:
		es, err := nvme.ParseEpochCheckpoint(b)
		if err != nil {
			d.problem("leader-epoch-checkpoint: %v", err)
			break
		}
		fmt.Fprintf(d.out, "leader-epoch-checkpoint: %d entries\n", len(es))
		for _, e := range es {
			fmt.Fprintf(d.out, "  epoch %d from offset %d\n", e.Epoch, e.StartOffset)
		}
	case !os.IsNotExist(err):
		d.problem("leader-epoch-checkpoint: %v", err)
	}
}

func unwrapAll(err error) error {
	for {
		u, ok := err.(interface{ Unwrap() error })
		if !ok {
			return err
		}
		next := u.Unwrap()
		if next == nil {
			return err
		}
		err = next
	}
}

// uuidString prints a topic id as Kafka does (URL-safe base64, no padding).
func uuidString(id [16]byte) string {
	return base64.RawURLEncoding.EncodeToString(id[:])
}

// batchLoc is where a batch sits in its segment, for the index checks.
type batchLoc struct {
	pos        int64
	lastOffset int64
	maxTs      int64
}

var codecs = [...]string{"none", "gzip", "snappy", "lz4", "zstd", "codec5", "codec6", "codec7"}

func (d *dumper) dumpSegment(path string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("cannot read segment %s: %w", path, err)
	}
	d.segments++
	base := baseOffsetOf(path)
	name := filepath.Base(path)
	fmt.Fprintf(d.out, "\nSegment %s: base offset %d, %d bytes\n", name, base, len(data))
	var locs []batchLoc
	var pos int64
	nextOffset := int64(-1)
	for pos < int64(len(data)) {
		rest := data[pos:]
		if len(rest) < 17 || len(rest) < nvme.BatchHeaderSize && rest[16] == 2 {
			d.problem("%s: torn tail: %d bytes at position %d are too few for a batch header", name, len(rest), pos)
			break
		}
		h, err := nvme.ParseBatchHeader(rest)
		if err != nil {
			if allZero(rest) {
				d.problem("%s: torn tail: %d zero bytes from position %d (preallocated or unwritten)", name, len(rest), pos)
			} else {
				d.problem("%s: cannot parse the batch header at position %d: %v; %d bytes not scanned", name, pos, err, len(rest))
			}
			break
		}
		size := h.Size()
		if size > int64(len(rest)) {
			d.problem("%s: torn tail: batch at position %d (base offset %d) declares %d bytes, only %d remain", name, pos, h.BaseOffset, size, len(rest))
			break
		}
		batch := rest[:size]
		d.batches++
		d.records64 += int64(h.RecordCount)
		crc := nvme.CRC32C(batch[21:])
		crcNote := "crc ok"
		if crc != h.CRC {
			crcNote = fmt.Sprintf("CRC MISMATCH (stored %#08x, computed %#08x)", h.CRC, crc)
		}
		flags := []string{}
		if h.IsTransactional() {
			flags = append(flags, "transactional")
		}
		if h.IsControl() {
			flags = append(flags, "control")
		}
		tsType := "CreateTime"
		if h.IsLogAppendTime() {
			tsType = "LogAppendTime"
		}
		fmt.Fprintf(d.out, "  batch base %d last %d count %d size %d position %d epoch %d | %s first %s max %s | producer %d epoch %d seq %d | %s %s | %s\n",
			h.BaseOffset, h.LastOffset(), h.RecordCount, size, pos, h.PartitionLeaderEpoch,
			tsType, fmtTs(h.BaseTimestamp), fmtTs(h.MaxTimestamp),
			h.ProducerID, h.ProducerEpoch, h.BaseSequence, codecs[h.Compression()], strings.Join(flags, ","), crcNote)
		if crc != h.CRC {
			d.problem("%s: batch at position %d (offsets %d-%d): CRC32C mismatch: stored %#08x, computed %#08x", name, pos, h.BaseOffset, h.LastOffset(), h.CRC, crc)
		} else {
			if nextOffset >= 0 && h.BaseOffset < nextOffset {
				d.problem("%s: batch at position %d starts at offset %d, before the previous batch's end %d", name, pos, h.BaseOffset, nextOffset)
			}
			if h.BaseOffset < base {
				d.problem("%s: batch at position %d has base offset %d below the segment's base %d", name, pos, h.BaseOffset, base)
			}
			d.dumpRecords(name, pos, h, batch[nvme.BatchHeaderSize:])
		}
		nextOffset = h.LastOffset() + 1
		locs = append(locs, batchLoc{pos: pos, lastOffset: h.LastOffset(), maxTs: h.MaxTimestamp})
		pos += size
	}
	d.dumpOffsetIndex(strings.TrimSuffix(path, ".log")+".index", base, locs)
	d.dumpTimeIndex(strings.TrimSuffix(path, ".log")+".timeindex", base, locs)
	return nil
}

func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

func fmtTs(ms int64) string {
	if ms < 0 {
		return strconv.FormatInt(ms, 10)
	}
	return time.UnixMilli(ms).UTC().Format("2006-01-02T15:04:05.000Z")
}

// dumpRecords prints control markers always and every record with --records.
func (d *dumper) dumpRecords(name string, pos int64, h nvme.BatchHeader, body []byte) {
	if !d.records && !h.IsControl() {
		return
	}
	raw, err := decompress(h.Compression(), body)
	if err != nil {
		d.problem("%s: batch at position %d: cannot decompress %s records: %v", name, pos, codecs[h.Compression()], err)
		return
	}
	recs, err := parseRecords(raw, h.RecordCount)
	if err != nil {
		d.problem("%s: batch at position %d: %v", name, pos, err)
		return
	}
	for _, r := range recs {
		off := h.BaseOffset + int64(r.offsetDelta)
		if h.IsControl() {
			fmt.Fprintf(d.out, "    offset %d: %s\n", off, controlMarker(r))
			continue
		}
		fmt.Fprintf(d.out, "    offset %d ts %s key %s value %s", off, fmtTs(h.BaseTimestamp+r.timestampDelta), quote(r.key), quote(r.value))
		for _, hd := range r.headers {
			fmt.Fprintf(d.out, " header %q=%s", hd.key, quote(hd.value))
		}
		fmt.Fprintln(d.out)
	}
}

// controlMarker decodes a control record: key (version int16, type int16:
// 0 ABORT, 1 COMMIT), value (version int16, coordinator epoch int32).
func controlMarker(r record) string {
	if len(r.key) < 4 {
		return fmt.Sprintf("control record with a %d-byte key", len(r.key))
	}
	typ := int16(binary.BigEndian.Uint16(r.key[2:]))
	name := fmt.Sprintf("control type %d", typ)
	switch typ {
	case 0:
		name = "ABORT"
	case 1:
		name = "COMMIT"
	}
	if len(r.value) >= 6 {
		name += fmt.Sprintf(" (coordinator epoch %d)", int32(binary.BigEndian.Uint32(r.value[2:])))
	}
	return name
}

func quote(b []byte) string {
	if b == nil {
		return "null"
	}
	if len(b) > 200 {
		return strconv.Quote(string(b[:200])) + fmt.Sprintf("...(%d bytes)", len(b))
	}
	return strconv.Quote(string(b))
}

type header struct {
	key   string
	value []byte
}

type record struct {
	timestampDelta int64
	offsetDelta    int32
	key, value     []byte
	headers        []header
}

// parseRecords walks count records v2 (varint-length-prefixed fields).
func parseRecords(b []byte, count int32) ([]record, error) {
	out := make([]record, 0, max(count, 0))
	p := 0
	varint := func() (int64, error) {
		v, n := binary.Varint(b[p:])
		if n <= 0 {
			return 0, fmt.Errorf("bad varint at record byte %d", p)
		}
		p += n
		return v, nil
	}
	bytesField := func() ([]byte, error) {
		l, err := varint()
		if err != nil {
			return nil, err
		}
		if l < 0 {
			return nil, nil
		}
		if l > int64(len(b)-p) {
			return nil, fmt.Errorf("field of %d bytes runs past the records at byte %d", l, p)
		}
		v := b[p : p+int(l)]
		p += int(l)
		return v, nil
	}
	for i := int32(0); i < count; i++ {
		l, err := varint()
		if err != nil {
			return nil, fmt.Errorf("record %d: %w", i, err)
		}
		end := p + int(l)
		if l < 1 || end > len(b) {
			return nil, fmt.Errorf("record %d: length %d runs past the records", i, l)
		}
		p++ // attributes
		var r record
		if r.timestampDelta, err = varint(); err != nil {
			return nil, fmt.Errorf("record %d: %w", i, err)
		}
		od, err := varint()
		if err != nil {
			return nil, fmt.Errorf("record %d: %w", i, err)
		}
		r.offsetDelta = int32(od)
		if r.key, err = bytesField(); err != nil {
			return nil, fmt.Errorf("record %d key: %w", i, err)
		}
		if r.value, err = bytesField(); err != nil {
			return nil, fmt.Errorf("record %d value: %w", i, err)
		}
		nh, err := varint()
		if err != nil {
			return nil, fmt.Errorf("record %d: %w", i, err)
		}
		for j := int64(0); j < nh; j++ {
			k, err := bytesField()
			if err != nil {
				return nil, fmt.Errorf("record %d header %d: %w", i, j, err)
			}
			v, err := bytesField()
			if err != nil {
				return nil, fmt.Errorf("record %d header %d: %w", i, j, err)
			}
			r.headers = append(r.headers, header{string(k), v})
		}
		if p != end {
			return nil, fmt.Errorf("record %d: length %d does not match its fields", i, l)
		}
		out = append(out, r)
	}
	if p != len(b) {
		return nil, fmt.Errorf("%d bytes after the last of %d records", len(b)-p, count)
	}
	return out, nil
}

// dumpOffsetIndex prints and checks <base>.index: 8-byte entries (relative
// offset int32, position int32). Kafka preallocates the active segment's
// index, so trailing all-zero entries end it.
func (d *dumper) dumpOffsetIndex(path string, base int64, locs []batchLoc) {
	b, err := os.ReadFile(path)
	name := filepath.Base(path)
	if os.IsNotExist(err) {
		fmt.Fprintf(d.out, "Offset index %s: missing (rebuilt by the broker on open)\n", name)
		return
	}
	if err != nil {
		d.problem("%s: %v", name, err)
		return
	}
	if len(b)%8 != 0 {
		d.problem("%s: size %d is not a multiple of 8", name, len(b))
		b = b[:len(b)/8*8]
	}
	byPos := map[int64]batchLoc{}
	for _, l := range locs {
		byPos[l.pos] = l
	}
	n := len(b) / 8
	used := n
	for i := 1; i < n; i++ {
		if binary.BigEndian.Uint64(b[i*8:]) == 0 {
			used = i
			break
		}
	}
	if n > 0 && binary.BigEndian.Uint64(b) == 0 && len(locs) == 0 {
		used = 0
	}
	fmt.Fprintf(d.out, "Offset index %s: %d entries", name, used)
	if used < n {
		fmt.Fprintf(d.out, " (+%d preallocated)", n-used)
	}
	fmt.Fprintln(d.out)
	prevRel, prevPos := int64(-1), int64(-1)
	for i := 0; i < used; i++ {
		rel := int64(int32(binary.BigEndian.Uint32(b[i*8:])))
		pos := int64(int32(binary.BigEndian.Uint32(b[i*8+4:])))
		if !d.noIndex {
			fmt.Fprintf(d.out, "  offset %d -> position %d\n", base+rel, pos)
		}
		if rel <= prevRel || pos <= prevPos {
			d.problem("%s: entry %d (offset %d, position %d) does not follow (offset %d, position %d)", name, i, base+rel, pos, base+prevRel, prevPos)
		}
		prevRel, prevPos = rel, pos
		l, ok := byPos[pos]
		switch {
		case !ok:
			d.problem("%s: entry %d (offset %d) points at position %d, where no batch starts", name, i, base+rel, pos)
		case l.lastOffset < base+rel:
			d.problem("%s: entry %d says offset %d is at position %d, but that batch ends at offset %d", name, i, base+rel, pos, l.lastOffset)
		}
	}
}

// dumpTimeIndex prints and checks <base>.timeindex: 12-byte entries
// (timestamp int64, relative offset int32).
func (d *dumper) dumpTimeIndex(path string, base int64, locs []batchLoc) {
	b, err := os.ReadFile(path)
	name := filepath.Base(path)
	if os.IsNotExist(err) {
		fmt.Fprintf(d.out, "Time index %s: missing (rebuilt by the broker on open)\n", name)
		return
	}
	if err != nil {
		d.problem("%s: %v", name, err)
		return
	}
	if len(b)%12 != 0 {
		d.problem("%s: size %d is not a multiple of 12", name, len(b))
		b = b[:len(b)/12*12]
	}
	n := len(b) / 12
	used := n
	for i := 0; i < n; i++ {
		if allZero(b[i*12 : i*12+12]) {
			used = i
			break
		}
	}
	fmt.Fprintf(d.out, "Time index %s: %d entries", name, used)
	if used < n {
		fmt.Fprintf(d.out, " (+%d preallocated)", n-used)
	}
	fmt.Fprintln(d.out)
	var lastOffset int64 = -1
	if len(locs) > 0 {
		lastOffset = locs[len(locs)-1].lastOffset
	}
	prevTs, prevRel := int64(-1<<63), int64(-1)
	for i := 0; i < used; i++ {
		ts := int64(binary.BigEndian.Uint64(b[i*12:]))
		rel := int64(int32(binary.BigEndian.Uint32(b[i*12+8:])))
		if !d.noIndex {
			fmt.Fprintf(d.out, "  timestamp %s (%d) -> offset %d\n", fmtTs(ts), ts, base+rel)
		}
		if ts < prevTs || rel < prevRel {
			d.problem("%s: entry %d (timestamp %d, offset %d) goes back from (timestamp %d, offset %d)", name, i, ts, base+rel, prevTs, base+prevRel)
		}
		if base+rel > lastOffset && len(locs) > 0 {
			d.problem("%s: entry %d points at offset %d, past the segment's last offset %d", name, i, base+rel, lastOffset)
		}
		prevTs, prevRel = ts, rel
	}
}

// Producer snapshot (<offset>.snapshot, version 1), big-endian:
// version int16 | crc uint32 (CRC32C of the rest) | count int32 | count x
// {producerId int64, epoch int16, lastSequence int32, lastOffset int64,
// offsetDelta int32, timestamp int64, coordinatorEpoch int32,
// currentTxnFirstOffset int64}. ringbroker writes one entry per retained
// batch of a producer, oldest first (nvme.AppendProducerSnapshot); the last
// entry of a producer id is its state as Kafka reads it.
const snapshotEntrySize = 8 + 2 + 4 + 8 + 4 + 8 + 4 + 8

func (d *dumper) dumpSnapshots(dir string) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		d.problem("cannot list %s: %v", dir, err)
		return
	}
	for _, e := range ents {
		stem, ok := strings.CutSuffix(e.Name(), ".snapshot")
		if !ok || len(stem) != 20 {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			d.problem("%s: %v", e.Name(), err)
			continue
		}
		d.dumpSnapshot(e.Name(), b)
	}
}

func (d *dumper) dumpSnapshot(name string, b []byte) {
	be := binary.BigEndian
	if len(b) < 10 {
		d.problem("%s: %d bytes, too short for a producer snapshot", name, len(b))
		return
	}
	if v := int16(be.Uint16(b)); v != 1 {
		d.problem("%s: producer snapshot version %d, want 1", name, v)
		return
	}
	if got, want := nvme.CRC32C(b[6:]), be.Uint32(b[2:]); got != want {
		d.problem("%s: producer snapshot CRC32C mismatch: stored %#08x, computed %#08x", name, want, got)
		return
	}
	n := int64(int32(be.Uint32(b[6:])))
	if n < 0 || int64(len(b)-10) != n*snapshotEntrySize {
		d.problem("%s: %d producer entries do not fill %d bytes", name, n, len(b))
		return
	}
	ids := map[int64]bool{}
	for p := b[10:]; len(p) >= snapshotEntrySize; p = p[snapshotEntrySize:] {
		ids[int64(be.Uint64(p))] = true
	}
	fmt.Fprintf(d.out, "\nProducer snapshot %s: %d producers, %d entries (one per retained batch), crc ok\n", name, len(ids), n)
	for p := b[10:]; len(p) >= snapshotEntrySize; p = p[snapshotEntrySize:] {
		fmt.Fprintf(d.out, "  producer %d epoch %d last sequence %d last offset %d offset delta %d timestamp %s coordinator epoch %d txn first offset %d\n",
			int64(be.Uint64(p)), int16(be.Uint16(p[8:])), int32(be.Uint32(p[10:])), int64(be.Uint64(p[14:])),
			int32(be.Uint32(p[22:])), fmtTs(int64(be.Uint64(p[26:]))), int32(be.Uint32(p[34:])), int64(be.Uint64(p[38:])))
	}
}
