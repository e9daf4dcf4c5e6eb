package appliance

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/ringbroker/ringbroker/appliance/cleaner"
	"github.com/ringbroker/ringbroker/appliance/config"
	"github.com/ringbroker/ringbroker/appliance/controller"
	"github.com/ringbroker/ringbroker/appliance/fetchsession"
	"github.com/ringbroker/ringbroker/appliance/metadata"
	"github.com/ringbroker/ringbroker/appliance/metrics"
	"github.com/ringbroker/ringbroker/appliance/quota"
	"github.com/ringbroker/ringbroker/appliance/security"
	"github.com/ringbroker/ringbroker/appliance/txn"
	"github.com/ringbroker/ringbroker/appliance/wire"
	"github.com/ringbroker/ringbroker/cluster/brokerlife"
	"github.com/ringbroker/ringbroker/ioring"
	"github.com/ringbroker/ringbroker/nvme"
)

// Broker is one ringbroker node: shards owning partitions, the network
// front end, and the metadata image. Create it with New, run it with
// Start, stop it with Close. Its state is grouped by concern; each group
// says who may touch it.
type Broker struct {
	cfg    Config
	log    *slog.Logger
	shards []*shardState
	front  frontEnd     // the network engine, the dispatch table and the open connections
	ctl    controlPlane // the metadata image, its log and its listeners
	coord  coordinators // the group and transaction coordinators
	store  storageState // the data directory: device, lock, checkpoints, cleaner

	metrics *metrics.Metrics     // never nil after New
	quotas  *quota.Manager       // the quota table and byte rates (quotaListener sets the table); never nil after New
	authz   *security.Authorizer // the ACL authorizer; nil when authorizer.class.name is empty
	life    lifecycle
}

// frontEnd is the connection side of a broker.
type frontEnd struct {
	engine ioring.Engine
	// apis is the dispatch table (newAPITable and the concept packages'
	// Register functions); built in New, read-only afterwards.
	apis *wire.Table
	// warn limits the warnings of closed connections (wire.WarnLimit, Broker.warnConn).
	warn       wire.WarnLimit
	recompress config.Recompressors // compression.type rewrites of produced batches (handleProduce)
	// fetchSessions are the incremental fetch sessions (KIP-227).
	fetchSessions *fetchsession.Cache

	mu    sync.Mutex // guards conns and perIP (after ctl.mu in the lock order)
	conns map[*conn]struct{}
	perIP map[string]int32 // open connections by peer address (Broker.admitLocked)
	wg    sync.WaitGroup
}

// controlPlane is the metadata in force and what changes it.
type controlPlane struct {
	mu   sync.Mutex // serialises metadata changes (the controller)
	meta *metadata.Log
	// quorum is the metadata quorum (controller.quorum.voters set;
	// quorum_glue.go), nil without: then meta commits alone.
	quorum      *controller.Quorum
	quorumReady atomic.Bool // the quorum caught up at start
	// members is this node's broker registration and heartbeats to the
	// active controller (quorum only; quorum_glue.go).
	members *brokerlife.Manager

	// image is the image in force; readers load it without locking.
	image atomic.Pointer[Image]
	// lm opens, reconfigures and drops partitions from metadata deltas,
	// and knows where each is placed (logManager.placed).
	lm *logManager
	// pub hands metadata deltas to the listeners (Broker.publish): lm,
	// the group coordinator, securityListener, quotaListener.
	pub metadata.Publisher
	// sec is the authorizer's ACL set and the SCRAM credentials, rebuilt
	// by securityListener when a published delta changes them.
	sec      security.State
	defaults metadata.DynamicDefaults // topic defaults with the dynamic broker configs (Broker.cfg.TopicDefaults under them)
}

// coordinators are the group and transaction coordinators, set in Start
// before serving.
type coordinators struct {
	groups *groupCoordinator
	txn    *txn.Coordinator
	pids   txn.ProducerIDs // producer id blocks (Broker.newProducerID)
}

