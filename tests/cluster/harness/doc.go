// Package harness starts ringbroker clusters as real processes for tests:
// several nodes on loopback addresses (127.0.0.1-3) or one per network
// namespace, faults by signal (kill -9, SIGSTOP/SIGCONT, SIGTERM) and by
// iptables partition, and checkers of what clients were told (every
// acknowledged record read back; histories for porcupine).
//
// # Binary
//
// Binary builds tools/ringbroker once per test process (go build into a
// temporary directory), or takes $RB_BIN (also $RB_BROKER_BIN), or the
// repository's bin/ringbroker when it is newer than every Go source file.
// A package's TestMain should be
//
//	func TestMain(m *testing.M) { harness.Main(m) }
//
// so the temporary binary and this process's namespaces go at the end.
//
// # Clusters
//
// New(t, Options{...}) writes node N's server.properties (node.id,
// process.roles=broker,controller, listeners PLAINTEXT://host:port and
// CONTROLLER://host:cport, controller.listener.names=CONTROLLER,
// controller.quorum.voters of every controller, advertised.listeners,
// log.dirs=DataRoot/node-N/data, metrics.listener=none unless Metrics),
// formats each node with one cluster id (`ringbroker format --cluster-id`,
// the id from `ringbroker random-uuid`), starts them all and waits until
// each answers ApiVersions. Options.Standalone leaves the voters out (each
// node a one-node cluster that formats itself); Options.Controllers makes
// the later nodes broker-only. Ports on loopback come from FreePort
// (20000-31999, below the ephemeral range, distinct within the process);
// in namespaces every node uses 9092, 9093 and 9644 of its own address.
//
// A Node's process runs in its own process group with its output in
// Dir/node-ID.START.log; Kill (SIGKILL to the group, waits), Stop (SIGSTOP,
// waits for state T), Cont, Terminate (SIGTERM, waits, reports ExitInfo),
// Start, Restart, WaitReady/MustReady and Probe drive it; Running, Stopped,
// State, Exit, Pid and Log say what happened. The test's clean-up sends
// SIGTERM to every node at once, kills what is left after ShutdownTimeout,
// and logs the tail of every node log when the test failed; each process
// also gets SIGKILL from the kernel should the test process die
// (Pdeathsig), so no node outlives its test. Pdeathsig follows the thread
// that started the process: a test must not end an OS thread it locked
// (runtime.LockOSThread without UnlockOSThread), or a node started from that
// thread earlier is killed with it.
//
// # Networks
//
// NewNetwork(t, n) makes n namespaces rbt-PID-SLOT-nI, each with an eth0
// (10.213.SLOT.I/24) on a veth into a bridge in a hub namespace
// rbt-PID-SLOT-hub, and one link rbh-SLOT (10.213.SLOT.254) from the test's
// namespace into that bridge, so the test process reaches every node.
// Block(a, b), Isolate(i) and Partition(groups...) add iptables DROP rules
// (chain RB-FAULTS in each node namespace; node 0 is the test process);
// Loss(a, b, p) drops a share p of their packets (iptables' statistic
// match); Dropped(i) counts what node i's rules dropped; Heal flushes them
// all. Dialer(i) and Listen(i, addr) open sockets inside node
// i's namespace from this process. The kernel here has no netem
// (CONFIG_NET_SCH_NETEM is not set): delay needs a userspace proxy. Namespaces are deleted at the end of the
// test, and those of dead test processes by the next NewNetwork.
// RequireNetns skips a test where namespaces cannot be used (not root, no
// iproute2 or iptables) and fails it when RB_REQUIRE_NETNS=1, as make
// test-cluster sets.
//
// # Checkers
//
// NewProducer makes an acks=all franz-go client; a Recorder produces
// through it and keeps every acknowledged record (Ack: topic, partition,
// offset, key, value); VerifyAcked / RequireAcked read them all back and
// report any missing or different. History records operations as porcupine
// takes them (Invoke, Return, Unknown for an outcome that is not known), and
// LogModel checks produces and reads of partitions as append-only logs.
//
// Methods that do not return an error report harness failures with
// t.Fatalf: call them from the test's goroutine. The package imports what
// it needs (franz-go, porcupine, golang.org/x/sys/unix) and nothing of the
// broker's packages: it drives the binary only.
package harness
