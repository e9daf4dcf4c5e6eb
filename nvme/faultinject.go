package nvme

import (
	"log/slog"
	"os"
)

// NewGroupCommitterFunc is NewGroupCommitter with sync in place of
// fdatasync(2): tests inject fsync failures (EIO) with it to check that a
// failed sync never acknowledges a batch.
func NewGroupCommitterFunc(logger *slog.Logger, sync func(*os.File) error) *GroupCommitter {
	return newGroupCommitter(logger, sync)
}