// storageState is what the broker holds of its data directory.
type storageState struct {
	device nvme.DeviceInfo // log.dirs' device, probed in Start (Broker.probeStorage)
	// tailReads: fetches read other shards' partitions from their
	// published tails (log.io.tail.reads).
	tailReads bool
	lsoMu     sync.Mutex // guards the log-start-offset checkpoint file
	lockFile  *os.File   // holds the flock on <log.dirs>/.lock
	// cleaner is the log cleaner (cleaner.New); set in Start.
	cleaner *cleaner.Cleaner
}

// lifecycle is the broker's start and stop.
type lifecycle struct {
	closing   chan struct{}
	closeOnce sync.Once
	serveErr  chan error
	startedAt time.Time
	// stage is what Close is doing now (ShutdownStage); closed and total
	// count the partitions closed while it closes them.
	stage         atomic.Pointer[string]
	closed, total atomic.Int64
}

// ShutdownStage says what Close is waiting for ("" before Close), for
// the binary to log when a second SIGTERM or SIGINT arrives.
func (b *Broker) ShutdownStage() string {
	s := b.life.stage.Load()
	if s == nil {
		return ""
	}
	if *s == "closing partitions" {
		return fmt.Sprintf("closing partitions (%d of %d closed)", b.life.closed.Load(), b.life.total.Load())
	}
	return *s
}

func (b *Broker) setStage(s string) { b.life.stage.Store(&s) }

// shardState is what one shard owns. Its fields are touched only on the
// shard's loop, except committer (safe for concurrent use) and the atomics.
type shardState struct {
	id        int
	loop      *ioring.Shard
	parts     map[tpKey]*partition
	committer *nvme.GroupCommitter
	cache     *nvme.BlockCache // direct mode's block cache; nil in buffered mode
	// batchWrites: a produce's appends on this shard run as one message and
	// their segment writes go through the shard's ring, answered when they
	// complete (uring engine, direct mode, io.uring.direct.write.batch;
	// produceWait.postBatch, nvme.BlockCache.SetWriteRing).
	batchWrites bool
	retention   *time.Ticker

	// asyncReads: fetches read the blocks they miss in cache through the
	// shard's ring first (uring engine, direct mode,
	// io.uring.direct.read.async; fetchState.prefetch).
	asyncReads bool

	fetchReads      atomic.Uint64 // fetch passes that read partitions on this shard (fetchState.step)
	fetchPrefetches atomic.Uint64 // of those, passes that read missing blocks through the ring first
}

type tpKey struct {
	id TopicID
	p  int32
}

// New validates cfg and returns a broker that is not yet serving.
func New(cfg Config, logger *slog.Logger) (*Broker, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Cluster.ControllerOnly() {
		// Parsed and validated (config.ParseCluster), not served yet: a
		// Broker is a broker, and the standalone controller is later work
		// of issue 40.
		return nil, fmt.Errorf("cannot start a controller-only node (process.roles=controller): not implemented yet; use process.roles=broker,controller")
	}
	if logger == nil {
		logger = slog.Default()
	}
	b := &Broker{cfg: cfg, log: logger, front: frontEnd{conns: map[*conn]struct{}{}}, life: lifecycle{closing: make(chan struct{}), serveErr: make(chan error, 1)}}
	b.store.tailReads = cfg.LogIOTailReads
	b.ctl.lm = newLogManager(b)
	b.front.fetchSessions = fetchsession.NewCache(int(cfg.FetchSessionSlots), uint64(time.Now().UnixNano()))
	b.ctl.pub.Register(b.ctl.lm)
	b.ctl.pub.Register(groupsListener{b})
	b.ctl.pub.Register(securityListener{&b.ctl.sec})
	b.ctl.pub.Register(quotaListener{b})
	b.authz = newAuthorizer(cfg, b.ctl.sec.ACLs)
	b.front.apis = newAPITable(b)
	controller.WrapAdmin(b.front.apis, func() *controller.Quorum { return b.ctl.quorum })
	b.metrics = newBrokerMetrics(b, b.front.apis)
	b.registerFetchSessionMetrics()
	q, err := quota.NewManager(cfg.Quota, b.metrics.Set())
	if err != nil {
		return nil, err
	}
	b.quotas = q
	return b, nil
}

