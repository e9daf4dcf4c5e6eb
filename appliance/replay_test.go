package appliance

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestReplayBatchAcrossCacheBlocks restarts a direct-I/O broker whose
// __consumer_offsets partition holds more than one block-cache block
// (1 MiB) of commits: a read of it returns one chunk per block, and the
// commit batch that straddles the block boundary ends in one chunk and
// starts in the next. The replay used to parse each chunk alone, and the
// restart failed with "cannot read record batch: N trailing bytes" (found
// with transactional producers and kill -9; a clean restart fails too).
func TestReplayBatchAcrossCacheBlocks(t *testing.T) {
	dir := t.TempDir()
	props := map[string]string{"log.dirs": dir, "log.io.mode": "direct", "offsets.topic.num.partitions": "1",
		"log.cleaner.enable": "false", "metrics.listener": "none"}
	b := startTestBroker(t, props)
	if b.cfg.LogIOMode != "direct" {
		t.Skipf("O_DIRECT refused on %s: the log runs buffered", dir)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr().String()))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	adm := kadm.NewClient(cl)
	if r, err := adm.CreateTopic(ctx, 1, 1, nil, "t"); err != nil || r.Err != nil {
		t.Fatalf("CreateTopic: %v %v", err, r.Err)
	}
	// ~4 KiB of metadata per commit (offset.metadata.max.bytes): 400
	// commits are ~1.6 MiB, so one of them straddles the first block's end.
	meta := strings.Repeat("m", 4000)
	const commits = 400
	for i := 0; i < commits; i++ {
		os := kadm.Offsets{}
		os.Add(kadm.Offset{Topic: "t", Partition: 0, At: int64(i), LeaderEpoch: -1, Metadata: fmt.Sprintf("%d-%s", i, meta)})
		r, err := adm.CommitOffsets(ctx, "g", os)
		if err == nil {
			err = r.Error()
		}
		if err != nil {
			t.Fatalf("commit %d: %v", i, err)
		}
	}
	if n, _ := partitionLogBytes(t, b.partitionDir(offsetsTopic, 0)); n < 3<<19 {
		t.Fatalf("__consumer_offsets-0 holds %d bytes, want more than 1.5 MiB", n)
	}
	cl.Close()
	b.Close()

	b2 := startTestBroker(t, props) // the same data directory; fails the test if Start does
	o, ok := groupOffsets(ctx, t, b2, "g").Lookup("t", 0)
	if !ok || o.At != commits-1 || !strings.HasPrefix(o.Metadata, fmt.Sprintf("%d-", commits-1)) {
		t.Fatalf("committed offset after restart: at %d ok %v metadata %.10q, want %d", o.At, ok, o.Metadata, commits-1)
	}
}

// groupOffsets fetches group's committed offsets from b with a new client.
func groupOffsets(ctx context.Context, t *testing.T, b *Broker, group string) kadm.OffsetResponses {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr().String()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	offs, err := kadm.NewClient(cl).FetchOffsets(ctx, group)
	if err != nil {
		t.Fatal(err)
	}
	return offs
}
