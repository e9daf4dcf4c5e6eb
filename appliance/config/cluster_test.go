package config

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

// parseClusterProps runs ParseCluster on props over BrokerDefaults, as
// appliance.ConfigFromProperties does.
func parseClusterProps(props map[string]string, nodeID int32) (Cluster, []Listener, error) {
	defs := BrokerDefaults()
	get := func(k string) string {
		if v, ok := props[k]; ok {
			return v
		}
		return defs[k]
	}
	client, err := ParseListeners(props, get)
	if err != nil {
		return Cluster{}, nil, err
	}
	c, err := ParseCluster(props, get, nodeID)
	return c, client, err
}

func TestParseVoters(t *testing.T) {
	for _, c := range []struct {
		in   string
		want string // the voters as String() joins them, or "" with bad set
		bad  string
	}{
		{in: "", want: ""},
		{in: " , ", want: ""},
		{in: "1@127.0.0.1:9093", want: "1@127.0.0.1:9093"},
		{in: "1@127.0.0.1:9093, 2@127.0.0.2:9093 ,3@127.0.0.3:9093", want: "1@127.0.0.1:9093,2@127.0.0.2:9093,3@127.0.0.3:9093"},
		{in: "0@localhost:1", want: "0@localhost:1"},
		{in: "5@[::1]:9093", want: "5@[::1]:9093"},
		{in: "1@host.example.com:65535", want: "1@host.example.com:65535"},
		{in: "127.0.0.1:9093", bad: "not id@host:port"},
		{in: "x@127.0.0.1:9093", bad: `id "x"`},
		{in: "-1@127.0.0.1:9093", bad: `id "-1"`},
		{in: "2147483648@h:1", bad: "2147483648"},
		{in: "1@127.0.0.1", bad: "not host:port"},
		{in: "1@:9093", bad: "no valid host"},
		{in: "1@127.0.0.1:0", bad: "not in [1, 65535]"},
		{in: "1@127.0.0.1:65536", bad: "not in [1, 65535]"},
		{in: "1@127.0.0.1:http", bad: "not in [1, 65535]"},
		{in: "1@::1:9093", bad: "not host:port"},
		{in: "1@a:1,1@b:2", bad: "appears twice"},
		{in: "1@a@b:1", bad: "no valid host"},
	} {
		vs, err := ParseVoters(c.in)
		if c.bad != "" {
			if err == nil || !errors.Is(err, ErrInvalidVoters) || !strings.Contains(err.Error(), c.bad) {
				t.Errorf("ParseVoters(%q) = %v, %v; want an ErrInvalidVoters naming %q", c.in, vs, err, c.bad)
			}
			continue
		}
		var got []string
		for _, v := range vs {
			got = append(got, v.String())
		}
		if err != nil || strings.Join(got, ",") != c.want {
			t.Errorf("ParseVoters(%q) = %v, %v; want %s", c.in, got, err, c.want)
		}
	}
	if _, err := ParseBootstrapServers("127.0.0.1:9093, [::1]:9094"); err != nil {
		t.Errorf("bootstrap servers: %v", err)
	}
	if _, err := ParseBootstrapServers("127.0.0.1"); err == nil || !strings.Contains(err.Error(), "controller.quorum.bootstrap.servers") {
		t.Errorf("bootstrap server without a port: %v", err)
	}
}

