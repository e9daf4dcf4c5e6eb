package harness

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// NodeConfig is what the harness writes into one node's server.properties.
// Properties renders it; the make cluster tool writes the same file.
type NodeConfig struct {
	ID             int32    // node.id
	Host           string   // the address every listener binds and advertises
	Port           int      // the PLAINTEXT (client and inter-broker) listener's port
	ControllerPort int      // the CONTROLLER listener's port; 0 on a node without the controller role in a quorum
	MetricsPort    int      // metrics.listener's port; 0 disables metrics (metrics.listener=none)
	LogDirs        []string // log.dirs; the first holds the metadata log
	// Roles is process.roles: "broker,controller" when empty.
	Roles string
	// Voters is controller.quorum.voters (VotersString); empty for a
	// standalone node, which formats itself and is a one-node cluster.
	Voters string
	// Props are more properties; they win over the ones above.
	Props map[string]string
}

// Addr is the node's client address, host:port.
func (c NodeConfig) Addr() string { return net.JoinHostPort(c.Host, strconv.Itoa(c.Port)) }

// ControllerAddr is the node's controller listener address, host:port.
func (c NodeConfig) ControllerAddr() string {
	return net.JoinHostPort(c.Host, strconv.Itoa(c.ControllerPort))
}

// PropertyMap is the node's configuration as key/value pairs.
func (c NodeConfig) PropertyMap() map[string]string {
	roles := c.Roles
	if roles == "" {
		roles = "broker,controller"
	}
	p := map[string]string{
		"node.id":              strconv.Itoa(int(c.ID)),
		"process.roles":        roles,
		"log.dirs":             strings.Join(c.LogDirs, ","),
		"advertised.listeners": "PLAINTEXT://" + c.Addr(),
		"listeners":            "PLAINTEXT://" + c.Addr(),
		"metrics.listener":     "none",
	}
	if c.MetricsPort != 0 {
		p["metrics.listener"] = net.JoinHostPort(c.Host, strconv.Itoa(c.MetricsPort))
	}
	if c.Voters != "" {
		p["controller.quorum.voters"] = c.Voters
		p["controller.listener.names"] = "CONTROLLER"
		p["inter.broker.listener.name"] = "PLAINTEXT"
		if strings.Contains(roles, "controller") && c.ControllerPort != 0 {
			p["listeners"] += ",CONTROLLER://" + c.ControllerAddr()
		}
	}
	maps.Copy(p, c.Props)
	return p
}

// Properties renders the node's server.properties, keys sorted.
func (c NodeConfig) Properties() string {
	p := c.PropertyMap()
	var b strings.Builder
	fmt.Fprintf(&b, "# written by the ringbroker cluster harness for node %d\n", c.ID)
	for _, k := range slices.Sorted(maps.Keys(p)) {
		fmt.Fprintf(&b, "%s=%s\n", k, p[k])
	}
	return b.String()
}

// VotersString is controller.quorum.voters for the controllers among
// nodes: id@host:controllerPort, in order, comma-separated.
func VotersString(nodes []NodeConfig) string {
	var vs []string
	for _, n := range nodes {
		if n.ControllerPort != 0 {
			vs = append(vs, fmt.Sprintf("%d@%s", n.ID, n.ControllerAddr()))
		}
	}
	return strings.Join(vs, ",")
}

// LoopbackHosts returns n loopback addresses, 127.0.0.1 to 127.0.0.n. Linux
// routes all of 127.0.0.0/8 to lo, so each can be bound without setup; a
// client connecting to 127.0.0.2 without binding gets 127.0.0.1 as its
// source address.
func LoopbackHosts(n int) []string {
	hs := make([]string, n)
	for i := range hs {
		hs[i] = fmt.Sprintf("127.0.0.%d", i+1)
	}
	return hs
}

// Ports below the default ephemeral range (32768-60999): outgoing
// connections never take them, so a port stays free across a node restart.
const (
	portLow  = 20000
	portHigh = 32000
)

// handedOut is every host:port FreePort returned in this process, so that
// two nodes never get the same one.
var handedOut = struct {
	sync.Mutex
	m map[string]bool
}{m: map[string]bool{}}

// FreePort returns a TCP port that host (a local address) could bind a
// moment ago, from 20000-31999, below Linux's ephemeral range.
func FreePort(t testing.TB, host string) int {
	t.Helper()
	var lastErr error
	for range 200 {
		p := portLow + rand.IntN(portHigh-portLow)
		key := net.JoinHostPort(host, strconv.Itoa(p))
		handedOut.Lock()
		taken := handedOut.m[key]
		handedOut.m[key] = true
		handedOut.Unlock()
		if taken {
			continue
		}
		ln, err := net.Listen("tcp", net.JoinHostPort(host, strconv.Itoa(p)))
		if err != nil {
			lastErr = err
			continue
		}
		ln.Close()
		return p
	}
	t.Fatalf("harness: no free port on %s: %v", host, lastErr)
	return 0
}