// Config returns the broker's configuration.
func (b *Broker) Config() Config { return b.cfg }

// Addr is the address the broker listens on (after Start).
func (b *Broker) Addr() net.Addr { return b.front.engine.Addr() }

// Start opens the data directory, replays the metadata log, opens every
// partition on its owner shard and starts accepting connections.
func (b *Broker) Start() (err error) {
	defer func() {
		// Whatever ran out of descriptors (a partition, a shard's
		// listener, a coordinator), the error says what to raise.
		if err != nil && (errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENFILE)) && !strings.Contains(err.Error(), "ulimit -n") {
			err = fmt.Errorf("%w; %s", err, metadata.DescriptorHint())
		}
	}()
	b.life.startedAt = time.Now()
	if err := os.MkdirAll(b.cfg.LogDir, 0o755); err != nil {
		return fmt.Errorf("cannot create log.dirs %q: %w", b.cfg.LogDir, err)
	}
	if err := b.lockLogDir(); err != nil {
		return err
	}
	for _, l := range b.cfg.Listeners {
		if err := probeListenAddr(l.Addr, 10*time.Second, b.log); err != nil {
			b.unlockLogDir()
			return err
		}
	}
	if err := b.loadOrWriteMetaProperties(); err != nil {
		b.unlockLogDir()
		return err
	}
	b.probeStorage()
	im := emptyImage()
	if !b.cfg.Cluster.QuorumConfigured() {
		meta, mim, err := metadata.OpenLog(b.cfg.LogDir, b.log, metadata.LogOptions{SnapshotBytes: b.cfg.MetadataSnapshotBytes, Checks: imageChecks{}})
		if err != nil {
			return err
		}
		b.ctl.meta, im = meta, mim
	}

	plan, err := b.planEngine()
	if err != nil {
		b.abortStart()
		return err
	}
	for i := 0; i < b.cfg.Shards; i++ {
		st := &shardState{id: i, parts: map[tpKey]*partition{}, committer: nvme.NewGroupCommitter(b.log), cache: b.newShardCache()}
		if st.loop, err = b.newShardLoop(i, plan); err != nil {
			st.committer.Close()
			b.abortStart()
			return err
		}
		b.shards = append(b.shards, st)
		if err := b.startRingStorage(st); err != nil {
			b.abortStart()
			return err
		}
	}
	b.prefaultCaches()

	// Every partition is opened by the log manager from the delta between
	// an empty image and the replayed one, as later changes are.
	b.ctl.lm.startOffsets = b.readLogStartOffsets()
	if b.cfg.Cluster.QuorumConfigured() {
		im, err = b.openQuorum() // publishes what it applies; clears startOffsets once caught up
	} else {
		err = b.publish(emptyImage(), im)
		b.ctl.lm.startOffsets = nil
	}
	if err != nil {
		b.abortStart()
		return err
	}
	b.removeOrphanPartitionDirs(im)
	if err := b.startGroupCoordinator(); err != nil {
		b.abortStart()
		return err
	}
	if err := b.startTxnCoordinator(); err != nil {
		b.abortStart()
		return err
	}

	eng, err := b.newEngine(plan)
	if err != nil {
		b.abortStart() // e.g. the port stayed in use: keep the markers for the next start
		return err
	}
	b.front.engine = eng
	var addrs, advertised []string
	for i, a := range eng.Addrs() {
		l := &b.cfg.Listeners[i]
		if ta, ok := a.(*net.TCPAddr); ok && l.AdvertisedPort == 0 {
			l.AdvertisedPort = int32(ta.Port)
		}
		addrs = append(addrs, l.Name+"://"+a.String())
		advertised = append(advertised, l.Name+"://"+net.JoinHostPort(l.AdvertisedHost, strconv.Itoa(int(l.AdvertisedPort))))
	}
	b.cfg.AdvertisedPort = b.cfg.Listeners[0].AdvertisedPort
	for _, st := range b.shards {
		b.startHousekeeping(st)
	}
	if err := b.startCleaner(); err != nil { // cleaner.New, package appliance/cleaner
		eng.Close()
		b.abortStart()
		return err
	}
	if err := b.startMembership(); err != nil {
		eng.Close()
		b.stopCleaner()
		b.abortStart()
		return err
	}
	go func() { b.life.serveErr <- eng.Serve(b) }()
	b.log.Info("ringbroker listening", "addr", eng.Addr().String(), "advertised", fmt.Sprintf("%s:%d", b.cfg.AdvertisedHost, b.cfg.AdvertisedPort),
		"listeners", strings.Join(addrs, ","), "advertised.listeners", strings.Join(advertised, ","),
		"node.id", b.cfg.NodeID, "log.dirs", b.cfg.LogDir, "shards", b.cfg.Shards, "io.engine", eng.Name(), "log.io.mode", b.cfg.LogIOMode,
		"topics", len(im.Topics), "startup", time.Since(b.life.startedAt).Round(time.Millisecond).String())
	b.metrics.Start()
	return nil
}

