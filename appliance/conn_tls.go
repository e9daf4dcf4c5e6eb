package appliance

import (
	"crypto/tls"
	"fmt"
	"net"
	"time"
)

// TLS listeners (SSL, SASL_SSL; config.ListenerTLS) are served on the
// goroutine path under both engines (the uring engine hands their
// connections to ServeConn, ioring.UringOptions.Netpoll): crypto/tls
// over the accepted net.Conn, so fetch answers are copied through the
// TLS writer instead of sendfile(2) (conn.sendChunk falls back to
// copyChunk for a connection without a raw socket).

// tlsHandshakeTimeout bounds a TLS handshake.
const tlsHandshakeTimeout = 10 * time.Second

// wrapTLS returns nc wrapped in a TLS server connection on a TLS listener.
func wrapTLS(lis *Listener, nc net.Conn) net.Conn {
	if lis == nil || lis.TLS == nil {
		return nc
	}
	return tls.Server(nc, lis.TLS.Config)
}

// handshakeTLS completes a TLS connection's handshake and takes its
// principal from the client certificate (ssl.principal.mapping.rules);
// nil for other connections.
func (c *conn) handshakeTLS() error {
	tc, ok := c.nc.(*tls.Conn)
	if !ok {
		return nil
	}
	_ = tc.SetDeadline(time.Now().Add(tlsHandshakeTimeout))
	if err := tc.Handshake(); err != nil {
		return fmt.Errorf("TLS handshake on listener %s failed: %w", c.lis.Name, err)
	}
	_ = tc.SetDeadline(time.Time{})
	name, ok, err := c.lis.TLS.Principal(tc.ConnectionState())
	if err != nil {
		return fmt.Errorf("client certificate on listener %s: %w", c.lis.Name, err)
	}
	if ok {
		c.user = "User:" + name
	}
	return nil
}
