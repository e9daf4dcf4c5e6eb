package appliance

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// lockLogDir takes an exclusive flock on <log.dirs>/.lock, as Kafka does,
// so a second broker on the same directory refuses to start instead of
// interleaving writes into the same segments. The lock lives as long as the
// process holds the file open (released by Close, or by the kernel on exit).
func (b *Broker) lockLogDir() error {
	path := filepath.Join(b.cfg.LogDir, ".lock")
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return fmt.Errorf("cannot open %q: %w", path, err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			return fmt.Errorf("cannot lock %q: log.dirs %q is in use by another broker process", path, b.cfg.LogDir)
		}
		return fmt.Errorf("cannot lock %q: %w", path, err)
	}
	b.store.lockFile = f
	return nil
}

func (b *Broker) unlockLogDir() {
	if b.store.lockFile != nil {
		_ = unix.Flock(int(b.store.lockFile.Fd()), unix.LOCK_UN)
		b.store.lockFile.Close()
		b.store.lockFile = nil
	}
}

// probeListenAddr fails when another process already listens on addr.
// The shards' listeners use SO_REUSEPORT, which would otherwise let a second
// broker of the same user bind the same port and take half the connections.
// A plain bind (no SO_REUSEPORT) fails with EADDRINUSE on a port that has
// any listener. Port 0 is not probed.
//
// A listener of a process that was just killed can outlive it briefly (the
// kernel tears an io_uring instance down asynchronously, and its accept
// keeps the socket listening), and a socket left in a SO_REUSEPORT group
// would take connections nobody serves: so a busy port is retried for up to
// wait before giving up.
func probeListenAddr(addr string, wait time.Duration, logger *slog.Logger) error {
	_, port, err := net.SplitHostPort(addr)
	if err != nil || port == "0" {
		return nil
	}
	deadline := time.Now().Add(wait)
	logged := false
	for {
		ln, err := net.Listen("tcp", addr)
		if err == nil {
			return ln.Close()
		}
		if !errors.Is(err, syscall.EADDRINUSE) {
			return fmt.Errorf("cannot listen on %s: %w", addr, err)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("cannot listen on %s: the address is in use by another process", addr)
		}
		if !logged {
			logger.Warn("listener address in use, waiting for it to be released", "addr", addr, "wait", wait.String())
			logged = true
		}
		time.Sleep(100 * time.Millisecond)
	}
}
