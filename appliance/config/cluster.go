package config

// The cluster section: KRaft roles, the controller quorum and broker
// membership, with Kafka's names, defaults and validation (KafkaConfig's
// validateValues, KRaftConfigs, QuorumConfig). A node with none of these
// set is what ringbroker always was: broker and controller of a one-voter
// quorum of itself, formatting its log directory on first start.

import (
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
)

// Process roles (process.roles).
const (
	RoleBroker     = "broker"
	RoleController = "controller"
)

// Voter is one entry of controller.quorum.voters, id@host:port.
type Voter struct {
	// ID is the voter's node.id.
	ID int32
	// Host and Port are its controller listener's address.
	Host string
	Port int
}

// Addr is the voter's host:port (IPv6 hosts in brackets).
func (v Voter) Addr() string { return net.JoinHostPort(v.Host, strconv.Itoa(v.Port)) }

// String is the voter as controller.quorum.voters writes it, id@host:port.
func (v Voter) String() string { return strconv.Itoa(int(v.ID)) + "@" + v.Addr() }

// ErrInvalidVoters is wrapped by ParseVoters's errors.
var ErrInvalidVoters = errors.New("invalid controller.quorum.voters")

// ParseVoters parses controller.quorum.voters: comma-separated
// id@host:port entries (blanks around entries ignored, IPv6 hosts in
// brackets). Ids are int32 >= 0 and unique, hosts non-empty, ports in
// [1, 65535]. An empty value is no voters. Errors wrap ErrInvalidVoters and
// name the entry.
func ParseVoters(s string) ([]Voter, error) {
	var out []Voter
	for _, e := range strings.Split(s, ",") {
		e = strings.TrimSpace(e)
		if e == "" {
			continue
		}
		idS, hp, ok := strings.Cut(e, "@")
		if !ok {
			return nil, fmt.Errorf("%w: entry %q is not id@host:port", ErrInvalidVoters, e)
		}
		id, err := strconv.ParseInt(idS, 10, 32)
		if err != nil || id < 0 {
			return nil, fmt.Errorf("%w: entry %q: id %q is not a node id >= 0", ErrInvalidVoters, e, idS)
		}
		host, port, err := parseHostPort(hp)
		if err != nil {
			return nil, fmt.Errorf("%w: entry %q: %v", ErrInvalidVoters, e, err)
		}
		for _, v := range out {
			if v.ID == int32(id) {
				return nil, fmt.Errorf("%w: node id %d appears twice (%s and %s)", ErrInvalidVoters, id, v, e)
			}
		}
		out = append(out, Voter{ID: int32(id), Host: host, Port: port})
	}
	return out, nil
}

// ParseBootstrapServers parses controller.quorum.bootstrap.servers:
// comma-separated host:port entries with the rules of ParseVoters's
// addresses. It returns them as host:port, in order.
func ParseBootstrapServers(s string) ([]string, error) {
	var out []string
	for _, e := range strings.Split(s, ",") {
		e = strings.TrimSpace(e)
		if e == "" {
			continue
		}
		host, port, err := parseHostPort(e)
		if err != nil {
			return nil, fmt.Errorf("invalid controller.quorum.bootstrap.servers entry %q: %w", e, err)
		}
		out = append(out, net.JoinHostPort(host, strconv.Itoa(port)))
	}
	return out, nil
}

// parseHostPort splits host:port with a non-empty host and a port in
// [1, 65535].
func parseHostPort(hp string) (string, int, error) {
	host, portS, err := net.SplitHostPort(hp)
	if err != nil {
		return "", 0, fmt.Errorf("%q is not host:port: %w", hp, err)
	}
	if host == "" || strings.ContainsAny(host, " \t@,/") {
		return "", 0, fmt.Errorf("%q has no valid host", hp)
	}
	port, err := strconv.Atoi(portS)
	if err != nil || port < 1 || port > 65535 {
		return "", 0, fmt.Errorf("port %q of %q is not in [1, 65535]", portS, hp)
	}
	return host, port, nil
}

