package integration

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// A small local helper for three combined ringbroker processes forming a
// metadata quorum on 127.0.0.1 (the general cluster harness is
// tests/cluster/harness's job): each node has a formatted directory, a
// client and a controller listener on free ports, node ids 1-3.

type quorumNode struct {
	t          *testing.T
	id         int
	addr, ctl  string
	dir, props string
	logDir     string
	starts     int
	cmd        *exec.Cmd
	done       chan struct{}
	logPath    string
}

// startQuorumNodes formats and starts n combined nodes and waits until
// every one serves Metadata.
func startQuorumNodes(t *testing.T, n int, extra ...string) []*quorumNode {
	t.Helper()
	out, code := runBinary(t, time.Minute, "random-uuid")
	cid := strings.TrimSpace(out)
	if code != 0 {
		t.Fatalf("random-uuid: exit %d %q", code, out)
	}
	nodes := make([]*quorumNode, n)
	var voters []string
	for i := range nodes {
		nd := &quorumNode{t: t, id: i + 1, dir: t.TempDir(), logDir: t.TempDir(),
			addr: "127.0.0.1:" + strconv.Itoa(freePort(t)), ctl: "127.0.0.1:" + strconv.Itoa(freePort(t))}
		nodes[i] = nd
		voters = append(voters, fmt.Sprintf("%d@%s", nd.id, nd.ctl))
	}
	for _, nd := range nodes {
		body := strings.Join([]string{
			"node.id=" + strconv.Itoa(nd.id),
			"process.roles=broker,controller",
			"controller.quorum.voters=" + strings.Join(voters, ","),
			"controller.listener.names=CONTROLLER",
			"listeners=PLAINTEXT://" + nd.addr + ",CONTROLLER://" + nd.ctl,
			"advertised.listeners=PLAINTEXT://" + nd.addr,
			"log.dirs=" + nd.dir,
			"metrics.listener=none",
			"shards=1",
			"num.partitions=2",
			"offsets.topic.num.partitions=3",
			"transaction.state.log.num.partitions=3",
		}, "\n") + "\n" + strings.Join(extra, "\n") + "\n"
		nd.props = filepath.Join(nd.logDir, "server.properties")
		if err := os.WriteFile(nd.props, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		if out, code := runBinary(t, time.Minute, "format", "--cluster-id", cid, nd.props); code != 0 {
			t.Fatalf("format node %d: exit %d\n%s", nd.id, code, out)
		}
		t.Cleanup(nd.cleanup)
	}
	for _, nd := range nodes {
		nd.start()
	}
	for _, nd := range nodes {
		nd.waitReady()
	}
	return nodes
}

func (nd *quorumNode) running() bool {
	if nd.cmd == nil {
		return false
	}
	select {
	case <-nd.done:
		return false
	default:
		return true
	}
}

func (nd *quorumNode) start() {
	nd.t.Helper()
	bin, root := brokerBinary(nd.t)
	nd.starts++
	nd.logPath = filepath.Join(nd.logDir, fmt.Sprintf("node-%d-%d.log", nd.id, nd.starts))
	f, err := os.Create(nd.logPath)
	if err != nil {
		nd.t.Fatal(err)
	}
	cmd := exec.Command(bin, nd.props)
	cmd.Dir = root
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		f.Close()
		nd.t.Fatal(err)
	}
	nd.cmd = cmd
	done := make(chan struct{})
	nd.done = done
	go func() {
		cmd.Wait()
		f.Close()
		close(done)
	}()
}

// waitReady waits until the node answers Metadata.
func (nd *quorumNode) waitReady() {
	nd.t.Helper()
	adm := nd.admin()
	waitFor(nd.t, 90*time.Second, fmt.Sprintf("node %d serving Metadata", nd.id), func() bool {
		if !nd.running() {
			nd.t.Fatalf("node %d exited during start-up:\n%s", nd.id, tailFile(nd.logPath))
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_, err := adm.Metadata(ctx)
		return err == nil
	})
}

func (nd *quorumNode) admin() *kadm.Client {
	cl, err := kgo.NewClient(kgo.SeedBrokers(nd.addr))
	if err != nil {
		nd.t.Fatal(err)
	}
	nd.t.Cleanup(cl.Close)
	return kadm.NewClient(cl)
}

func (nd *quorumNode) kill() {
	nd.t.Helper()
	nd.cmd.Process.Kill()
	select {
	case <-nd.done:
	case <-time.After(killTimeout):
		nd.t.Fatalf("node %d still running after SIGKILL", nd.id)
	}
}

func (nd *quorumNode) cleanup() {
	if nd.running() {
		nd.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-nd.done:
		case <-time.After(stopTimeout):
			nd.cmd.Process.Kill()
			<-nd.done
		}
	}
	if nd.t.Failed() && nd.logPath != "" {
		nd.t.Logf("node %d log tail:\n%s", nd.id, tailFile(nd.logPath))
	}
}

