package quorum

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ringbroker/ringbroker/internal/scripttest"
	"github.com/ringbroker/ringbroker/internal/wait"
)

// TestQuorumScripts runs testdata/*.txt: small clusters on a Hub behind
// Faults, with Config.ManualTick, so that nothing campaigns or times
// out unless the script ticks it. Commands:
//
//	start n=3                  start voters 1..n (memory storage)
//	campaign ID                node ID starts an election
//	tick ID [n=1]              tick node ID n times
//	await-leader ID [nodes=…]  wait until the nodes (default: running)
//	                           follow ID (ticking ID while it leads), print roles
//	await-not-leader ID        wait until node ID does not lead
//	propose ID PAYLOAD [timeout=ms]
//	await-applied [nodes=…]    wait until the nodes applied what the leader
//	                           applied (ticking the leader), print it
//	partition 1 / 2,3 | isolate ID | heal
//	stop ID | restart ID
func TestQuorumScripts(t *testing.T) {
	scripttest.Run(t, filepath.Join("testdata", "*.txt"), func(t *testing.T) scripttest.Env {
		return &scriptEnv{}
	})
}

type scriptEnv struct {
	c   *testCluster
	out strings.Builder
}

func (e *scriptEnv) Output() string {
	s := e.out.String()
	e.out.Reset()
	return s
}

func (e *scriptEnv) Exec(t *testing.T, line string) {
	fields := strings.Fields(line)
	args := map[string]string{}
	var pos []string
	for _, f := range fields[1:] {
		if k, v, ok := strings.Cut(f, "="); ok {
			args[k] = v
		} else {
			pos = append(pos, f)
		}
	}
	id := func(i int) uint64 {
		if i >= len(pos) {
			t.Fatalf("%s: missing argument %d", line, i+1)
		}
		n, err := strconv.ParseUint(pos[i], 10, 64)
		if err != nil {
			t.Fatalf("%s: %v", line, err)
		}
		return n
	}
	num := func(k string, def int) int {
		if args[k] == "" {
			return def
		}
		n, err := strconv.Atoi(args[k])
		if err != nil {
			t.Fatalf("%s: %v", line, err)
		}
		return n
	}
	switch fields[0] {
	case "start":
		e.c = newCluster(t, num("n", 3), false, func(c *Config) {
			c.ManualTick = true
			c.TickInterval = time.Millisecond
			c.ElectionTimeout = 10 * time.Millisecond
			c.HeartbeatInterval = time.Millisecond
		})
	case "campaign":
		if err := e.c.node(id(0)).Campaign(); err != nil {
			fmt.Fprintf(&e.out, "error: %v\n", err)
		}
	case "tick":
		for range num("n", 1) {
			if err := e.c.node(id(0)).Tick(); err != nil {
				t.Fatal(err)
			}
		}
	case "await-leader":
		lead, nodes := id(0), e.nodes(t, args["nodes"])
		ok := wait.Until(30*time.Second, func() bool { // generous: -race beside the other make test stages
			if st, err := e.c.node(lead).Status(); err == nil && st.Role == "leader" {
				e.c.node(lead).Tick()
			}
			for _, n := range nodes {
				if l, _ := e.c.node(n).Leader(); l != lead {
					return false
				}
			}
			return true
		})
		if !ok {
			t.Fatalf("%s: nodes %v do not follow %d", line, nodes, lead)
		}
		e.roles(t, nodes)
	case "await-not-leader":
		n := id(0)
		var st Status
		if !wait.Until(30*time.Second, func() bool { // generous: -race beside the other make test stages
			var err error
			st, err = e.c.node(n).Status()
			return err == nil && st.Role != "leader"
		}) {
			t.Fatalf("%s: node %d still leads", line, n)
		}
		// Its role after stepping down (follower or, after more ticks,
		// pre-candidate) depends on how many ticks it took.
		fmt.Fprintf(&e.out, "n%d not leader term=%d\n", n, st.Term)
	case "propose":
		ctx, cancel := context.WithTimeout(context.Background(), time.Duration(num("timeout", 10000))*time.Millisecond)
		idx, err := e.c.node(id(0)).Propose(ctx, []byte(pos[1]))
		cancel()
		switch {
		case errors.Is(err, context.DeadlineExceeded):
			fmt.Fprintf(&e.out, "n%d: error: timed out\n", id(0))
		case err != nil:
			fmt.Fprintf(&e.out, "n%d: error: %v\n", id(0), err)
		default:
			fmt.Fprintf(&e.out, "n%d: committed at %d\n", id(0), idx)
		}
	case "await-applied":
		nodes := e.nodes(t, args["nodes"])
		ok := wait.Until(30*time.Second, func() bool { // generous: -race beside the other make test stages
			var lead uint64
			for _, n := range nodes {
				if st, err := e.c.node(n).Status(); err == nil && st.Role == "leader" {
					lead = n
				}
			}
			if lead == 0 {
				return false
			}
			e.c.node(lead).Tick()
			want := e.c.apps[lead].seq()
			for _, n := range nodes {
				if !slices.Equal(e.c.apps[n].seq(), want) {
					return false
				}
			}
			return true
		})
		if !ok {
			t.Fatalf("%s: nodes %v did not apply the same", line, nodes)
		}
		for _, n := range nodes {
			fmt.Fprintf(&e.out, "n%d applied=%v\n", n, e.c.apps[n].seq())
		}
	case "partition":
		var groups [][]uint64
		for _, g := range strings.Split(strings.Join(pos, " "), "/") {
			groups = append(groups, e.parseIDs(t, strings.ReplaceAll(strings.TrimSpace(g), " ", "")))
		}
		e.c.faults.Partition(groups...)
	case "isolate":
		e.c.faults.Isolate(id(0))
	case "heal":
		e.c.faults.Heal()
	case "stop":
		e.c.stop(id(0))
	case "restart":
		e.c.start(id(0))
	default:
		t.Fatalf("unknown command %q", line)
	}
}

func (e *scriptEnv) parseIDs(t *testing.T, s string) []uint64 {
	var out []uint64
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.ParseUint(f, 10, 64)
		if err != nil {
			t.Fatalf("bad node list %q: %v", s, err)
		}
		out = append(out, n)
	}
	return out
}

// nodes returns the listed nodes, or every running one.
func (e *scriptEnv) nodes(t *testing.T, list string) []uint64 {
	if list != "" {
		return e.parseIDs(t, list)
	}
	var out []uint64
	for _, id := range e.c.ids {
		if e.c.node(id) != nil {
			out = append(out, id)
		}
	}
	return out
}

func (e *scriptEnv) roles(t *testing.T, nodes []uint64) {
	for _, n := range nodes {
		st, err := e.c.node(n).Status()
		if err != nil {
			t.Fatal(err)
		}
		if st.Role == "leader" {
			fmt.Fprintf(&e.out, "n%d leader term=%d\n", n, st.Term)
		} else {
			fmt.Fprintf(&e.out, "n%d %s leader=%d term=%d\n", n, st.Role, st.Leader, st.Term)
		}
	}
}
