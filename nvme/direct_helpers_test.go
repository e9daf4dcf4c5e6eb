package nvme

// activeFileSize is the size the active segment's file has on disk when it
// holds size bytes of data: segment.bytes with Preallocate; in direct mode
// a chunk past the data in whole 1 MiB blocks, at most segment.bytes (but
// never less than the data); else the data.
func activeFileSize(o Options, size int64) int64 {
	c := o.withDefaults()
	switch {
	case o.Preallocate:
		return c.SegmentBytes
	case o.IOMode == IOModeDirect:
		n := roundUp(size+c.PreallocateChunk, DefaultCacheBlockBytes)
		return max(min(n, c.SegmentBytes), size)
	}
	return size
}
