package nvme

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestParseUUID(t *testing.T) {
	for _, c := range []struct {
		in   string
		want string // "" for an error
	}{
		{"AAAAAAAAAAAAAAAAAAAAAA", "AAAAAAAAAAAAAAAAAAAAAA"},
		{"MkU3OEVBNTcwNTJENDM2Qg", "MkU3OEVBNTcwNTJENDM2Qg"},   // Kafka's quickstart cluster id
		{"MkU3OEVBNTcwNTJENDM2Qg==", "MkU3OEVBNTcwNTJENDM2Qg"}, // padding accepted, as Java's decoder does
		{"-_-_-_-_-_-_-_-_-_-_-w", "-_-_-_-_-_-_-_-_-_-_-w"},   // base64url alphabet
		{"MkU3OEVBNTcwNTJENDM2Q", ""},                          // 21 characters
		{"MkU3OEVBNTcwNTJENDM2QgAA", ""},                       // 18 bytes
		{"MkU3OEVBNTcwNTJENDM2Qg+/", ""},                       // standard, not URL, alphabet
		{"MkU3OEVBNTcwNTJENDM2QgAAAAAA", ""},                   // too long
		{"", ""},
		{"test-cluster", ""},
	} {
		u, err := ParseUUID(c.in)
		if c.want == "" {
			if err == nil || !errors.Is(err, ErrInvalidUUID) {
				t.Errorf("ParseUUID(%q) = %v, %v; want an ErrInvalidUUID", c.in, u, err)
			}
			continue
		}
		if err != nil || u.String() != c.want {
			t.Errorf("ParseUUID(%q) = %v, %v; want %s", c.in, u, err, c.want)
		}
	}
}

func TestRandomUUID(t *testing.T) {
	seen := map[UUID]bool{}
	for range 2000 {
		u, err := RandomUUID()
		if err != nil {
			t.Fatal(err)
		}
		s := u.String()
		if len(s) != 22 || strings.HasPrefix(s, "-") || u.reservedLow(2) || seen[u] {
			t.Fatalf("RandomUUID = %s: want 22 characters, no leading '-', not reserved, new", s)
		}
		if u[6]>>4 != 4 || u[8]>>6 != 2 {
			t.Fatalf("RandomUUID = %x: want version 4, variant 2", u[:])
		}
		if back, err := ParseUUID(s); err != nil || back != u {
			t.Fatalf("ParseUUID(%s) = %v, %v", s, back, err)
		}
		seen[u] = true
		d, err := RandomDirectoryID()
		if err != nil || d.ReservedDirectoryID() || strings.HasPrefix(d.String(), "-") {
			t.Fatalf("RandomDirectoryID = %s, %v", d, err)
		}
	}
}

// TestRandomUUIDRedraws feeds randomUUID a draw it must refuse (its
// string would start with '-') and checks that it draws again, and checks
// the bounds of the reserved directory ids.
func TestRandomUUIDRedraws(t *testing.T) {
	dash := bytes.Repeat([]byte{0xf8}, 16) // top 6 bits 62: '-'
	ok := bytes.Repeat([]byte{0x11}, 16)
	u, err := randomUUID(bytes.NewReader(append(append([]byte{}, dash...), ok...)), 2)
	if err != nil || strings.HasPrefix(u.String(), "-") || u[0] != 0x11 {
		t.Fatalf("randomUUID = %s, %v: want the second draw", u, err)
	}
	if _, err := randomUUID(bytes.NewReader(dash), 2); err == nil {
		t.Fatal("randomUUID with only refused draws and then EOF: no error")
	}
	var low UUID
	low[15] = 99
	if !low.ReservedDirectoryID() {
		t.Error("directory id 99 is not reserved")
	}
	low[15] = 100
	if low.ReservedDirectoryID() {
		t.Error("directory id 100 is reserved")
	}
}

