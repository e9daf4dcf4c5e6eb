package appliance

import (
	"net"
	"strings"
)

// clientHost is the client's address as Kafka reports it ("/127.0.0.1").
func clientHost(remote string) string {
	host, _, err := net.SplitHostPort(remote)
	if err != nil {
		host = remote
	}
	return "/" + strings.Trim(host, "[]")
}

func strPtr(s string) *string { return &s }
