package nvme

// recentBatches is how many of its last appended batches the active
// segment remembers (position, size, base and last offset), so that a
// fetch near the log end finds and walks its batches without reading their
// headers back from the file: each header read is a pread(2) on the
// shard's loop. At 10 MB/s on 16 partitions (the engines bench) fetches
// read ~2 headers per request that way; a tailing consumer asks for the
// few batches appended since its last fetch, and a consumer further behind
// finds its batches through the offset index and the file as before.
// 16 entries cost 512 bytes per active segment.
const recentBatches = 16

// recentRing is the active segment's memory of its last batches, oldest
// first from head; the batches are contiguous in the .log (each starts
// where the one before ends). Owned, like the segment, by the partition's
// shard.
type recentRing struct {
	b    [recentBatches]batchRef
	head int // index of the oldest entry
	n    int
}

// at returns entry i, 0 being the oldest.
func (q *recentRing) at(i int) *batchRef { return &q.b[(q.head+i)%recentBatches] }

// add remembers r, forgetting the oldest entry when full; a batch that
// does not start where the newest one ends (a log rewritten under us)
// restarts the memory from r.
func (q *recentRing) add(r batchRef) {
	if q.n > 0 {
		if last := q.at(q.n - 1); last.pos+last.size != r.pos {
			q.n = 0
		}
	}
	if q.n < recentBatches {
		q.b[(q.head+q.n)%recentBatches] = r
		q.n++
		return
	}
	q.b[q.head] = r
	q.head = (q.head + 1) % recentBatches
}

// find returns the position of the first batch whose last offset is >=
// offset when the memory can tell: offset is at or past the oldest
// remembered batch's base offset (every batch before it ends below
// offset), and some remembered batch ends at or past offset.
func (q *recentRing) find(offset int64) (int64, bool) {
	if q.n == 0 || offset < q.at(0).baseOffset {
		return 0, false
	}
	for i := 0; i < q.n; i++ {
		if r := q.at(i); r.lastOf >= offset {
			return r.pos, true
		}
	}
	return 0, false
}

// get returns the remembered batch that starts at pos.
func (q *recentRing) get(pos int64) (batchRef, bool) {
	if q.n == 0 || pos < q.at(0).pos || pos > q.at(q.n-1).pos {
		return batchRef{}, false
	}
	for i := q.n - 1; i >= 0; i-- {
		r := q.at(i)
		if r.pos == pos {
			return *r, true
		}
		if r.pos < pos {
			break
		}
	}
	return batchRef{}, false
}
