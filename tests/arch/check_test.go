package arch

import (
	"slices"
	"strings"
	"testing"
)

// TestCheckImports runs the checker over fake graphs: a violation of each
// kind the table forbids is reported with its chain, and allowed edges are
// not.
func TestCheckImports(t *testing.T) {
	// allowed is a graph with the shape the table asks for: every edge in it
	// is allowed, including edges between packages that do not exist yet.
	allowed := map[string][]string{
		"numa":                   nil,
		"cluster/records":        nil,
		"ioring":                 {"numa"},
		"nvme":                   {"ioring"},
		"cluster":                {"cluster/records", "cluster/raft", "nvme"},
		"cluster/raft":           {"cluster/records", "ioring"},
		"tiering":                {"cluster/records", "nvme", "tiering/s3"},
		"tiering/s3":             nil,
		"appliance/wire":         {"cluster/records", "nvme"},
		"appliance/group":        {"appliance/wire", "appliance/group/assign", "cluster/records"},
		"appliance/group/assign": {"numa"},
		"appliance/txn":          {"appliance/wire", "nvme"},
		"appliance/metadata":     {"appliance/wire", "cluster/records"},
		"appliance":              {"appliance/group", "appliance/txn", "appliance/metadata", "cluster", "tiering", "nvme", "ioring", "numa"},
		"tools/ringbroker":       {"appliance", "tools/internal/flags"},
		"tools/internal/flags":   nil,
		"tests/integration":      {"appliance", "tools/ringbroker"},
	}
	with := func(from string, to ...string) map[string][]string {
		g := map[string][]string{}
		for k, v := range allowed {
			g[k] = slices.Clone(v)
		}
		g[from] = append(g[from], to...)
		for _, p := range to {
			if _, ok := g[p]; !ok {
				g[p] = nil
			}
		}
		return g
	}
	cases := []struct {
		name string
		g    map[string][]string
		want []string // "from -> ... -> to" chains, one per reported violation
	}{
		{name: "allowed graph", g: allowed},
		// appliance reaches nvme, so this is a cycle Go would refuse; the
		// checker still names every package that now reaches appliance.
		{name: "nvme imports appliance", g: with("nvme", "appliance"),
			want: []string{
				"nvme -> appliance",
				"cluster -> nvme -> appliance",
				"tiering -> nvme -> appliance",
				"appliance/wire -> nvme -> appliance",
				"appliance/txn -> nvme -> appliance",
				"appliance/group -> appliance/wire -> nvme -> appliance",
				"appliance/metadata -> appliance/wire -> nvme -> appliance",
			}},
		{name: "ioring imports a concept package", g: with("ioring", "appliance/group"),
			want: []string{
				"ioring -> appliance/group",
				"nvme -> ioring -> appliance/group",
				"cluster -> cluster/raft -> ioring -> appliance/group",
				"cluster/raft -> ioring -> appliance/group",
				"tiering -> nvme -> ioring -> appliance/group",
				"appliance/wire -> nvme -> ioring -> appliance/group",
				"appliance/txn -> nvme -> ioring -> appliance/group",
				"appliance/metadata -> appliance/wire -> nvme -> ioring -> appliance/group",
			}},
		{name: "numa imports a module package", g: with("numa", "ioring"),
			want: []string{"numa -> ioring"}},
		{name: "cluster/records is a leaf", g: with("cluster/records", "numa"),
			want: []string{"cluster/records -> numa"}},
		{name: "tiering imports cluster", g: with("tiering", "cluster"),
			want: []string{"tiering -> cluster"}},
		{name: "cluster imports tiering", g: with("cluster/raft", "tiering/s3"),
			want: []string{"cluster -> cluster/raft -> tiering/s3", "cluster/raft -> tiering/s3"}},
		{name: "cluster subpackage imports appliance", g: with("cluster/raft", "appliance/wire"),
			want: []string{"cluster -> cluster/raft -> appliance/wire", "cluster/raft -> appliance/wire"}},
		{name: "concept imports concept", g: with("appliance/txn", "appliance/group"),
			want: []string{"appliance/txn -> appliance/group"}},
		{name: "wire imports a concept package", g: with("appliance/wire", "appliance/quota"),
			want: []string{
				"appliance/wire -> appliance/quota",
				"appliance/group -> appliance/wire -> appliance/quota",
				"appliance/txn -> appliance/wire -> appliance/quota",
				"appliance/metadata -> appliance/wire -> appliance/quota",
			}},
		{name: "wire imports appliance", g: with("appliance/wire", "appliance"),
			want: []string{
				"appliance/wire -> appliance",
				"appliance/group -> appliance/wire -> appliance",
				"appliance/txn -> appliance/wire -> appliance",
				"appliance/metadata -> appliance/wire -> appliance",
			}},
		{name: "a package with no row", g: with("appliance", "appliance/handlers"),
			want: []string{"appliance/handlers"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := checkImports(c.g, importRules)
			var chains []string
			for _, msg := range got {
				if strings.Contains(msg, "not in the import-direction table") {
					chains = append(chains, strings.SplitN(msg, ":", 2)[0])
					continue
				}
				// "<from> may not depend on <to>: <chain> (allowed: ...)"
				_, rest, ok := strings.Cut(msg, ": ")
				chain, _, ok2 := strings.Cut(rest, " (allowed: ")
				if !ok || !ok2 {
					t.Fatalf("unexpected message shape %q", msg)
				}
				chains = append(chains, chain)
			}
			slices.Sort(chains)
			want := slices.Clone(c.want)
			slices.Sort(want)
			if !slices.Equal(chains, want) {
				t.Errorf("violations:\n got  %q\n want %q\nmessages:\n%s", chains, want, strings.Join(got, "\n"))
			}
		})
	}
}
