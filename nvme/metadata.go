package nvme

import (
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// PartitionMetadataFile holds a partition's topic ID (KIP-516):
// "version: 0\ntopic_id: <id>\n", the ID written as Kafka's Uuid.toString
// does: URL-safe base64 without padding (22 characters).
const PartitionMetadataFile = "partition.metadata"

// WritePartitionMetadata writes partition.metadata in dir atomically
// (temporary file, fsync, rename, directory fsync).
func WritePartitionMetadata(dir string, topicID [16]byte) error {
	data := "version: 0\ntopic_id: " + base64.RawURLEncoding.EncodeToString(topicID[:]) + "\n"
	if err := writeFileAtomic(dir, PartitionMetadataFile, []byte(data)); err != nil {
		return fmt.Errorf("cannot write partition metadata: %w", err)
	}
	return nil
}

// ReadPartitionMetadata reads the topic ID from dir's partition.metadata.
// A missing file gives an error wrapping fs.ErrNotExist.
func ReadPartitionMetadata(dir string) ([16]byte, error) {
	var id [16]byte
	path := filepath.Join(dir, PartitionMetadataFile)
	b, err := os.ReadFile(path)
	if err != nil {
		return id, fmt.Errorf("cannot read partition metadata: %w", err)
	}
	id, err = ParsePartitionMetadata(b)
	if err != nil {
		return id, fmt.Errorf("cannot parse %q: %w", path, err)
	}
	return id, nil
}

// ParsePartitionMetadata decodes partition.metadata content.
func ParsePartitionMetadata(b []byte) ([16]byte, error) {
	var id [16]byte
	var version, topicID string
	var haveVersion, haveID bool
	for _, line := range strings.Split(string(b), "\n") {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			return id, fmt.Errorf("bad line %q", line)
		}
		switch strings.TrimSpace(k) {
		case "version":
			version, haveVersion = strings.TrimSpace(v), true
		case "topic_id":
			topicID, haveID = strings.TrimSpace(v), true
		default:
			return id, fmt.Errorf("unknown key %q", k)
		}
	}
	if !haveVersion || version != "0" {
		return id, fmt.Errorf("version %q, want 0", version)
	}
	if !haveID {
		return id, errors.New("no topic_id")
	}
	raw, err := base64.RawURLEncoding.DecodeString(topicID)
	if err != nil || len(raw) != 16 {
		return id, fmt.Errorf("bad topic_id %q", topicID)
	}
	copy(id[:], raw)
	return id, nil
}
