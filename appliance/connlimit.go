package appliance

import (
	"fmt"

	"github.com/ringbroker/ringbroker/appliance/config"
)

// remoteIP is config.RemoteIP.
var remoteIP = config.RemoteIP

// Connection caps (Kafka's max.connections, max.connections.per.ip and
// max.connections.per.ip.overrides; KIP-402 for the broker-wide one). Both
// engines admit a connection as they register it (ServeConn,
// OpenRingConn) and count it out when it ends. Kafka closes a connection
// over its address's cap at once, as here; past max.connections Kafka
// stops accepting until one closes, where this broker accepts and closes
// the newcomer (the effect for a client is a refused connection either
// way, and the kernel's accept queue does not fill with waiting peers).

// admitLocked counts a new connection from ip in, or says why it may not
// be (b.front.mu held).
func (b *Broker) admitLocked(ip string) (reason string) {
	if int64(len(b.front.conns)) >= int64(b.cfg.MaxConnections) {
		b.metrics.ConnRejected("max_connections")
		return fmt.Sprintf("the broker has the configured maximum of %d connections (max.connections)", b.cfg.MaxConnections)
	}
	limit := b.cfg.MaxConnectionsPerIP
	if n, ok := b.cfg.MaxConnectionsPerIPOverrides[ip]; ok {
		limit = n
	}
	if b.front.perIP[ip] >= limit {
		b.metrics.ConnRejected("max_connections_per_ip")
		return fmt.Sprintf("address %s already has the configured maximum of %d connections (max.connections.per.ip)", ip, limit)
	}
	if b.front.perIP == nil {
		b.front.perIP = map[string]int32{}
	}
	b.front.perIP[ip]++
	return ""
}

// releaseLocked counts a connection from ip out (b.front.mu held).
func (b *Broker) releaseLocked(ip string) {
	if n := b.front.perIP[ip]; n > 1 {
		b.front.perIP[ip] = n - 1
	} else {
		delete(b.front.perIP, ip)
	}
}