// Cluster is the typed cluster section of the broker configuration.
type Cluster struct {
	// Roles is process.roles as given, each role once; empty when unset.
	Roles []string
	// Broker and Controller are the roles in effect: both when Roles is
	// empty (a combined node, as ringbroker always ran).
	Broker, Controller bool
	// Voters is controller.quorum.voters (ParseVoters), in config order.
	Voters []Voter
	// BootstrapServers is controller.quorum.bootstrap.servers (host:port).
	BootstrapServers []string
	// ControllerListenerNames is controller.listener.names, upper-cased.
	ControllerListenerNames []string
	// ControllerListeners are the entries of listeners that
	// ControllerListenerNames names, in listeners order: the quorum's, not
	// bound for clients and never advertised to them.
	ControllerListeners []Listener
	// InterBrokerListenerName is inter.broker.listener.name, by default the
	// first client listener (Kafka's default is the listener named by
	// security.inter.broker.protocol, PLAINTEXT; the first client listener
	// keeps one-node configs without a PLAINTEXT listener valid). "" on a
	// controller-only node.
	InterBrokerListenerName string
	// Rack is broker.rack, "" for none.
	Rack string
	// ElectionTimeoutMs is controller.quorum.election.timeout.ms (1000).
	ElectionTimeoutMs int32
	// FetchTimeoutMs is controller.quorum.fetch.timeout.ms (2000).
	FetchTimeoutMs int32
	// HeartbeatIntervalMs is broker.heartbeat.interval.ms (2000).
	HeartbeatIntervalMs int32
	// SessionTimeoutMs is broker.session.timeout.ms (9000).
	SessionTimeoutMs int32
	// Warnings are what Kafka logs and still starts with (a heartbeat
	// interval above half the session timeout), for the binary to log.
	Warnings []string
}

// QuorumConfigured reports whether the node is configured to join a
// controller quorum of several nodes: controller.quorum.voters or
// controller.quorum.bootstrap.servers is set. Such a node never formats
// its log directory on its own (it would found a new cluster): it needs
// `ringbroker format`. A node without either is a one-voter quorum of
// itself.
func (c *Cluster) QuorumConfigured() bool {
	return len(c.Voters) > 0 || len(c.BootstrapServers) > 0
}

// ControllerOnly reports whether process.roles is controller alone.
func (c *Cluster) ControllerOnly() bool { return c.Controller && !c.Broker }

// IsVoter reports whether id is among the Voters.
func (c *Cluster) IsVoter(id int32) bool {
	return slices.ContainsFunc(c.Voters, func(v Voter) bool { return v.ID == id })
}

// clusterDefault is the registry default of a cluster key.
func clusterDefault(name string) string {
	for _, k := range configKeys {
		if k.Name == name {
			return k.Default
		}
	}
	return ""
}

// ParseCluster builds the cluster section from the properties (get
// applies the broker defaults to the listener keys; the cluster keys'
// defaults are the registry's) for the node nodeID, and validates it as
// Kafka does:
//   - process.roles holds broker and controller only, each once;
//   - with controller.quorum.voters set, a node with the controller role is
//     among the voters and a broker-only node is not;
//   - a broker-only or controller-only node needs voters or bootstrap
//     servers (only a combined node may be a one-voter quorum of itself);
//   - a controller with a quorum configured names at least one controller
//     listener, and every name in controller.listener.names appears in
//     listeners; a broker-only node's controller listeners do not appear
//     in listeners, and it names at least one;
//   - a controller-only node's listeners are all controller listeners;
//   - a node with the broker role has a client listener, and
//     inter.broker.listener.name, when set, names one;
//   - the timeouts are >= 1.
//
// Errors name the property at fault.
func ParseCluster(props map[string]string, get func(string) string, nodeID int32) (Cluster, error) {
	val := func(k string) string {
		if v, ok := props[k]; ok {
			return strings.TrimSpace(v)
		}
		return clusterDefault(k)
	}
	var c Cluster
	for _, r := range strings.Split(val("process.roles"), ",") {
		r = strings.TrimSpace(r)
		switch {
		case r == "":
			continue
		case r != RoleBroker && r != RoleController:
			return Cluster{}, fmt.Errorf("process.roles=%q: unknown role %q (only broker and controller are allowed)", val("process.roles"), r)
		case slices.Contains(c.Roles, r):
			return Cluster{}, fmt.Errorf("process.roles=%q names %s twice", val("process.roles"), r)
		}
		c.Roles = append(c.Roles, r)
	}
	c.Broker = len(c.Roles) == 0 || slices.Contains(c.Roles, RoleBroker)
	c.Controller = len(c.Roles) == 0 || slices.Contains(c.Roles, RoleController)

	var err error
	if c.Voters, err = ParseVoters(val("controller.quorum.voters")); err != nil {
		return Cluster{}, err
	}
	if c.BootstrapServers, err = ParseBootstrapServers(val("controller.quorum.bootstrap.servers")); err != nil {
		return Cluster{}, err
	}
	c.ControllerListenerNames = controllerListenerNames(props)
	var client []Listener
	if client, c.ControllerListeners, err = parseListenerSet(props, get); err != nil {
		return Cluster{}, err
	}
	c.Rack = val("broker.rack")
	for _, t := range []struct {
		key string
		dst *int32
	}{
		{"controller.quorum.election.timeout.ms", &c.ElectionTimeoutMs},
		{"controller.quorum.fetch.timeout.ms", &c.FetchTimeoutMs},
		{"broker.heartbeat.interval.ms", &c.HeartbeatIntervalMs},
		{"broker.session.timeout.ms", &c.SessionTimeoutMs},
	} {
		n, err := strconv.ParseInt(val(t.key), 10, 32)
		if err != nil {
			return Cluster{}, fmt.Errorf("cannot parse %s=%q: %w", t.key, val(t.key), err)
		}
		if n < 1 {
			return Cluster{}, fmt.Errorf("%s must be >= 1, got %d", t.key, n)
		}
		*t.dst = int32(n)
	}
	if 2*int64(c.HeartbeatIntervalMs) > int64(c.SessionTimeoutMs) {
		c.Warnings = append(c.Warnings, fmt.Sprintf("broker.heartbeat.interval.ms (%d ms) should be at most half of broker.session.timeout.ms (%d ms): "+
			"a broker that misses one heartbeat may lose its session", c.HeartbeatIntervalMs, c.SessionTimeoutMs))
	}
	if err := c.validateRoles(nodeID, client, val); err != nil {
		return Cluster{}, err
	}
	if err := c.validateInterBroker(client, val("inter.broker.listener.name"), props); err != nil {
		return Cluster{}, err
	}
	return c, nil
}

