package appliance

import (
	"errors"
	"github.com/ringbroker/ringbroker/appliance/quota"
	"github.com/ringbroker/ringbroker/appliance/share"
	"github.com/ringbroker/ringbroker/appliance/txn"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/ringbroker/ringbroker/appliance/config"
	"github.com/ringbroker/ringbroker/appliance/group"
	"github.com/twmb/franz-go/pkg/kmsg"
	"reflect"
)

func TestUnknownConfigKeys(t *testing.T) {
	for _, c := range []struct {
		key, suggestion string
		known           bool
	}{
		{key: "log.retention.hour", suggestion: "log.retention.hours"},
		{key: "log.retention.hours", known: true},
		{key: "io.engin", suggestion: "io.engine"},
		{key: "shard", suggestion: "shards"},
		{key: "Log.Dirs", suggestion: "log.dirs"},
		{key: "log.io.moed", suggestion: "log.io.mode"},
		{key: "log.cleaner.min.cleanable.ratio", known: true},    // a topic config's broker default
		{key: "group.share.max.session.timeout.ms", known: true}, // a GROUP config's bound
		{key: "process.roles", known: true},                      // Kafka's, ignored
		{key: "config.strict", known: true},
		// A topic or GROUP config name at broker level: its broker property.
		{key: "retention.ms", suggestion: "log.retention.ms"},
		{key: "consumer.session.timeout.ms", suggestion: "group.consumer.session.timeout.ms"},
		// Prefixed families keep the key's own listener name.
		{key: "listener.name.sasl_plaintext.plain.sasl.jaas.config", known: true},
		{key: "listener.name.client.sasl.enabled.mechanisms", known: true},
		{key: "listener.name.client.scram-sha-256.sasl.jaas.config", known: true},
		{key: "listener.name.client.sasl.enabled.mechanism", suggestion: "listener.name.client.sasl.enabled.mechanisms"},
		{key: "listener.names.client.sasl.enabled.mechanisms", suggestion: "listener.name.client.sasl.enabled.mechanisms"},
		{key: "listener.name.sasl_plaintext.plain.sasl.jass.config", suggestion: "listener.name.sasl_plaintext.plain.sasl.jaas.config"},
		{key: "listener.name.client.max.connections"}, // Kafka's per-listener override: not honoured
		{key: "listener.name..sasl.enabled.mechanisms"},
		// Nothing close.
		{key: "foo.bar"},
		{key: "completely.unrelated.setting"},
		{key: "ssl.keystore.location", known: true},
		{key: "listener.name.mtls.ssl.client.auth", known: true},
		{key: "ssl.keystore.locaton", suggestion: "ssl.keystore.location"},
	} {
		got := UnknownConfigKeys(map[string]string{c.key: "1"})
		if c.known {
			if len(got) != 0 {
				t.Errorf("%q: reported unknown %v, want known", c.key, got)
			}
			continue
		}
		if len(got) != 1 || got[0].Key != c.key || got[0].Suggestion != c.suggestion {
			t.Errorf("%q: got %v, want one unknown key with suggestion %q", c.key, got, c.suggestion)
		}
	}

	got := UnknownConfigKeys(map[string]string{"node.id": "1", "zz.top": "", "io.engin": "uring", "aa.bb": ""})
	want := []UnknownConfigKey{{Key: "aa.bb"}, {Key: "io.engin", Suggestion: "io.engine"}, {Key: "zz.top"}}
	if !slices.Equal(got, want) {
		t.Errorf("UnknownConfigKeys = %v, want %v (sorted, known keys left out)", got, want)
	}
}