// Done is closed when the broker begins shutting down.
func (b *Broker) Done() <-chan struct{} { return b.life.closing }

// ServeErr reports a fatal error of the network engine.
func (b *Broker) ServeErr() <-chan error { return b.life.serveErr }

// Close stops accepting, closes connections, flushes and closes every
// partition, and writes the checkpoints. It is safe to call more than once.
func (b *Broker) Close() error {
	var err error
	b.life.closeOnce.Do(func() {
		close(b.life.closing)
		b.shutdownMembership() // controlled shutdown while the quorum runs
		b.setStage("closing client connections")
		b.metrics.Stop()
		if b.front.engine != nil {
			b.front.engine.Close()
		}
		b.front.mu.Lock()
		for c := range b.front.conns {
			c.close()
		}
		b.front.mu.Unlock()
		done := make(chan struct{})
		go func() { b.front.wg.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			b.log.Warn("connections still open after 10s, closing partitions anyway")
		}
		b.setStage("stopping the log cleaner")
		b.stopCleaner() // before partitions close: a pass in flight is abandoned
		b.setStage("writing share-group and log start offsets")
		if b.coord.groups != nil {
			b.coord.groups.share.FlushOnClose() // share-partition start offsets (share.Store)
		}
		b.writeLogStartOffsets()
		b.setStage("closing partitions")
		err = b.closePartitions()
		b.setStage("stopping shards")
		b.stopShards()
		if b.ctl.meta != nil {
			b.setStage("closing the metadata log")
			err = errors.Join(err, b.ctl.meta.Close())
		}
		if b.ctl.quorum != nil {
			err = errors.Join(err, b.ctl.quorum.Close())
		}
		b.unlockLogDir()
		b.log.Info("ringbroker stopped", "uptime", time.Since(b.life.startedAt).Round(time.Millisecond).String())
	})
	return err
}

// closePartitions closes every open partition on its shard (each log
// writes its producer snapshot and, when all went well, its clean-shutdown
// marker) and stops the shards' retention. Its error names the first few
// partitions that failed and counts them all (on a full disk that is
// every partition). The shards close their partitions at the same time,
// each on its own loop: a close is a few syncs per partition, and with
// thousands of partitions one shard after the other doubled the shutdown.
func (b *Broker) closePartitions() error {
	var errs []error
	failed := 0
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, st := range b.shards {
		wg.Add(1)
		go func() {
			defer wg.Done()
			b.closeShardPartitions(st, &mu, &failed, &errs)
		}()
	}
	wg.Wait()
	if failed == 0 {
		return nil
	}
	return fmt.Errorf("cannot close %d partitions cleanly (they are checked in full at the next start), first ones: %w", failed, oneLineErrs(errs))
}

