package nvme

// activeFileSize is the size the active segment's file has on disk when it
// holds size bytes of data: segment.bytes when the log preallocates.
func activeFileSize(o Options, size int64) int64 {
	if o.IOMode == IOModeDirect || o.Preallocate {
		c := o.withDefaults()
		return c.SegmentBytes
	}
	return size
}