func TestParseMetaProperties(t *testing.T) {
	const cid, did = "MkU3OEVBNTcwNTJENDM2Qg", "Q2xpRW50SWQtMTIzNDU2Nw"
	for _, c := range []struct {
		name, in string
		want     MetaProperties
		bad      string
	}{
		{name: "kafka v1", in: "#\n#Thu Dec 05 10:00:00 UTC 2026\nnode.id=1\ndirectory.id=" + did + "\nversion=1\ncluster.id=" + cid + "\n",
			want: MetaProperties{Version: 1, ClusterID: cid, NodeID: 1, DirectoryID: mustUUID(t, did)}},
		{name: "older ringbroker", in: "#\n#ringbroker\nversion=1\ncluster.id=" + cid + "\nnode.id=7\n",
			want: MetaProperties{Version: 1, ClusterID: cid, NodeID: 7}},
		{name: "crlf and colons", in: "version: 1\r\ncluster.id : x\r\nnode.id=0\r\n", want: MetaProperties{Version: 1, ClusterID: "x", NodeID: 0}},
		{name: "v0", in: "version=0\nbroker.id=3\n", want: MetaProperties{NodeID: 3}},
		{name: "v0 without ids", in: "# nothing\n", want: MetaProperties{NodeID: -1}},
		{name: "unknown keys ignored", in: "version=1\ncluster.id=c\nnode.id=2\nfoo=bar\n", want: MetaProperties{Version: 1, ClusterID: "c", NodeID: 2}},
		{name: "v1 without cluster.id", in: "version=1\nnode.id=1\n", bad: "without cluster.id"},
		{name: "v1 without node.id", in: "version=1\ncluster.id=c\n", bad: "without node.id"},
		{name: "version 2", in: "version=2\n", bad: "version"},
		{name: "negative node.id", in: "version=1\ncluster.id=c\nnode.id=-1\n", bad: "node.id"},
		{name: "huge node.id", in: "version=1\ncluster.id=c\nnode.id=2147483648\n", bad: "node.id"},
		{name: "bad directory.id", in: "version=1\ncluster.id=c\nnode.id=1\ndirectory.id=abc\n", bad: "directory.id"},
		{name: "reserved directory.id", in: "version=1\ncluster.id=c\nnode.id=1\ndirectory.id=AAAAAAAAAAAAAAAAAAAAAA\n", bad: "reserved"},
		{name: "no separator", in: "version\n", bad: "key=value"},
	} {
		got, err := ParseMetaProperties([]byte(c.in))
		if c.bad != "" {
			if err == nil || !strings.Contains(err.Error(), c.bad) {
				t.Errorf("%s: got %+v, %v; want an error naming %q", c.name, got, err, c.bad)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("%s: got %+v, %v; want %+v", c.name, got, err, c.want)
		}
	}
}

func mustUUID(t testing.TB, s string) UUID {
	t.Helper()
	u, err := ParseUUID(s)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// TestMetaDirs covers what a node and `ringbroker format` do with
// several directories: empty ones, Verify's mismatches, Complete adding
// directory.id to an old file and formatting the empty ones.
func TestMetaDirs(t *testing.T) {
	const cid = "MkU3OEVBNTcwNTJENDM2Qg"
	root := t.TempDir()
	a, b := filepath.Join(root, "a"), filepath.Join(root, "b", "deeper")
	if _, err := LoadMetaDirs(nil); err == nil {
		t.Fatal("LoadMetaDirs(nil): no error")
	}
	md, err := LoadMetaDirs([]string{a, b})
	if err != nil || len(md.Props) != 0 || len(md.Empty()) != 2 || md.ClusterID() != "" {
		t.Fatalf("two missing directories: %+v, %v", md, err)
	}
	if err := os.MkdirAll(a, 0o755); err != nil {
		t.Fatal(err)
	}
	// An older ringbroker's file: no directory.id.
	if err := os.WriteFile(filepath.Join(a, MetaPropertiesFile), []byte("#\n#ringbroker\nversion=1\ncluster.id="+cid+"\nnode.id=4\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if md, err = LoadMetaDirs([]string{a, b}); err != nil {
		t.Fatal(err)
	}
	if got := md.Empty(); len(got) != 1 || got[0] != b || md.ClusterID() != cid {
		t.Fatalf("Empty = %v, ClusterID = %q", got, md.ClusterID())
	}
	for _, c := range []struct {
		cluster string
		node    int32
		bad     string
	}{
		{"", -1, ""}, {cid, 4, ""}, {"", 4, ""},
		{"QUFBQUFBQUFBQUFBQUFBQQ", 4, "invalid cluster.id"},
		{cid, 5, "stored node.id 4"},
	} {
		err := md.Verify(c.cluster, c.node)
		if (c.bad == "") != (err == nil) || err != nil && !strings.Contains(err.Error(), c.bad) {
			t.Errorf("Verify(%q, %d) = %v, want %q", c.cluster, c.node, err, c.bad)
		}
	}
	wrote, err := md.Complete(cid, 4)
	if err != nil || len(wrote) != 2 {
		t.Fatalf("Complete = %v, %v; want both directories written", wrote, err)
	}
	again, err := LoadMetaDirs([]string{a, b})
	if err != nil {
		t.Fatal(err)
	}
	ma, mb := again.Props[a], again.Props[b]
	if ma.DirectoryID.IsZero() || mb.DirectoryID.IsZero() || ma.DirectoryID == mb.DirectoryID ||
		ma.ClusterID != cid || mb.ClusterID != cid || ma.NodeID != 4 || mb.NodeID != 4 || mb.Version != 1 {
		t.Fatalf("after Complete: %+v and %+v", ma, mb)
	}
	if err := again.Verify(cid, 4); err != nil {
		t.Fatal(err)
	}
	if w, err := again.Complete(cid, 4); err != nil || len(w) != 0 {
		t.Fatalf("a second Complete wrote %v, %v", w, err)
	}

	// Two directories with one directory.id (a copied directory).
	data, err := os.ReadFile(filepath.Join(a, MetaPropertiesFile))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(b, MetaPropertiesFile), data, 0o644); err != nil {
		t.Fatal(err)
	}
	dup, err := LoadMetaDirs([]string{a, b})
	if err != nil {
		t.Fatal(err)
	}
	if err := dup.Verify(cid, 4); err == nil || !strings.Contains(err.Error(), "both") {
		t.Errorf("duplicate directory.id: Verify = %v", err)
	}
	// A garbled file stops the load, naming it.
	if err := os.WriteFile(filepath.Join(b, MetaPropertiesFile), []byte("version=9\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadMetaDirs([]string{a, b}); err == nil || !strings.Contains(err.Error(), b) {
		t.Errorf("garbled meta.properties: %v", err)
	}
}

// FuzzParseMetaProperties checks that the reader never panics, and that
// what it accepts and AppendMetaProperties writes reads back equal.
func FuzzParseMetaProperties(f *testing.F) {
	for _, s := range []string{
		"#\n#ringbroker\nversion=1\ncluster.id=MkU3OEVBNTcwNTJENDM2Qg\nnode.id=1\n",
		"version=1\ncluster.id=c\nnode.id=0\ndirectory.id=Q2xpRW50SWQtMTIzNDU2Nw\n",
		"version=0\nbroker.id=3\n",
		"version:1\r\ncluster.id:x\r\nnode.id:2147483647\r\n",
		"", "=", "!\n#\n", "version=1\ncluster.id=\nnode.id=1\n", "directory.id=AAAAAAAAAAAAAAAAAAAAAA",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := ParseMetaProperties(data)
		if err != nil {
			return
		}
		if m.Version == 1 && (m.ClusterID == "" || m.NodeID < 0) || m.DirectoryID.ReservedDirectoryID() && !m.DirectoryID.IsZero() {
			t.Fatalf("accepted %+v from %q", m, data)
		}
		if strings.ContainsAny(m.ClusterID, "\n\r") {
			t.Fatalf("cluster.id %q holds a line break", m.ClusterID)
		}
		out := AppendMetaProperties(nil, m)
		back, err := ParseMetaProperties(out)
		if err != nil {
			t.Fatalf("cannot read back %q (from %q): %v", out, data, err)
		}
		if back != m {
			t.Fatalf("read back %+v, want %+v (file %q)", back, m, out)
		}
	})
}
