package harness

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

func TestNodeConfigProperties(t *testing.T) {
	nodes := []NodeConfig{
		{ID: 1, Host: "127.0.0.1", Port: 9092, ControllerPort: 9093, LogDirs: []string{"/d/1"}},
		{ID: 2, Host: "127.0.0.2", Port: 9092, ControllerPort: 9093, LogDirs: []string{"/d/2a", "/d/2b"}},
		{ID: 3, Host: "127.0.0.3", Port: 9092, Roles: "broker", LogDirs: []string{"/d/3"}},
	}
	voters := VotersString(nodes)
	if want := "1@127.0.0.1:9093,2@127.0.0.2:9093"; voters != want {
		t.Fatalf("VotersString = %q, want %q (broker-only nodes are not voters)", voters, want)
	}
	for i := range nodes {
		nodes[i].Voters = voters
	}
	nodes[1].MetricsPort = 9644
	nodes[1].Props = map[string]string{"broker.rack": "r2", "num.partitions": "12"}
	got := nodes[1].Properties()
	for _, line := range []string{
		"node.id=2", "process.roles=broker,controller", "log.dirs=/d/2a,/d/2b",
		"listeners=PLAINTEXT://127.0.0.2:9092,CONTROLLER://127.0.0.2:9093",
		"advertised.listeners=PLAINTEXT://127.0.0.2:9092",
		"controller.listener.names=CONTROLLER", "controller.quorum.voters=" + voters,
		"metrics.listener=127.0.0.2:9644", "broker.rack=r2", "num.partitions=12",
	} {
		if !strings.Contains(got, "\n"+line+"\n") {
			t.Errorf("properties of node 2 lack %q:\n%s", line, got)
		}
	}
	broker := nodes[2].PropertyMap()
	if broker["process.roles"] != "broker" || broker["listeners"] != "PLAINTEXT://127.0.0.3:9092" || broker["metrics.listener"] != "none" {
		t.Errorf("broker-only node: %v", broker)
	}
	alone := NodeConfig{ID: 1, Host: "127.0.0.1", Port: 1, ControllerPort: 2, LogDirs: []string{"/d"}}.PropertyMap()
	if _, ok := alone["controller.quorum.voters"]; ok || alone["listeners"] != "PLAINTEXT://127.0.0.1:1" {
		t.Errorf("standalone node: %v", alone)
	}
}

func TestFreePortDistinct(t *testing.T) {
	seen := map[string]bool{}
	for _, h := range LoopbackHosts(3) {
		for range 20 {
			p := FreePort(t, h)
			key := fmt.Sprintf("%s:%d", h, p)
			if p < portLow || p >= portHigh || seen[key] {
				t.Fatalf("FreePort(%s) = %d: outside [%d,%d) or handed out twice", h, p, portLow, portHigh)
			}
			seen[key] = true
		}
	}
}

func TestWaitFor(t *testing.T) {
	calls := 0
	d, err := WaitFor(context.Background(), 5*time.Second, time.Millisecond, func() error {
		calls++
		if calls < 3 {
			return errors.New("not yet")
		}
		return nil
	})
	if err != nil || calls != 3 || d <= 0 {
		t.Fatalf("WaitFor: %v after %d calls, %v", err, calls, d)
	}
	_, err = WaitFor(context.Background(), 20*time.Millisecond, time.Millisecond, func() error { return errors.New("never") })
	if err == nil || err.Error() != "never" {
		t.Fatalf("WaitFor past its timeout: %v, want cond's last error", err)
	}
}
