package metadata

import (
	"crypto/rand"
	"encoding/base64"
	"fmt"
)

// TopicID is a topic's 16-byte UUID (KIP-516).
type TopicID [16]byte

// String is Kafka's textual form: URL-safe base64 without padding.
func (id TopicID) String() string { return base64.RawURLEncoding.EncodeToString(id[:]) }

// NewTopicID returns a random topic id, neither the zero UUID nor the
// "metadata topic" UUID (1), which Kafka reserves.
func NewTopicID() TopicID {
	for {
		var id TopicID
		if _, err := rand.Read(id[:]); err != nil {
			panic(fmt.Sprintf("cannot read random bytes: %v", err))
		}
		if id != (TopicID{}) && id != (TopicID{15: 1}) {
			return id
		}
	}
}

// PartitionImage is one partition in the metadata image: values only (where
// a node placed it, and its runtime state, are that node's log manager's).
type PartitionImage struct {
	Partition   int32
	Replicas    []int32
	ISR         []int32
	Leader      int32
	LeaderEpoch int32
	// PartitionEpoch is bumped by every change of the partition
	// (PartitionChangeRecord), 0 when created.
	PartitionEpoch int32
}

// TopicImage is one topic in the metadata image. It is immutable.
type TopicImage struct {
	Name       string
	ID         TopicID
	Partitions []PartitionImage
	Configs    map[string]string // overrides only
}
