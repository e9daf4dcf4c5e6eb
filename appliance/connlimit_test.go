package appliance

import (
	"encoding/binary"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/ringbroker/ringbroker/appliance/config"
	"github.com/ringbroker/ringbroker/internal/wait"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestParseConnOverrides(t *testing.T) {
	got, err := config.ParseConnOverrides(" 127.0.0.1:5, [::1]:7,::ffff:10.0.0.1:0 ")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 || got["127.0.0.1"] != 5 || got["::1"] != 7 || got["10.0.0.1"] != 0 {
		t.Fatalf("parsed %v", got)
	}
	if m, err := config.ParseConnOverrides(""); err != nil || m != nil {
		t.Fatalf("empty: %v %v", m, err)
	}
	for _, bad := range []string{"localhost:3", "127.0.0.1", "127.0.0.1:-1", "127.0.0.1:x", ":4", "1.2.3.4:99999999999"} {
		if _, err := config.ParseConnOverrides(bad); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
	if remoteIP("[::ffff:127.0.0.1]:4000") != "127.0.0.1" || remoteIP("127.0.0.1:9") != "127.0.0.1" || remoteIP("junk") != "" {
		t.Fatal("remoteIP")
	}
	for _, props := range []map[string]string{
		{"max.connections": "-1"},
		{"max.connections.per.ip": "-1"},
		{"max.connections.per.ip": "0"},
		{"max.connections.per.ip.overrides": "host.example:3"},
	} {
		props["log.dirs"] = t.TempDir()
		c, err := ConfigFromProperties(props)
		if err == nil {
			err = c.Validate()
		}
		if err == nil {
			t.Errorf("%v accepted", props)
		}
	}
}

// TestConnectionCaps: past max.connections.per.ip (or an address's
// override) or max.connections a new connection is closed at accept,
// without an answer, and counted; the ones admitted keep working, and a
// closed one frees its place, on both engines.
func TestConnectionCaps(t *testing.T) {
	for _, c := range []struct {
		name    string
		props   map[string]string
		allowed int
		reason  string
	}{
		{"per address", map[string]string{"max.connections.per.ip": "3"}, 3, "max_connections_per_ip"},
		{"override", map[string]string{"max.connections.per.ip": "1", "max.connections.per.ip.overrides": "127.0.0.1:4"}, 4, "max_connections_per_ip"},
		{"broker", map[string]string{"max.connections": "2"}, 2, "max_connections"},
	} {
		t.Run(c.name, func(t *testing.T) {
			onEngines(t, c.props, func(t *testing.T, f *allocFixture) {
				addr := f.b.Addr().String()
				open := []net.Conn{f.c.nc} // the fixture's client counts
				for len(open) < c.allowed {
					nc := dialAPIVersions(t, addr, true)
					defer nc.Close()
					open = append(open, nc)
				}
				for range 2 {
					dialAPIVersions(t, addr, false).Close()
				}
				if n := f.b.metrics.RejectedConnections(c.reason); n != 2 {
					t.Fatalf("%d connections counted as rejected for %s, want 2", n, c.reason)
				}
				for _, nc := range open[1:] { // still served
					apiVersionsOn(t, nc, true)
				}
				open[len(open)-1].Close()
				registered := func() int {
					f.b.front.mu.Lock()
					defer f.b.front.mu.Unlock()
					return len(f.b.front.conns)
				}
				if !wait.Until(5*time.Second, func() bool { return registered() < c.allowed }) {
					t.Fatalf("%d connections registered 5 s after one closed", registered())
				}
				dialAPIVersions(t, addr, true).Close()
			})
		})
	}
}

// dialAPIVersions connects and sends ApiVersions; with want it must be
// answered, else the connection must be closed without an answer.
func dialAPIVersions(t *testing.T, addr string, want bool) net.Conn {
	t.Helper()
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	apiVersionsOn(t, nc, want)
	return nc
}

func apiVersionsOn(t *testing.T, nc net.Conn, want bool) {
	t.Helper()
	nc.SetDeadline(time.Now().Add(5 * time.Second))
	defer nc.SetDeadline(time.Time{})
	_, err := nc.Write(frameOf(kmsg.NewPtrApiVersionsRequest(), 0, 77))
	var size [4]byte
	if err == nil {
		_, err = io.ReadFull(nc, size[:])
	}
	if err == nil {
		_, err = io.ReadFull(nc, make([]byte, binary.BigEndian.Uint32(size[:])))
	}
	switch {
	case want && err != nil:
		t.Fatalf("ApiVersions on an admitted connection: %v", err)
	case !want && err == nil:
		t.Fatal("a connection past the cap was answered")
	case !want && strings.Contains(err.Error(), "timeout"):
		t.Fatalf("a connection past the cap was left open: %v", err)
	}
}
