package config

import (
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"
)

// ParseConnOverrides parses max.connections.per.ip.overrides:
// "address:count,address:count", addresses as IPv4 or IPv6 literals (an
// IPv6 one in brackets, or the count after its last colon).
func ParseConnOverrides(v string) (map[string]int32, error) {
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

// RemoteIP is the address part of a peer's host:port, normalised as the
// overrides' keys are ("" when it does not parse).
func RemoteIP(remote string) string {
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
