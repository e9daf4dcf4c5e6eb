package main

import (
	"fmt"
	"net"
	"os"
)

// sdNotify sends state ("READY=1", "STOPPING=1", "STATUS=...") to systemd
// over the datagram socket named by $NOTIFY_SOCKET (sd_notify(3)), as a
// Type=notify unit expects. Without $NOTIFY_SOCKET it does nothing. A name
// starting with '@' is in the abstract namespace, which the net package
// maps itself.
func sdNotify(state string) error {
	addr := os.Getenv("NOTIFY_SOCKET")
	if addr == "" {
		return nil
	}
	if addr[0] != '/' && addr[0] != '@' {
		return fmt.Errorf("cannot notify systemd: NOTIFY_SOCKET=%q is not a unix socket path", addr)
	}
	c, err := net.DialUnix("unixgram", nil, &net.UnixAddr{Name: addr, Net: "unixgram"})
	if err != nil {
		return fmt.Errorf("cannot notify systemd at %s: %w", addr, err)
	}
	defer c.Close()
	if _, err := c.Write([]byte(state)); err != nil {
		return fmt.Errorf("cannot notify systemd at %s: %w", addr, err)
	}
	return nil
}