var leaderLine = regexp.MustCompile(`msg="quorum state changed" .*state=StateLeader .*term=(\d+)`)

// leaderTerm is the highest term in which the node's current log says it
// became the leader (0: none).
func (nd *quorumNode) leaderTerm() int {
	f, err := os.Open(nd.logPath)
	if err != nil {
		return 0
	}
	defer f.Close()
	best := 0
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if m := leaderLine.FindStringSubmatch(sc.Text()); m != nil {
			if n, _ := strconv.Atoi(m[1]); n > best {
				best = n
			}
		}
	}
	return best
}

func logContains(path, what string) bool {
	b, err := os.ReadFile(path)
	return err == nil && strings.Contains(string(b), what)
}

// activeController is the running node that became leader in the highest
// term, and that term.
func activeController(nodes []*quorumNode) (*quorumNode, int) {
	var lead *quorumNode
	term := 0
	for _, nd := range nodes {
		if !nd.running() {
			continue
		}
		if tm := nd.leaderTerm(); tm > term {
			lead, term = nd, tm
		}
	}
	return lead, term
}

// topicsOf is "name:id:partitions" of every topic in the node's Metadata.
func topicsOf(t *testing.T, nd *quorumNode, adm *kadm.Client) ([]string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	md, err := adm.Metadata(ctx)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, td := range md.Topics.Sorted() {
		if td.Err != nil {
			return nil, fmt.Errorf("node %d: topic %s: %w", nd.id, td.Topic, td.Err)
		}
		out = append(out, fmt.Sprintf("%s:%s:%d", td.Topic, td.ID, len(td.Partitions)))
	}
	sort.Strings(out)
	return out, nil
}

// createVia creates topic with partitions through nd (a CreateTopics that
// nd forwards when it is not the active controller).
func createVia(t *testing.T, nd *quorumNode, adm *kadm.Client, topic string, partitions int32) error {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	resp, err := adm.CreateTopics(ctx, partitions, 1, nil, topic)
	if err != nil {
		return err
	}
	r, err := resp.On(topic, nil)
	if err != nil {
		return err
	}
	return r.Err
}

