package main

import (
	"net"
	"path/filepath"
	"testing"
	"time"
)

func TestSdNotify(t *testing.T) {
	for _, name := range []string{filepath.Join(t.TempDir(), "notify.sock"), "@ringbroker-test-" + t.Name()} {
		ln, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: name, Net: "unixgram"})
		if err != nil {
			t.Fatalf("listen %s: %v", name, err)
		}
		t.Setenv("NOTIFY_SOCKET", name)
		if err := sdNotify("READY=1\nSTATUS=serving"); err != nil {
			t.Fatalf("sdNotify via %s: %v", name, err)
		}
		buf := make([]byte, 256)
		ln.SetReadDeadline(time.Now().Add(5 * time.Second))
		n, _, err := ln.ReadFrom(buf)
		if err != nil {
			t.Fatalf("read %s: %v", name, err)
		}
		if got := string(buf[:n]); got != "READY=1\nSTATUS=serving" {
			t.Errorf("systemd got %q", got)
		}
		ln.Close()
	}
	t.Setenv("NOTIFY_SOCKET", "")
	if err := sdNotify("READY=1"); err != nil {
		t.Errorf("without NOTIFY_SOCKET: %v, want nil", err)
	}
	t.Setenv("NOTIFY_SOCKET", "relative")
	if err := sdNotify("READY=1"); err == nil {
		t.Errorf("a relative NOTIFY_SOCKET must be refused")
	}
}