// closeShardPartitions closes the partitions of one shard on its loop and
// stops its retention, counting failures in *failed and keeping the first
// few in *errs under mu.
func (b *Broker) closeShardPartitions(st *shardState, mu *sync.Mutex, failed *int, errs *[]error) {
	st.loop.Call(func() {
		if st.retention != nil {
			st.retention.Stop()
		}
		b.life.total.Add(int64(len(st.parts)))
		for _, p := range st.parts {
			e := p.close()
			b.life.closed.Add(1)
			if e != nil {
				mu.Lock()
				*failed++
				if len(*errs) < 5 {
					*errs = append(*errs, e)
				}
				mu.Unlock()
			}
		}
		st.parts = map[tpKey]*partition{}
	})
}

// abortStart undoes a Start that failed once the metadata log was open:
// the partitions opened so far and the metadata log are closed as at
// shutdown, so that they keep their clean-shutdown markers for the next
// start, and the shards stop.
func (b *Broker) abortStart() {
	if err := b.closePartitions(); err != nil {
		b.log.Warn("closing partitions after a failed start", "err", err)
	}
	b.stopShards()
	b.shards = nil // a Close after the failed Start finds nothing to stop twice
	if b.ctl.meta != nil {
		if err := b.ctl.meta.Close(); err != nil {
			b.log.Warn("closing the metadata log after a failed start", "err", err)
		}
		b.ctl.meta = nil
	}
	if b.ctl.quorum != nil {
		_ = b.ctl.quorum.Close() // its error is the start's
		b.ctl.quorum = nil
	}
}

func (b *Broker) stopShards() {
	for _, st := range b.shards {
		st.loop.Close()
		st.committer.Close()
	}
}

// currentImage is the metadata image in force.
func (b *Broker) currentImage() *Image { return b.ctl.image.Load() }

// shardFor maps partition p of topic t to its owner shard.
func (b *Broker) shardFor(t *TopicImage, p int32) *shardState {
	return b.ctl.lm.shardOf(t.ID, p)
}

// partitionDir is <log.dirs>/<topic>-<partition>.
func (b *Broker) partitionDir(topic string, p int32) string {
	return filepath.Join(b.cfg.LogDir, fmt.Sprintf("%s-%d", topic, p))
}

// withPartition runs fn on the owner shard of topic/partition with the
// partition (nil if it is not open there). It does not wait.
func (b *Broker) withPartition(t *TopicImage, p int32, fn func(*partition)) {
	st := b.shardFor(t, p)
	st.loop.Post(func() { fn(st.parts[tpKey{t.ID, p}]) })
}

// openPartition runs on st's loop; the partition publishes its offsets to
// view (the log manager's, for the partition's placement).
func (b *Broker) openPartition(st *shardState, t *TopicImage, p int32, logStart int64, view *partView) error {
	key := tpKey{t.ID, p}
	if _, ok := st.parts[key]; ok {
		return nil
	}
	dir := b.partitionDir(t.Name, p)
	ours, err := b.removeStrayPartitionDir(dir, t, p)
	if err != nil {
		return err
	}
	cfg := b.topicConfig(t)
	l, err := nvme.Open(dir, b.storageOptions(st, t, cfg.LogOptions(b.log, logStart)))
	if err != nil {
		return fmt.Errorf("cannot open partition %s-%d: %w", t.Name, p, err)
	}
	// Written once: rewriting it at every start cost descriptors a start
	// near its limit did not have, after the log had opened.
	if !ours {
		if err := nvme.WritePartitionMetadata(dir, [16]byte(t.ID)); err != nil {
			l.Close()
			return fmt.Errorf("cannot write partition.metadata of %s-%d: %w", t.Name, p, err)
		}
	}
	pi := t.Partitions[p]
	if eps := l.LeaderEpochs(); len(eps) == 0 || eps[len(eps)-1].Epoch < pi.LeaderEpoch {
		if err := l.AssignEpoch(pi.LeaderEpoch, l.LogEndOffset()); err != nil {
			l.Close()
			return fmt.Errorf("cannot assign leader epoch of %s-%d: %w", t.Name, p, err)
		}
	}
	part := newPartition(b, st, t.Name, t.ID, p, pi.LeaderEpoch, l, cfg)
	part.useView(view)
	st.parts[key] = part
	return nil
}

