package nvme

// meta.properties: Kafka's identity file at the top of every log directory
// (MetaProperties, MetaPropertiesEnsemble). Version 1, the KRaft one that
// `ringbroker format` and a self-formatting node write:
//
//	#
//	#ringbroker
//	version=1
//	cluster.id=<22-character UUID>
//	node.id=<int>
//	directory.id=<22-character UUID>
//
// Version 0 (ZooKeeper-era brokers) has broker.id instead of node.id and
// may lack cluster.id. directory.id (KIP-858, Kafka 3.7) is optional in
// both; files written by ringbroker before it had none.

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// MetaPropertiesFile is the name of the identity file in a log directory.
const MetaPropertiesFile = "meta.properties"

// ErrNotFormatted is wrapped by ReadMetaProperties's error when the
// directory has no meta.properties (it, or the directory, does not exist).
var ErrNotFormatted = errors.New("log directory is not formatted")

// MetaProperties is one log directory's meta.properties.
type MetaProperties struct {
	// Version is 0 (ZooKeeper-era) or 1 (KRaft).
	Version int
	// ClusterID is cluster.id, "" when a version 0 file has none.
	ClusterID string
	// NodeID is node.id (broker.id in version 0); -1 when a version 0 file
	// has none.
	NodeID int32
	// DirectoryID is directory.id, zero when the file has none.
	DirectoryID UUID
}

// ParseMetaProperties decodes a meta.properties file: key=value lines
// ('=' or ':' separated, surrounding blanks trimmed), '#' and '!' comment
// lines. Version 1 needs cluster.id and node.id; version 0 reads broker.id;
// any other version is refused. node.id must be an int32 >= 0 and
// directory.id a UUID that is not one of Kafka's reserved directory ids.
// Unknown keys are ignored, as Kafka does.
func ParseMetaProperties(data []byte) (MetaProperties, error) {
	props := map[string]string{}
	for i, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(strings.TrimSuffix(line, "\r"))
		if line == "" || line[0] == '#' || line[0] == '!' {
			continue
		}
		j := strings.IndexAny(line, "=:")
		if j <= 0 {
			return MetaProperties{}, fmt.Errorf("cannot parse meta.properties line %d %q: want key=value", i+1, line)
		}
		props[strings.TrimSpace(line[:j])] = strings.TrimSpace(line[j+1:])
	}
	m := MetaProperties{NodeID: -1}
	switch v := props["version"]; v {
	case "", "0":
		m.Version = 0
	case "1":
		m.Version = 1
	default:
		return MetaProperties{}, fmt.Errorf("cannot parse meta.properties: version %q is not 0 or 1", v)
	}
	m.ClusterID = props["cluster.id"]
	idKey := "node.id"
	if m.Version == 0 {
		idKey = "broker.id"
	}
	if s, ok := props[idKey]; ok {
		n, err := strconv.ParseInt(s, 10, 32)
		if err != nil || n < 0 {
			return MetaProperties{}, fmt.Errorf("cannot parse meta.properties: %s=%q is not an id >= 0", idKey, s)
		}
		m.NodeID = int32(n)
	}
	if m.Version == 1 {
		if m.ClusterID == "" {
			return MetaProperties{}, errors.New("cannot parse meta.properties: version 1 without cluster.id")
		}
		if m.NodeID < 0 {
			return MetaProperties{}, errors.New("cannot parse meta.properties: version 1 without node.id")
		}
	}
	if s, ok := props["directory.id"]; ok {
		id, err := ParseUUID(s)
		if err != nil {
			return MetaProperties{}, fmt.Errorf("cannot parse meta.properties directory.id: %w", err)
		}
		if id.ReservedDirectoryID() {
			return MetaProperties{}, fmt.Errorf("cannot parse meta.properties: directory.id %s is a reserved directory id", s)
		}
		m.DirectoryID = id
	}
	return m, nil
}

