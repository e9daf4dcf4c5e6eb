package ioring

import (
	"fmt"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"
)

// BufRing is a provided buffer ring (IORING_REGISTER_PBUF_RING, Linux 5.19):
// a ring of buffer descriptors shared with the kernel, from which recv ops
// with IOSQE_BUFFER_SELECT pick a buffer when data arrives, so idle
// connections hold no buffer. The CQE names the buffer it used
// (CQE.BufferID); the owner reads it with Buf and gives it back with
// Recycle. When the ring is empty recvs fail with -ENOBUFS (a multishot
// recv ends): recycle and re-arm.
//
// Layout (struct io_uring_buf_ring): entries of struct io_uring_buf {addr,
// len, bid, resv}; the 16-bit tail overlays entry 0's resv field. We write
// entries and the tail, the kernel keeps its head private and only reads.
// Both the descriptor ring and the buffers are anonymous mmap memory, outside
// the Go heap, so the GC never scans or frees them.
//
// A BufRing belongs to its Ring's goroutine.
type BufRing struct {
	r        *Ring
	group    uint16
	entries  uint32
	mask     uint16
	tail     uint16 // local tail; published by Publish
	bufSize  int
	ringMem  []byte
	data     []byte
	ents     []bufRingEntry
	tailWord *uint32 // entry 0's bid (low half) and the ring tail (high half)
}

// RegisterBufRing creates buffer group group with entries buffers (a power
// of two, at most 32768) of bufSize bytes each, registers it
// (IORING_REGISTER_PBUF_RING) and provides every buffer. Errors: EEXIST
// (group taken), EINVAL, ENOMEM.
func (r *Ring) RegisterBufRing(group uint16, entries uint32, bufSize int) (*BufRing, error) {
	if r.closed {
		return nil, ErrClosed
	}
	if entries == 0 || entries > maxBufRingEntries || entries&(entries-1) != 0 {
		return nil, fmt.Errorf("cannot create buffer ring %d with %d entries: want a power of two in 1..%d", group, entries, maxBufRingEntries)
	}
	if bufSize <= 0 || bufSize > 1<<31-1 {
		return nil, fmt.Errorf("cannot create buffer ring %d with %d-byte buffers", group, bufSize)
	}
	b := &BufRing{r: r, group: group, entries: entries, mask: uint16(entries - 1), bufSize: bufSize}
	const prot = unix.PROT_READ | unix.PROT_WRITE
	const flags = unix.MAP_PRIVATE | unix.MAP_ANONYMOUS | unix.MAP_POPULATE
	var err error
	// mmap memory is page aligned, as the kernel requires of ring_addr.
	b.ringMem, err = unix.Mmap(-1, 0, int(entries)*sizeofBufRingEntry, prot, flags)
	if err != nil {
		return nil, fmt.Errorf("cannot map buffer ring %d descriptors: %w", group, err)
	}
	b.data, err = unix.Mmap(-1, 0, int(entries)*bufSize, prot, flags)
	if err != nil {
		b.free()
		return nil, fmt.Errorf("cannot map buffer ring %d buffers (%d x %d bytes): %w", group, entries, bufSize, err)
	}
	b.ents = unsafe.Slice((*bufRingEntry)(unsafe.Pointer(&b.ringMem[0])), entries)
	b.tailWord = (*uint32)(unsafe.Pointer(&b.ringMem[12]))
	reg := bufReg{ringAddr: uint64(uintptr(unsafe.Pointer(&b.ringMem[0]))), ringEntries: entries, bgid: group}
	if _, err := r.register(regPbufRing, unsafe.Pointer(&reg), 1); err != nil {
		b.free()
		return nil, fmt.Errorf("cannot register buffer ring %d (%d entries): %w", group, entries, err)
	}
	for i := uint32(0); i < entries; i++ {
		b.Add(uint16(i))
	}
	b.Publish()
	r.bufRings = append(r.bufRings, b)
	return b, nil
}

// Group is the buffer group id to put in recv SQEs (SQE.BufIndex).
func (b *BufRing) Group() uint16 { return b.group }

// Entries is the number of buffers.
func (b *BufRing) Entries() int { return int(b.entries) }

// BufSize is the size of each buffer in bytes.
func (b *BufRing) BufSize() int { return b.bufSize }

// Buf returns the first n bytes of buffer id (n is the CQE's res). The
// slice aliases the buffer: copy out what must outlive Recycle.
func (b *BufRing) Buf(id uint16, n int) []byte {
	off := int(id) * b.bufSize
	return b.data[off : off+n : off+b.bufSize]
}

// Add queues buffer id for the kernel without publishing it; call Publish
// after a batch of Adds.
func (b *BufRing) Add(id uint16) {
	e := &b.ents[b.tail&b.mask]
	e.addr = uint64(uintptr(unsafe.Pointer(&b.data[int(id)*b.bufSize])))
	e.len = uint32(b.bufSize)
	e.bid = id
	b.tail++
}

// Publish makes the added buffers visible to the kernel with a
// store-release of the ring tail: the kernel must see the descriptors
// before the tail that covers them. sync/atomic has no 16-bit store, so it
// stores the aligned 32-bit word holding entry 0's bid (which we own and
// rewrite unchanged) and the tail (little-endian: bid low, tail high).
func (b *BufRing) Publish() {
	atomic.StoreUint32(b.tailWord, uint32(b.ents[0].bid)|uint32(b.tail)<<16)
}

// Recycle gives buffer id back to the kernel (Add then Publish). Call it
// once per CQE that carried the id, after the data was consumed.
func (b *BufRing) Recycle(id uint16) {
	b.Add(id)
	b.Publish()
}

// Head asks the kernel for its head (IORING_REGISTER_PBUF_STATUS, Linux
// 6.8): the next buffer it will pick. Tail-Head is the number of buffers
// the kernel still has.
func (b *BufRing) Head() (uint16, error) {
	var st struct {
		group, head uint32
		resv        [8]uint32
	}
	st.group = uint32(b.group)
	if _, err := b.r.register(regPbufStatus, unsafe.Pointer(&st), 1); err != nil {
		return 0, fmt.Errorf("cannot read head of buffer ring %d: %w", b.group, err)
	}
	return uint16(st.head), nil
}

// Tail is the published tail.
func (b *BufRing) Tail() uint16 { return b.tail }

// Close unregisters the group (IORING_UNREGISTER_PBUF_RING) and unmaps its
// memory. No recv may still use the group. Ring.Close frees rings that
// were not closed.
func (b *BufRing) Close() error {
	if b.ringMem == nil {
		return nil
	}
	var err error
	if !b.r.closed {
		reg := bufReg{bgid: b.group}
		if _, rerr := b.r.register(unregPbufRing, unsafe.Pointer(&reg), 1); rerr != nil {
			err = fmt.Errorf("cannot unregister buffer ring %d: %w", b.group, rerr)
		}
	}
	for i, x := range b.r.bufRings {
		if x == b {
			b.r.bufRings = append(b.r.bufRings[:i], b.r.bufRings[i+1:]...)
			break
		}
	}
	b.free()
	return err
}

func (b *BufRing) free() {
	if b.data != nil {
		_ = unix.Munmap(b.data)
		b.data = nil
	}
	if b.ringMem != nil {
		_ = unix.Munmap(b.ringMem)
		b.ringMem = nil
	}
	b.ents, b.tailWord = nil, nil
}