// validateRoles checks the quorum and controller listener rules of
// ParseCluster for the roles in effect.
func (c *Cluster) validateRoles(nodeID int32, client []Listener, val func(string) string) error {
	voterIDs := func() string {
		ids := make([]string, len(c.Voters))
		for i, v := range c.Voters {
			ids[i] = strconv.Itoa(int(v.ID))
		}
		return "[" + strings.Join(ids, ", ") + "]"
	}
	if (c.ControllerOnly() || c.Broker && !c.Controller) && !c.QuorumConfigured() {
		return fmt.Errorf("process.roles=%s needs controller.quorum.voters or controller.quorum.bootstrap.servers: "+
			"only a node that is both broker and controller may run as a one-voter quorum of itself", val("process.roles"))
	}
	if c.Controller && len(c.Voters) > 0 && !c.IsVoter(nodeID) {
		return fmt.Errorf("node.id %d is a controller (process.roles=%s) but not one of controller.quorum.voters %s",
			nodeID, rolesString(c.Roles), voterIDs())
	}
	if !c.Controller && c.IsVoter(nodeID) {
		return fmt.Errorf("node.id %d has just the broker role but is one of controller.quorum.voters %s", nodeID, voterIDs())
	}
	if c.Controller {
		for _, n := range c.ControllerListenerNames {
			if !slices.ContainsFunc(c.ControllerListeners, func(l Listener) bool { return l.Name == n }) {
				return fmt.Errorf("controller.listener.names=%s: %s is not in listeners (%s); a controller's controller listeners must all appear there",
					strings.Join(c.ControllerListenerNames, ","), n, val("listeners"))
			}
		}
		if c.QuorumConfigured() && len(c.ControllerListeners) == 0 {
			return fmt.Errorf("controller.listener.names must name at least one listener of listeners (%s) on a controller of a quorum (controller.quorum.voters or controller.quorum.bootstrap.servers set)", val("listeners"))
		}
	}
	if c.ControllerOnly() && len(client) > 0 {
		return fmt.Errorf("process.roles=controller: listeners may only hold the controller listeners of controller.listener.names, not %s", client[0].Name)
	}
	if c.Broker && !c.Controller {
		if len(c.ControllerListenerNames) == 0 {
			return errors.New("controller.listener.names must name at least one listener on a node with just the broker role (the listener it reaches the controllers on)")
		}
		if len(c.ControllerListeners) > 0 {
			return fmt.Errorf("controller.listener.names must not name a listener of listeners (%s) on a node with just the broker role", c.ControllerListeners[0].Name)
		}
	}
	if c.Broker && len(client) == 0 {
		return errors.New("there must be at least one broker listener: do all listeners appear in controller.listener.names?")
	}
	return nil
}

// validateInterBroker sets InterBrokerListenerName from name (or the
// first client listener) and checks it names a client listener.
func (c *Cluster) validateInterBroker(client []Listener, name string, props map[string]string) error {
	name = strings.ToUpper(name)
	if name == "" {
		if len(client) > 0 {
			c.InterBrokerListenerName = client[0].Name
		}
		return nil
	}
	if slices.Contains(c.ControllerListenerNames, name) {
		return fmt.Errorf("inter.broker.listener.name=%s names a controller listener (controller.listener.names=%s)", name, props["controller.listener.names"])
	}
	if !c.Broker {
		c.InterBrokerListenerName = name
		return nil
	}
	names := make([]string, len(client))
	for i, l := range client {
		names[i] = l.Name
	}
	if !slices.Contains(names, name) {
		return fmt.Errorf("inter.broker.listener.name=%s must name a broker listener; the listeners are %s", name, strings.Join(names, ","))
	}
	c.InterBrokerListenerName = name
	return nil
}

// rolesString is the roles in effect as process.roles would say them.
func rolesString(roles []string) string {
	if len(roles) == 0 {
		return "broker,controller (unset)"
	}
	return strings.Join(roles, ",")
}