// AppendMetaProperties appends m in meta.properties form to dst: a comment
// header, then version, cluster.id, node.id (broker.id for version 0) and
// directory.id, each only when set.
func AppendMetaProperties(dst []byte, m MetaProperties) []byte {
	dst = append(dst, "#\n#written by ringbroker\n"...)
	dst = fmt.Appendf(dst, "version=%d\n", m.Version)
	if m.ClusterID != "" {
		dst = fmt.Appendf(dst, "cluster.id=%s\n", m.ClusterID)
	}
	if m.NodeID >= 0 {
		key := "node.id"
		if m.Version == 0 {
			key = "broker.id"
		}
		dst = fmt.Appendf(dst, "%s=%d\n", key, m.NodeID)
	}
	if !m.DirectoryID.IsZero() {
		dst = fmt.Appendf(dst, "directory.id=%s\n", m.DirectoryID)
	}
	return dst
}

// ReadMetaProperties reads dir's meta.properties. A missing file (or
// directory) is an error wrapping ErrNotFormatted; the errors name the
// file.
func ReadMetaProperties(dir string) (MetaProperties, error) {
	path := filepath.Join(dir, MetaPropertiesFile)
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return MetaProperties{}, fmt.Errorf("cannot read %q: %w", path, ErrNotFormatted)
	}
	if err != nil {
		return MetaProperties{}, fmt.Errorf("cannot read %q: %w", path, err)
	}
	m, err := ParseMetaProperties(data)
	if err != nil {
		return MetaProperties{}, fmt.Errorf("cannot read %q: %w", path, err)
	}
	return m, nil
}

// WriteMetaProperties writes m as dir's meta.properties, atomically and
// durably (WriteFileAtomic), creating dir when it does not exist.
func WriteMetaProperties(dir string, m MetaProperties) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("cannot create log directory %q: %w", dir, err)
	}
	return WriteFileAtomic(filepath.Join(dir, MetaPropertiesFile), AppendMetaProperties(nil, m))
}

// MetaDirs are the meta.properties of a node's log directories, as
// Kafka's MetaPropertiesEnsemble: each directory is formatted (in Props)
// or empty (no meta.properties yet).
type MetaDirs struct {
	// Dirs are the directories, in the order given.
	Dirs []string
	// Props holds the meta.properties of each formatted directory.
	Props map[string]MetaProperties
}

// LoadMetaDirs reads the meta.properties of each directory. A directory
// without one is empty; an unreadable or malformed one is an error (Kafka
// sets such a directory aside as failed; ringbroker stops, since it stores
// its data in the first directory).
func LoadMetaDirs(dirs []string) (MetaDirs, error) {
	md := MetaDirs{Dirs: slices.Clone(dirs), Props: map[string]MetaProperties{}}
	if len(dirs) == 0 {
		return md, errors.New("cannot load meta.properties: no log directory given")
	}
	for _, d := range dirs {
		m, err := ReadMetaProperties(d)
		if errors.Is(err, ErrNotFormatted) {
			continue
		}
		if err != nil {
			return MetaDirs{}, err
		}
		md.Props[d] = m
	}
	return md, nil
}

// Empty returns the directories without meta.properties, in order.
func (md MetaDirs) Empty() []string {
	var out []string
	for _, d := range md.Dirs {
		if _, ok := md.Props[d]; !ok {
			out = append(out, d)
		}
	}
	return out
}

// ClusterID is the cluster.id of the first formatted directory that has
// one, "" when none has.
func (md MetaDirs) ClusterID() string {
	for _, d := range md.Dirs {
		if m, ok := md.Props[d]; ok && m.ClusterID != "" {
			return m.ClusterID
		}
	}
	return ""
}

