package nvme

import "path/filepath"

// WriteFileAtomic writes data to path through a temporary file
// (path+".tmp"), fsync and rename, then fsyncs the directory, so readers
// see the old or the new content, never a torn one. A failed write removes
// the temporary file. Checkpoint files above the log (the cleaner's, the
// log start offsets, meta.properties) are written with it.
func WriteFileAtomic(path string, data []byte) error {
	return writeFileAtomic(filepath.Dir(path), filepath.Base(path), data)
}