func TestConfigStrict(t *testing.T) {
	base := func(kv ...string) map[string]string {
		p := map[string]string{"log.dirs": t.TempDir()}
		for i := 0; i+1 < len(kv); i += 2 {
			p[kv[i]] = kv[i+1]
		}
		return p
	}

	c, err := ConfigFromProperties(base("log.retention.hour", "1"))
	if err != nil {
		t.Fatalf("an unknown key without config.strict: %v", err)
	}
	if want := []UnknownConfigKey{{Key: "log.retention.hour", Suggestion: "log.retention.hours"}}; !slices.Equal(c.UnknownKeys, want) || c.Strict {
		t.Errorf("UnknownKeys = %v, Strict = %v; want %v, false", c.UnknownKeys, c.Strict, want)
	}
	if c.TopicDefaults["retention.ms"] != "604800000" {
		t.Errorf("retention.ms default = %s: the misspelt key must change nothing", c.TopicDefaults["retention.ms"])
	}

	_, err = ConfigFromProperties(base("log.retention.hour", "1", "config.strict", "true", "no.such.key", "x"))
	if !errors.Is(err, ErrUnknownConfigKey) {
		t.Fatalf("config.strict=true with unknown keys: err = %v, want ErrUnknownConfigKey", err)
	}
	for _, s := range []string{`"log.retention.hour" (did you mean "log.retention.hours"?)`, `"no.such.key"`, "config.strict=true"} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("error %q does not contain %q", err, s)
		}
	}

	c, err = ConfigFromProperties(base("log.retention.hours", "1", "config.strict", "true", "process.roles", "broker,controller",
		"listener.name.plaintext.sasl.enabled.mechanisms", "PLAIN"))
	if err != nil || !c.Strict || len(c.UnknownKeys) != 0 {
		t.Errorf("config.strict=true with known keys only: err %v, Strict %v, UnknownKeys %v", err, c.Strict, c.UnknownKeys)
	}
	if _, err := ConfigFromProperties(base("config.strict", "yes")); err == nil || !strings.Contains(err.Error(), "config.strict") {
		t.Errorf("config.strict=yes: err = %v, want a parse error naming config.strict", err)
	}
	if _, err := ConfigFromProperties(base("config.strict", "false", "log.retention.hour", "1")); err != nil {
		t.Errorf("config.strict=false with an unknown key: %v", err)
	}
}

// TestConfigKeysRegistry checks the registry's own shape and that it agrees
// with the defaults the readers apply (brokerDefaults, topicConfigDefs,
// share.ConfigDefs) and the types DescribeConfigs reports.
func TestConfigKeysRegistry(t *testing.T) {
	types := []string{"boolean", "short", "int", "long", "double", "string", "list", "class", "password"}
	byName := map[string]ConfigKey{}
	for _, k := range ConfigKeys() {
		if _, dup := byName[k.Name]; dup {
			t.Errorf("ConfigKeys lists %s twice", k.Name)
		}
		byName[k.Name] = k
		if !slices.Contains(types, k.Type) {
			t.Errorf("%s: type %q is not one of %v", k.Name, k.Type, types)
		}
		if strings.TrimSpace(k.Doc) == "" {
			t.Errorf("%s: no doc", k.Name)
		}
		if k.Ignored && k.Default != "" {
			t.Errorf("%s: ignored, yet default %q", k.Name, k.Default)
		}
	}
	for k, v := range brokerDefaults {
		r, ok := byName[k]
		if !ok {
			t.Errorf("brokerDefaults has %s, the registry does not", k)
		} else if r.Default != v {
			t.Errorf("%s: registry default %q, brokerDefaults %q", k, r.Default, v)
		}
	}
	for _, d := range topicConfigDefs {
		if r := byName[d.brokerProp]; r.Default != d.def {
			t.Errorf("%s: registry default %q, topic config %s default %q", d.brokerProp, r.Default, d.name, d.def)
		}
	}
	kindType := func(kind string) kmsg.ConfigType {
		if kind == "short" {
			return kmsg.ConfigTypeShort
		}
		return configKindType(kind)
	}
	for k, typ := range brokerPropTypes {
		if r, ok := byName[k]; !ok || kindType(r.Type) != typ {
			t.Errorf("%s: registry type %q, DescribeConfigs type %v", k, r.Type, typ)
		}
	}
	// The registry's defaults, given as properties, must parse to each
	// coordinator's own defaults.
	defaults := map[string]string{}
	for _, k := range ConfigKeys() {
		if k.Default != "" {
			defaults[k.Name] = k.Default
		}
	}
	if gc, err := group.ConfigFromProps(defaults); err != nil || !reflect.DeepEqual(gc, group.DefaultConfig()) {
		t.Errorf("the registry's group defaults parse to %+v (%v), the coordinator's defaults are %+v", gc, err, group.DefaultConfig())
	}
	if tc, err := txn.ConfigFromProps(defaults); err != nil || !reflect.DeepEqual(tc, txn.DefaultConfig()) {
		t.Errorf("the registry's transaction defaults parse to %+v (%v), the coordinator's defaults are %+v", tc, err, txn.DefaultConfig())
	}
	qc, err := quota.ConfigFromProps(nil)
	if err != nil {
		t.Fatal(err)
	}
	if byName["quota.window.num"].Default != strconv.Itoa(qc.WindowNum) || byName["quota.window.size.seconds"].Default != strconv.FormatInt(qc.WindowMs/1000, 10) {
		t.Errorf("quota defaults: registry %q, %q; reader %d, %d ms", byName["quota.window.num"].Default,
			byName["quota.window.size.seconds"].Default, qc.WindowNum, qc.WindowMs)
	}
}

