package appliance

import (
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"
)

// Connection caps (Kafka's max.connections, max.connections.per.ip and
// max.connections.per.ip.overrides; KIP-402 for the broker-wide one). Both
// engines admit a connection as they register it (ServeConn,
// OpenRingConn) and count it out when it ends. Kafka closes a connection
// over its address's cap at once, as here; past max.connections Kafka
// stops accepting until one closes, where this broker accepts and closes
// the newcomer (the effect for a client is a refused connection either
// way, and the kernel's accept queue does not fill with waiting peers).

// parseConnOverrides parses max.connections.per.ip.overrides:
// "address:count,address:count", addresses as IPv4 or IPv6 literals (an
// IPv6 one in brackets, or the count after its last colon).
func parseConnOverrides(v string) (map[string]int32, error) {
	v = strings.TrimSpace(v)
	if v == "" {
		return nil, nil
	}
	out := map[string]int32{}
	for _, item := range strings.Split(v, ",") {
		item = strings.TrimSpace(item)
		i := strings.LastIndexByte(item, ':')
		if i <= 0 {
			return nil, fmt.Errorf("max.connections.per.ip.overrides: %q is not address:count", item)
		}
		host := strings.Trim(item[:i], "[]")
		ip, err := netip.ParseAddr(host)
		if err != nil {
			return nil, fmt.Errorf("max.connections.per.ip.overrides: %q: %w (addresses only, not host names)", item, err)
		}
		n, err := strconv.ParseInt(item[i+1:], 10, 32)
		if err != nil || n < 0 {
			return nil, fmt.Errorf("max.connections.per.ip.overrides: %q: the count must be an int32 >= 0", item)
		}
		out[ip.Unmap().String()] = int32(n)
	}
	return out, nil
}

// remoteIP is the address part of a peer's host:port, normalised as the
// overrides' keys are ("" when it does not parse).
func remoteIP(remote string) string {
	host, _, err := net.SplitHostPort(remote)
	if err != nil {
		return ""
	}
	ip, err := netip.ParseAddr(host)
	if err != nil {
		return ""
	}
	return ip.Unmap().String()
}

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