// TestQuorumThreeNodes: three combined nodes with controller.quorum.voters
// elect an active controller; CreateTopics sent to a node that is not it
// is forwarded and every node's Metadata shows the topic (as configs and
// deletions sent to it: IncrementalAlterConfigs, DeleteTopics); after kill -9 of
// the active controller a new one is elected (timed), a topic created
// through a survivor appears on both, and the killed node, restarted,
// catches up: every node lists the same topics with the same ids and
// partition counts. Every node opens every partition locally for now
// (placement across brokers is later work).
func TestQuorumThreeNodes(t *testing.T) {
	if testing.Short() {
		t.Skip("starts three broker processes")
	}
	nodes := startQuorumNodes(t, 3)
	adms := make([]*kadm.Client, len(nodes))
	for i, nd := range nodes {
		adms[i] = nd.admin()
	}
	var lead *quorumNode
	term := 0
	waitFor(t, 30*time.Second, "an active controller", func() bool { lead, term = activeController(nodes); return lead != nil })
	t.Logf("active controller: node %d (term %d)", lead.id, term)

	created := map[string]int32{}
	follower := nodes[lead.id%len(nodes)] // another node
	if err := createVia(t, follower, adms[follower.id-1], "q-one", 3); err != nil {
		t.Fatalf("CreateTopics through node %d (not the controller): %v", follower.id, err)
	}
	created["q-one"] = 3
	// The change ran on the active controller, not on the node asked.
	if logContains(follower.logPath, `msg="created topic" topic=q-one `) || !logContains(lead.logPath, `msg="created topic" topic=q-one `) {
		t.Fatalf("q-one was not created by the active controller (node %d) on behalf of node %d", lead.id, follower.id)
	}

	checkAll := func(live []*quorumNode) []string {
		t.Helper()
		var want []string
		waitFor(t, 30*time.Second, "every node listing the created topics alike", func() bool {
			var first []string
			for i, nd := range live {
				got, err := topicsOf(t, nd, adms[nd.id-1])
				if err != nil {
					return false
				}
				for topic, parts := range created {
					if !slices.ContainsFunc(got, func(s string) bool {
						return strings.HasPrefix(s, topic+":") && strings.HasSuffix(s, ":"+strconv.Itoa(int(parts)))
					}) {
						return false
					}
				}
				if i == 0 {
					first = got
				} else if !slices.Equal(first, got) {
					return false
				}
			}
			want = first
			return true
		})
		return want
	}
	checkAll(nodes)

	// Configs and deletions sent to a non-leader are forwarded too.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	retention := "3600000"
	ar, err := adms[follower.id-1].AlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "retention.ms", Value: &retention}}, "q-one")
	if err == nil {
		_, err = ar.On("q-one", nil)
	}
	if err != nil {
		t.Fatalf("IncrementalAlterConfigs through node %d: %v", follower.id, err)
	}
	for _, nd := range nodes {
		waitFor(t, 30*time.Second, fmt.Sprintf("node %d applying retention.ms", nd.id), func() bool {
			rc, err := adms[nd.id-1].DescribeTopicConfigs(ctx, "q-one")
			if err != nil {
				return false
			}
			c, err := rc.On("q-one", nil)
			if err != nil {
				return false
			}
			for _, kv := range c.Configs {
				if kv.Key == "retention.ms" && kv.Value != nil && *kv.Value == retention {
					return true
				}
			}
			return false
		})
	}
	if err := createVia(t, follower, adms[follower.id-1], "q-gone", 1); err != nil {
		t.Fatal(err)
	}
	dr, err := adms[follower.id-1].DeleteTopics(ctx, "q-gone")
	if err == nil {
		var r kadm.DeleteTopicResponse
		if r, err = dr.On("q-gone", nil); err == nil {
			err = r.Err
		}
	}
	if err != nil {
		t.Fatalf("DeleteTopics through node %d: %v", follower.id, err)
	}
	for _, nd := range nodes {
		waitFor(t, 30*time.Second, fmt.Sprintf("node %d dropping q-gone", nd.id), func() bool {
			got, err := topicsOf(t, nd, adms[nd.id-1])
			return err == nil && !slices.ContainsFunc(got, func(s string) bool { return strings.HasPrefix(s, "q-gone:") })
		})
	}

	// kill -9 of the active controller; a survivor must become it, a
	// topic created through a survivor appears on both, and the killed
	// node, restarted, catches up. RB_QUORUM_TRIALS repeats it (default 1).
	trials := 1
	if v, err := strconv.Atoi(os.Getenv("RB_QUORUM_TRIALS")); err == nil && v > 1 {
		trials = v
	}
	var elections []time.Duration
	var final []string
	for trial := range trials {
		killedAt := time.Now()
		lead.kill()
		var survivors []*quorumNode
		for _, nd := range nodes {
			if nd != lead {
				survivors = append(survivors, nd)
			}
		}
		var next *quorumNode
		waitForEvery(t, 30*time.Second, 5*time.Millisecond, "a new active controller", func() bool {
			n, tm := activeController(survivors)
			if n != nil && tm > term {
				next, term = n, tm
				return true
			}
			return false
		})
		election := time.Since(killedAt)
		elections = append(elections, election)
		topic := fmt.Sprintf("q-after-kill-%d", trial)
		via := survivors[trial%len(survivors)]
		if err := createVia(t, via, adms[via.id-1], topic, 2); err != nil {
			t.Fatalf("CreateTopics through node %d after the failover: %v", via.id, err)
		}
		firstCreate := time.Since(killedAt)
		created[topic] = 2
		t.Logf("trial %d: kill -9 of node %d: node %d active controller (term %d) after %v; CreateTopics through node %d answered %v after the kill",
			trial, lead.id, next.id, term, election.Round(time.Millisecond), via.id, firstCreate.Round(time.Millisecond))
		checkAll(survivors)
		lead.start()
		lead.waitReady()
		final = checkAll(nodes)
		lead = next
	}
	slices.Sort(elections)
	t.Logf("election after kill -9: median %v, min %v, max %v over %d trials", elections[len(elections)/2].Round(time.Millisecond),
		elections[0].Round(time.Millisecond), elections[len(elections)-1].Round(time.Millisecond), len(elections))
	for topic := range created {
		if !slices.ContainsFunc(final, func(s string) bool { return strings.HasPrefix(s, topic+":") }) {
			t.Errorf("topic %s missing from %v", topic, final)
		}
	}
	t.Logf("all nodes: %v", final)
	for _, nd := range nodes {
		for i := 1; i <= nd.starts; i++ {
			path := filepath.Join(nd.logDir, fmt.Sprintf("node-%d-%d.log", nd.id, i))
			if logContains(path, "a metadata listener failed") || logContains(path, "does not apply to the image") {
				t.Errorf("node %d (start %d) failed to apply a committed change:\n%s", nd.id, i, tailFile(path))
			}
		}
	}
}
