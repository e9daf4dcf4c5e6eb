package nvme

// activeFileSize is the size the active segment's file has on disk when a
// log reopened with o holds size bytes of data in it: segment.bytes with
// Preallocate; in direct mode, with zero fill (the default), its tail block
// (whole 1 MiB blocks; a chunk for an empty segment), without, a chunk
// past the data in whole 1 MiB blocks, at most segment.bytes (but never
// less than the data); else the data.
func activeFileSize(o Options, size int64) int64 {
	c := o.withDefaults()
	switch {
	case o.Preallocate:
		return c.SegmentBytes
	case o.IOMode == IOModeDirect && !o.PreallocateUnwritten && size > 0:
		return max(roundUp(size, DefaultCacheBlockBytes), size)
	case o.IOMode == IOModeDirect:
		n := roundUp(size+c.PreallocateChunk, DefaultCacheBlockBytes)
		return max(min(n, c.SegmentBytes), size)
	}
	return size
}
