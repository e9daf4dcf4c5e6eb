// Command kfake runs franz-go's in-memory fake Kafka cluster
// (github.com/twmb/franz-go/pkg/kfake) as its own process, so ringbench can
// measure it side by side with ringbroker as a protocol-only upper bound:
// the same Kafka wire protocol and client, no disk.
//
// Usage:
//
//	kfake --port 9092
//
// It listens on 127.0.0.1:<port> with one broker, prints
// "kfake listening addr=..." once ready, and exits on SIGTERM or SIGINT.
package main

import (
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/twmb/franz-go/pkg/kfake"
)

func main() {
	port := flag.Int("port", 9092, "TCP port to listen on (loopback)")
	dataDir := flag.String("data-dir", "", "persist to this directory (kfake.DataDir); empty keeps everything in memory")
	syncWrites := flag.Bool("sync-writes", false, "fsync every batch (kfake.SyncWrites); needs --data-dir")
	flag.Parse()

	opts := []kfake.Opt{kfake.NumBrokers(1), kfake.Ports(*port), kfake.AllowAutoTopicCreation()}
	if *dataDir != "" {
		opts = append(opts, kfake.DataDir(*dataDir))
		if *syncWrites {
			opts = append(opts, kfake.SyncWrites())
		}
	}
	c, err := kfake.NewCluster(opts...)
	if err != nil {
		fmt.Fprintf(os.Stderr, "kfake: cannot start cluster on port %d: %v\n", *port, err)
		os.Exit(1)
	}
	fmt.Printf("kfake listening addr=%s\n", strings.Join(c.ListenAddrs(), ","))

	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	<-sig
	c.Close()
}