// TestServerPropertiesKeysKnown checks that config/server.properties sets
// and documents (in its commented examples) only known keys.
func TestServerPropertiesKeysKnown(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "config", "server.properties"))
	if err != nil {
		t.Fatal(err)
	}
	props, err := ParseProperties(strings.NewReader(string(data)))
	if err != nil {
		t.Fatal(err)
	}
	example := regexp.MustCompile(`^#([a-z][a-z0-9._-]*)=`)
	n := len(props)
	for _, line := range strings.Split(string(data), "\n") {
		if m := example.FindStringSubmatch(line); m != nil {
			props[m[1]] = ""
		}
	}
	if len(props) <= n {
		t.Fatalf("found no commented examples in server.properties (%d keys set)", n)
	}
	if u := UnknownConfigKeys(props); len(u) != 0 {
		t.Errorf("config/server.properties names unknown keys: %v", u)
	}
}

// notConfigKeys are dotted string literals of the readers' source that are
// not broker properties.
var notConfigKeys = map[string]string{
	"meta.properties":         "a file in log.dirs",
	"directory.id":            "a key of meta.properties (nvme.MetaProperties)",
	"vcs.revision":            "a build setting of runtime/debug.BuildInfo",
	"vcs.modified":            "a build setting of runtime/debug.BuildInfo",
	"io.max.bytes.per.second": "a log attribute of the cleaner's start line",
	"jaas.config":             "the suffix sensitiveBrokerProp hides",
}

// TestConfigKeysInSource fails when the code reads a property the registry
// does not know, and when the registry claims a key the code never names.
//
// It scans the source rather than making readers go through a checked
// lookup: the readers are a dozen functions (ConfigFromProperties,
// config.ParseListeners, group.ConfigFromProps, txn.ConfigFromProps,
// config.CleanerFromProps, quota.ConfigFromProps, share.ConfigFromProps,
// ...) that the
// split of appliance (issue 39) is moving into packages, and a scan needs
// no change in them and follows them into appliance/... subpackages. Every
// string literal shaped like a property key (dotted lowercase words) in
// the non-test Go files of appliance/... and tools/ringbroker must be a
// registered key, a family's prefix or tail, a topic or GROUP config name,
// or listed in notConfigKeys. The one key built at run time,
// listener.name.<listener>.<tail>, is a family whose tails are literals.
func TestConfigKeysInSource(t *testing.T) {
	keyShape := regexp.MustCompile(`^[a-z][a-z0-9_-]*(\.[a-z0-9_-]+)+\.?$`)
	lits := map[string]string{} // key-shaped literal -> first position
	all := map[string]bool{}    // every string literal
	fset := token.NewFileSet()
	for _, root := range []string{".", filepath.Join("..", "tools", "ringbroker")} {
		err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() {
				if path != root && (d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".")) {
					return filepath.SkipDir
				}
				return nil
			}
			name := d.Name()
			if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") || path == filepath.Join("config", "keys.go") {
				return nil
			}
			f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
			if err != nil {
				return err
			}
			ast.Inspect(f, func(n ast.Node) bool {
				bl, ok := n.(*ast.BasicLit)
				if !ok || bl.Kind != token.STRING {
					return true
				}
				s, err := strconv.Unquote(bl.Value)
				if err != nil {
					return true
				}
				all[s] = true
				if keyShape.MatchString(s) {
					if _, ok := lits[s]; !ok {
						lits[s] = fset.Position(bl.Pos()).String()
					}
				}
				return true
			})
			return nil
		})
		if err != nil {
			t.Fatalf("cannot scan %s: %v", root, err)
		}
	}
	if len(lits) < 50 {
		t.Fatalf("found only %d key-shaped literals: the scan is broken", len(lits))
	}

	known := map[string]ConfigKey{}
	for _, k := range ConfigKeys() {
		known[k.Name] = k
	}
	other := map[string]bool{}
	for _, d := range topicConfigDefs {
		other[d.name] = true
	}
	for _, d := range share.ConfigDefs() {
		other[d.Name] = true
	}
	for _, f := range config.Families() {
		other[f.Prefix] = true
		for _, tail := range f.Tails {
			other[tail.Name] = true
		}
	}
	for s, pos := range lits {
		k, ok := known[s]
		switch {
		case ok && k.Ignored:
			t.Errorf("%s: the code names %q, which the registry says is ignored", pos, s)
		case !ok && !other[s] && notConfigKeys[s] == "":
			t.Errorf("%s: %q looks like a property key but is not in the registry: add it to the registry (config.Keys), or to notConfigKeys if it is not a property", pos, s)
		}
	}
	for name, k := range known {
		if !all[name] && !k.Ignored && !strings.Contains(name, "<") {
			t.Errorf("the registry has %s, but no reader names it: remove it or mark it Ignored", name)
		}
	}
}