// Verify checks the formatted directories against each other and against
// the expected cluster id and node id ("" and -1: not known, the first
// directory that has one sets it), as MetaPropertiesEnsemble.verify does:
// one cluster.id, one node.id, and directory ids that are not reserved and
// not shared by two directories. The errors name the file at fault.
func (md MetaDirs) Verify(clusterID string, nodeID int32) error {
	seen := map[UUID]string{}
	for _, d := range md.Dirs {
		m, ok := md.Props[d]
		if !ok {
			continue
		}
		path := filepath.Join(d, MetaPropertiesFile)
		switch {
		case m.ClusterID == "":
		case clusterID == "":
			clusterID = m.ClusterID
		case m.ClusterID != clusterID:
			return fmt.Errorf("invalid cluster.id in %q: expected %s, but read %s", path, clusterID, m.ClusterID)
		}
		switch {
		case m.NodeID < 0:
		case nodeID < 0:
			nodeID = m.NodeID
		case m.NodeID != nodeID:
			return fmt.Errorf("stored node.id %d in %q does not match node.id %d: if the data was moved, set node.id to match; "+
				"for a new node, empty its log directories", m.NodeID, path, nodeID)
		}
		if m.DirectoryID.IsZero() {
			continue
		}
		if m.DirectoryID.ReservedDirectoryID() {
			return fmt.Errorf("reserved directory.id %s in %q", m.DirectoryID, path)
		}
		if prev, dup := seen[m.DirectoryID]; dup {
			return fmt.Errorf("directory.id %s is the id of both %q and %q", m.DirectoryID, prev, d)
		}
		seen[m.DirectoryID] = d
	}
	return nil
}

// NewDirectoryID returns a random directory id that no directory of md
// holds (Copier.generateValidDirectoryId).
func (md MetaDirs) NewDirectoryID() (UUID, error) {
	for {
		id, err := RandomDirectoryID()
		if err != nil {
			return UUID{}, err
		}
		dup := false
		for _, m := range md.Props {
			dup = dup || m.DirectoryID == id
		}
		if !dup {
			return id, nil
		}
	}
}

// Complete makes every directory of md formatted, as a Kafka node does at
// start: each empty directory gets a version 1 meta.properties with
// clusterID, nodeID and a new directory id, and each formatted directory
// without a directory.id gets one (Kafka 3.7 and later add it at start;
// the rest of the file is kept). It returns the directories it wrote, in
// order, and updates md.Props. Call Verify first.
func (md *MetaDirs) Complete(clusterID string, nodeID int32) ([]string, error) {
	var wrote []string
	for _, d := range md.Dirs {
		m, ok := md.Props[d]
		if ok && !m.DirectoryID.IsZero() {
			continue
		}
		if !ok {
			m = MetaProperties{Version: 1, ClusterID: clusterID, NodeID: nodeID}
		}
		id, err := md.NewDirectoryID()
		if err != nil {
			return wrote, err
		}
		m.DirectoryID = id
		if err := WriteMetaProperties(d, m); err != nil {
			return wrote, err
		}
		md.Props[d] = m
		wrote = append(wrote, d)
	}
	return wrote, nil
}

// Start is what a broker does with its log directories at start: it loads
// their meta.properties (LoadMetaDirs), checks them against the configured
// cluster id (may be empty) and node id (Verify), and formats the
// directories that have none (Complete), with the cluster id found on disk,
// else the configured one, else a new one. With formatted set (a node
// configured to join a quorum) a directory set with no meta.properties at
// all is refused with ErrNotFormatted instead, so that a wiped disk never
// founds a cluster of its own. It returns the cluster id and the
// directories it wrote.
func (md *MetaDirs) Start(clusterID string, nodeID int32, formatted bool) (string, []string, error) {
	if err := md.Verify(clusterID, nodeID); err != nil {
		return "", nil, err
	}
	if empty := md.Empty(); len(empty) > 0 && len(md.Props) == 0 && formatted {
		return "", nil, fmt.Errorf("%w: %q has no meta.properties", ErrNotFormatted, empty[0])
	}
	if id := md.ClusterID(); id != "" {
		clusterID = id
	}
	if clusterID == "" {
		id, err := RandomUUID()
		if err != nil {
			return "", nil, err
		}
		clusterID = id.String()
	}
	wrote, err := md.Complete(clusterID, nodeID)
	return clusterID, wrote, err
}
