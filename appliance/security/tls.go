package security

import (
	"crypto/tls"
	"fmt"
	"net"
	"time"

	"github.com/ringbroker/ringbroker/appliance/config"
)

// TLS connections (listeners of security protocol SSL or SASL_SSL,
// config.ListenerTLS). The broker serves them on the goroutine path under
// both io.engine values: the uring engine hands a TLS listener's
// connections to ServeConn (ioring.UringOptions.Netpoll) instead of its
// ring, crypto/tls wraps the accepted net.Conn (ServerTLS), and
// HandshakeTLS runs before the first request frame is read. Fetch answers
// on such a connection are copied through the TLS writer (the connection
// has no raw socket, so the broker's sendfile(2) path falls back to
// copying): zero-copy does not apply to TLS. This keeps every engine's
// ring free of TLS record state; encrypting in user space before a send
// SQE, or kTLS, would keep TLS on the ring and is not done.

// TLSHandshakeTimeout bounds a TLS handshake (HandshakeTLS).
const TLSHandshakeTimeout = 10 * time.Second

// ServerTLS wraps nc in a TLS server connection when lis is a TLS
// listener; other connections are returned as they are.
func ServerTLS(lis *config.Listener, nc net.Conn) net.Conn {
	if lis == nil || lis.TLS == nil {
		return nc
	}
	return tls.Server(nc, lis.TLS.Config)
}

// HandshakeTLS completes the handshake of nc when ServerTLS wrapped it and
// returns the connection's principal from its client certificate
// ("User:<mapped subject>", ssl.principal.mapping.rules), "" without one
// (User:ANONYMOUS until SASL authenticates, on SASL_SSL). An error (a
// failed or timed-out handshake, a refused or missing client certificate,
// no mapping rule that applies) means the connection must be closed.
func HandshakeTLS(lis *config.Listener, nc net.Conn) (string, error) {
	tc, ok := nc.(*tls.Conn)
	if !ok {
		return "", nil
	}
	_ = tc.SetDeadline(time.Now().Add(TLSHandshakeTimeout))
	if err := tc.Handshake(); err != nil {
		return "", fmt.Errorf("TLS handshake on listener %s failed: %w", lis.Name, err)
	}
	_ = tc.SetDeadline(time.Time{})
	name, ok, err := lis.TLS.Principal(tc.ConnectionState())
	if err != nil {
		return "", fmt.Errorf("client certificate on listener %s: %w", lis.Name, err)
	}
	if !ok {
		return "", nil
	}
	return "User:" + name, nil
}