// removeStrayPartitionDir moves aside dir when its partition.metadata names
// another topic id: the remains of a deleted topic of the same name (a
// crash between the metadata commit and the rename), which the new topic
// must not open. Kafka calls these stray logs. ours reports that dir's
// partition.metadata already names t.
func (b *Broker) removeStrayPartitionDir(dir string, t *TopicImage, p int32) (ours bool, err error) {
	old, err := nvme.ReadPartitionMetadata(dir)
	if err != nil {
		return false, nil // no directory yet (unreadable metadata is rewritten after the open)
	}
	if old == [16]byte(t.ID) {
		return true, nil
	}
	gone := filepath.Join(b.cfg.LogDir, deletedPartitionDirName(t.Name, p, TopicID(old)))
	b.log.Warn("removing stray partition directory of a deleted topic", "dir", dir, "topicId", TopicID(old).String(), "newTopicId", t.ID.String())
	if err := os.Rename(dir, gone); err != nil {
		return false, fmt.Errorf("cannot move stray partition directory %q aside: %w", dir, err)
	}
	go func() {
		if err := os.RemoveAll(gone); err != nil {
			b.log.Warn("cannot remove stray partition directory", "dir", gone, "err", err)
		}
	}()
	return false, nil
}

// startHousekeeping runs retention and time-based rolling on each shard.
func (b *Broker) startHousekeeping(st *shardState) {
	iv := time.Duration(b.cfg.RetentionCheckIntervalMs) * time.Millisecond
	if iv <= 0 {
		iv = 5 * time.Minute
	}
	roll := time.NewTicker(min(iv, 10*time.Second))
	st.retention = roll
	last := time.Now()
	go func() {
		for {
			select {
			case <-b.life.closing:
				roll.Stop()
				return
			case <-roll.C:
				runRetention := time.Since(last) >= iv
				if runRetention {
					last = time.Now()
				}
				select {
				case <-b.life.closing:
					return
				default:
				}
				st.loop.Post(func() {
					for _, p := range st.parts {
						p.housekeep(runRetention)
					}
				})
			}
		}
	}()
}

// ServeConn implements ioring.ConnHandler; listener indexes cfg.Listeners.
func (b *Broker) ServeConn(shard, listener int, c net.Conn) {
	c = security.ServerTLS(&b.cfg.Listeners[listener], c) // TLS listeners: security/tls.go
	cn := newConn(b, shard, &b.cfg.Listeners[listener], c)
	b.front.mu.Lock()
	select {
	case <-b.life.closing:
		b.front.mu.Unlock()
		c.Close()
		return
	default:
	}
	ip := remoteIP(cn.remote)
	if reason := b.admitLocked(ip); reason != "" {
		b.front.mu.Unlock()
		c.Close()
		b.warnConn("rejected connection", "remote", cn.remote, "reason", reason)
		return
	}
	b.front.conns[cn] = struct{}{}
	b.front.wg.Add(1)
	b.front.mu.Unlock()
	defer func() {
		b.front.mu.Lock()
		delete(b.front.conns, cn)
		b.releaseLocked(ip)
		b.front.mu.Unlock()
		b.front.wg.Done()
	}()
	cn.serve()
}

// oneLineErrs joins errors with "; " (errors.Join uses newlines), keeping
// them for errors.Is.
type oneLineErrs []error

func (e oneLineErrs) Error() string {
	parts := make([]string, len(e))
	for i, err := range e {
		parts[i] = err.Error()
	}
	return strings.Join(parts, "; ")
}

func (e oneLineErrs) Unwrap() []error { return e }