// TestParseCluster: Kafka's KRaft rules for roles, voters and controller
// listeners, and that a node without any of the keys is today's combined
// one-voter node.
func TestParseCluster(t *testing.T) {
	const (
		three  = "1@127.0.0.1:9093,2@127.0.0.2:9093,3@127.0.0.3:9093"
		lis    = "PLAINTEXT://127.0.0.1:9092,CONTROLLER://127.0.0.1:9093"
		ctlLis = "CONTROLLER"
	)
	type kv = map[string]string
	for _, c := range []struct {
		name  string
		props kv
		node  int32
		bad   string
		check func(t *testing.T, c Cluster, client []Listener)
	}{
		{name: "nothing set: combined one-voter node", props: kv{}, node: 1, check: func(t *testing.T, c Cluster, client []Listener) {
			if !c.Broker || !c.Controller || c.QuorumConfigured() || len(c.Roles) != 0 || len(c.ControllerListeners) != 0 ||
				c.InterBrokerListenerName != "PLAINTEXT" || len(client) != 1 {
				t.Errorf("got %+v, client %v", c, client)
			}
			if c.ElectionTimeoutMs != 1000 || c.FetchTimeoutMs != 2000 || c.HeartbeatIntervalMs != 2000 || c.SessionTimeoutMs != 9000 || len(c.Warnings) != 0 {
				t.Errorf("defaults: %+v", c)
			}
		}},
		{name: "combined roles without voters", props: kv{"process.roles": "broker,controller"}, node: 1},
		{name: "kafka combined node", node: 2, props: kv{"process.roles": "broker,controller", "controller.quorum.voters": three,
			"listeners": lis, "controller.listener.names": ctlLis, "broker.rack": " r1 "},
			check: func(t *testing.T, c Cluster, client []Listener) {
				if !c.QuorumConfigured() || len(c.Voters) != 3 || c.Voters[1].Addr() != "127.0.0.2:9093" || c.Rack != "r1" {
					t.Errorf("got %+v", c)
				}
				if len(c.ControllerListeners) != 1 || c.ControllerListeners[0].Protocol != ProtoPlaintext || c.ControllerListeners[0].Addr != "127.0.0.1:9093" {
					t.Errorf("controller listeners %+v (the name maps to PLAINTEXT when the map is unset)", c.ControllerListeners)
				}
				if len(client) != 1 || client[0].Name != "PLAINTEXT" || c.InterBrokerListenerName != "PLAINTEXT" {
					t.Errorf("client listeners %+v: the controller listener is not one", client)
				}
			}},
		{name: "controller listener first", node: 1, props: kv{"controller.quorum.voters": "1@127.0.0.1:9093",
			"listeners": "CONTROLLER://127.0.0.1:9093,CLIENT://127.0.0.1:9092", "controller.listener.names": "controller",
			"listener.security.protocol.map": "CLIENT:SASL_PLAINTEXT,CONTROLLER:PLAINTEXT"},
			check: func(t *testing.T, c Cluster, client []Listener) {
				if len(client) != 1 || client[0].Name != "CLIENT" || c.InterBrokerListenerName != "CLIENT" || c.ControllerListenerNames[0] != "CONTROLLER" {
					t.Errorf("client %v, cluster %+v", client, c)
				}
			}},
		{name: "kafka 4 sample server.properties", node: 1, props: kv{"process.roles": "broker,controller",
			"controller.quorum.bootstrap.servers": "localhost:9093", "listeners": "PLAINTEXT://:9092,CONTROLLER://:9093",
			"inter.broker.listener.name": "PLAINTEXT", "advertised.listeners": "PLAINTEXT://localhost:9092,CONTROLLER://localhost:9093",
			"controller.listener.names":      "CONTROLLER",
			"listener.security.protocol.map": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL"},
			check: func(t *testing.T, c Cluster, client []Listener) {
				if !c.QuorumConfigured() || len(client) != 1 || client[0].AdvertisedHost != "localhost" ||
					len(c.ControllerListeners) != 1 || c.ControllerListeners[0].AdvertisedHost != "localhost" || c.ControllerListeners[0].AdvertisedPort != 9093 {
					t.Errorf("cluster %+v, client %+v", c, client)
				}
			}},
		{name: "bootstrap servers only", node: 1, props: kv{"controller.quorum.bootstrap.servers": "127.0.0.1:9093",
			"listeners": lis, "controller.listener.names": ctlLis},
			check: func(t *testing.T, c Cluster, _ []Listener) {
				if !c.QuorumConfigured() || len(c.Voters) != 0 || c.BootstrapServers[0] != "127.0.0.1:9093" {
					t.Errorf("got %+v", c)
				}
			}},
		{name: "broker-only node", node: 4, props: kv{"process.roles": "broker", "controller.quorum.voters": three,
			"controller.listener.names": ctlLis},
			check: func(t *testing.T, c Cluster, _ []Listener) {
				if !c.Broker || c.Controller || c.ControllerOnly() {
					t.Errorf("got %+v", c)
				}
			}},
		{name: "controller-only node", node: 3, props: kv{"process.roles": "controller", "controller.quorum.voters": three,
			"listeners": "CONTROLLER://127.0.0.3:9093", "controller.listener.names": ctlLis},
			check: func(t *testing.T, c Cluster, client []Listener) {
				if !c.ControllerOnly() || len(client) != 0 || c.InterBrokerListenerName != "" {
					t.Errorf("got %+v, client %v", c, client)
				}
			}},
		{name: "heartbeat above half the session", node: 1, props: kv{"broker.heartbeat.interval.ms": "5000"},
			check: func(t *testing.T, c Cluster, _ []Listener) {
				if len(c.Warnings) != 1 || !strings.Contains(c.Warnings[0], "broker.session.timeout.ms") {
					t.Errorf("warnings %v", c.Warnings)
				}
			}},
		{name: "inter broker listener set", node: 1, props: kv{"listeners": "A://127.0.0.1:1,B://127.0.0.1:2",
			"listener.security.protocol.map": "A:PLAINTEXT,B:PLAINTEXT", "inter.broker.listener.name": "b"},
			check: func(t *testing.T, c Cluster, _ []Listener) {
				if c.InterBrokerListenerName != "B" {
					t.Errorf("inter broker listener %q", c.InterBrokerListenerName)
				}
			}},

		{name: "misspelt role", node: 1, props: kv{"process.roles": "broker,controler"}, bad: `unknown role "controler"`},
		{name: "role twice", node: 1, props: kv{"process.roles": "broker,broker"}, bad: "twice"},
		{name: "invalid voters", node: 1, props: kv{"controller.quorum.voters": "1@127.0.0.1"}, bad: "controller.quorum.voters"},
		{name: "voters with a duplicate id", node: 1, props: kv{"controller.quorum.voters": "1@a:1,1@b:1"}, bad: "appears twice"},
		{name: "controller not among voters", node: 9, props: kv{"process.roles": "broker,controller", "controller.quorum.voters": three,
			"listeners": lis, "controller.listener.names": ctlLis}, bad: "node.id 9 is a controller"},
		{name: "unset roles not among voters", node: 9, props: kv{"controller.quorum.voters": three,
			"listeners": lis, "controller.listener.names": ctlLis}, bad: "not one of controller.quorum.voters [1, 2, 3]"},
		{name: "broker among voters", node: 1, props: kv{"process.roles": "broker", "controller.quorum.voters": three,
			"controller.listener.names": ctlLis}, bad: "just the broker role"},
		{name: "missing controller listener", node: 1, props: kv{"controller.quorum.voters": three}, bad: "controller.listener.names must name at least one"},
		{name: "controller listener not in listeners", node: 1, props: kv{"controller.quorum.voters": three, "controller.listener.names": ctlLis},
			bad: "CONTROLLER is not in listeners"},
		{name: "second controller listener not in listeners", node: 1, props: kv{"controller.quorum.voters": three, "listeners": lis,
			"controller.listener.names": "CONTROLLER,CTL2"}, bad: "CTL2 is not in listeners"},
		{name: "broker-only without quorum", node: 1, props: kv{"process.roles": "broker"}, bad: "needs controller.quorum.voters"},
		{name: "controller-only without quorum", node: 1, props: kv{"process.roles": "controller"}, bad: "needs controller.quorum.voters"},
		{name: "broker-only without controller listener name", node: 4, props: kv{"process.roles": "broker", "controller.quorum.voters": three},
			bad: "controller.listener.names must name at least one listener on a node with just the broker role"},
		{name: "broker-only listening on the controller listener", node: 4, props: kv{"process.roles": "broker", "controller.quorum.voters": three,
			"listeners": lis, "controller.listener.names": ctlLis}, bad: "must not name a listener"},
		{name: "controller-only with a client listener", node: 3, props: kv{"process.roles": "controller", "controller.quorum.voters": three,
			"listeners": lis, "controller.listener.names": ctlLis}, bad: "only hold the controller listeners"},
		{name: "all listeners are controller listeners", node: 1, props: kv{"controller.quorum.voters": "1@127.0.0.1:9093",
			"listeners": "CONTROLLER://127.0.0.1:9093", "controller.listener.names": ctlLis}, bad: "at least one broker listener"},
		{name: "explicit map without the controller listener", node: 1, props: kv{"controller.quorum.voters": three, "listeners": lis,
			"controller.listener.names": ctlLis, "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT"}, bad: "controller listener CONTROLLER"},
		{name: "SASL in use needs an explicit controller mapping", node: 1, props: kv{"controller.quorum.voters": three,
			"listeners": "SASL_PLAINTEXT://127.0.0.1:9092,CONTROLLER://127.0.0.1:9093", "controller.listener.names": ctlLis}, bad: "explicit mapping"},
		{name: "unknown inter broker listener", node: 1, props: kv{"inter.broker.listener.name": "INTERNAL"}, bad: "inter.broker.listener.name=INTERNAL"},
		{name: "inter broker listener is the controller's", node: 1, props: kv{"controller.quorum.voters": "1@127.0.0.1:9093", "listeners": lis,
			"controller.listener.names": ctlLis, "inter.broker.listener.name": "CONTROLLER"}, bad: "names a controller listener"},
		{name: "zero election timeout", node: 1, props: kv{"controller.quorum.election.timeout.ms": "0"}, bad: "controller.quorum.election.timeout.ms must be >= 1"},
		{name: "bad session timeout", node: 1, props: kv{"broker.session.timeout.ms": "9s"}, bad: "broker.session.timeout.ms"},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, client, err := parseClusterProps(c.props, c.node)
			if c.bad != "" {
				if err == nil || !strings.Contains(err.Error(), c.bad) {
					t.Fatalf("got %+v, %v; want an error containing %q", got, err, c.bad)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.check != nil {
				c.check(t, got, client)
			}
		})
	}
}

// TestClusterKeysKnown: the cluster keys are registered, not ignored, and
// a misspelt one gets its suggestion.
func TestClusterKeysKnown(t *testing.T) {
	keys := Keys()
	for _, n := range []string{"process.roles", "node.id", "controller.quorum.voters", "controller.quorum.bootstrap.servers",
		"controller.listener.names", "inter.broker.listener.name", "broker.rack", "controller.quorum.election.timeout.ms",
		"controller.quorum.fetch.timeout.ms", "broker.heartbeat.interval.ms", "broker.session.timeout.ms",
		"metadata.log.max.record.bytes.between.snapshots"} {
		i := slices.IndexFunc(keys, func(k Key) bool { return k.Name == n })
		if i < 0 || keys[i].Ignored {
			t.Errorf("%s: not a registered key that is read", n)
		}
	}
	for key, want := range map[string]string{
		"controller.quorum.voter":              "controller.quorum.voters",
		"process.role":                         "process.roles",
		"controller.listener.name":             "controller.listener.names",
		"broker.session.timout.ms":             "broker.session.timeout.ms",
		"controller.quorum.election.timeout":   "controller.quorum.election.timeout.ms",
		"controller.quorum.bootstrap.server":   "controller.quorum.bootstrap.servers",
		"inter.broker.listner.name":            "inter.broker.listener.name",
		"broker.heartbeat.interval":            "broker.heartbeat.interval.ms",
		"controller.quorum.fetch.timeout.msec": "controller.quorum.fetch.timeout.ms",
	} {
		u := UnknownKeys(map[string]string{key: "1"})
		if len(u) != 1 || u[0].Suggestion != want {
			t.Errorf("%s: %v, want the suggestion %s", key, u, want)
		}
	}
}

// FuzzParseVoters checks that the voters parser never panics, and that
// what it accepts is valid and reads back equal from its String form.
func FuzzParseVoters(f *testing.F) {
	for _, s := range []string{"1@127.0.0.1:9093,2@127.0.0.2:9093", "5@[::1]:1", "", "1@a:1,1@b:2", "x@y:z", "@:", "1@[::1", ",,,"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		vs, err := ParseVoters(s)
		if err != nil {
			return
		}
		ids := map[int32]bool{}
		var parts []string
		for _, v := range vs {
			if v.ID < 0 || ids[v.ID] || v.Host == "" || v.Port < 1 || v.Port > 65535 {
				t.Fatalf("ParseVoters(%q) accepted %+v", s, v)
			}
			ids[v.ID] = true
			parts = append(parts, v.String())
		}
		back, err := ParseVoters(strings.Join(parts, ","))
		if err != nil || !slices.Equal(back, vs) {
			t.Fatalf("ParseVoters(%q) = %v; its String form reads back as %v, %v", s, vs, back, err)
		}
	})
}
