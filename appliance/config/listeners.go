package config

// Listeners as Kafka configures them (KIP-103): listeners names one or more
// endpoints NAME://host:port, listener.security.protocol.map gives each
// name its security protocol, advertised.listeners the address clients are
// told for each name. Security protocols served: PLAINTEXT and
// SASL_PLAINTEXT (KIP-43 SASL with PLAIN, KIP-84 SCRAM-SHA-256 and
// SCRAM-SHA-512), SSL and SASL_SSL (TLS 1.2 and 1.3 with crypto/tls; the
// settings in tls.go). Controller listeners are PLAINTEXT or SASL_PLAINTEXT
// only (no TLS on the quorum yet).
//
// SASL settings, per listener first, then broker-wide:
//   - listener.name.<name>.sasl.enabled.mechanisms, sasl.enabled.mechanisms:
//     default "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512" (Kafka's default is GSSAPI,
//     which ringbroker does not implement);
//   - PLAIN users from the JAAS option user_<name>="<password>" of
//     listener.name.<name>.plain.sasl.jaas.config, else sasl.jaas.config;
//   - SCRAM credentials from the metadata image (AlterUserScramCredentials).

import (
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
)

// Security protocols (Kafka's SecurityProtocol names).
const (
	ProtoPlaintext     = "PLAINTEXT"
	ProtoSaslPlaintext = "SASL_PLAINTEXT"
	ProtoSSL           = "SSL"
	ProtoSaslSSL       = "SASL_SSL"
)

// SASL mechanism names (SaslHandshake, sasl.enabled.mechanisms).
const (
	mechPlain       = "PLAIN"
	mechScramSHA256 = "SCRAM-SHA-256"
	mechScramSHA512 = "SCRAM-SHA-512"
)

// Listener is one entry of listeners with what its connections need.
type Listener struct {
	// Name is the listener name (PLAINTEXT, SASL_PLAINTEXT, or a custom
	// one such as CLIENT), upper case as in the config.
	Name string
	// Protocol is the security protocol: PLAINTEXT, SASL_PLAINTEXT, SSL
	// or SASL_SSL.
	Protocol string
	// Addr is the host:port to bind ("" host: every interface).
	Addr string
	// AdvertisedHost and AdvertisedPort are what Metadata, FindCoordinator
	// and DescribeCluster answer on this listener: from advertised.listeners
	// (same name), else the bound address; an empty or wildcard host is
	// 127.0.0.1. Port 0 is replaced by the bound port at start.
	AdvertisedHost string
	AdvertisedPort int32
	// Mechanisms are the enabled SASL mechanisms, in config order
	// (SASL_PLAINTEXT only).
	Mechanisms []string
	// PlainUsers maps PLAIN user names to passwords (SASL_PLAINTEXT with
	// PLAIN enabled only).
	PlainUsers map[string]string
	// TLS is set on SSL and SASL_SSL listeners: their server config and
	// principal mapping rules.
	TLS *ListenerTLS
}

// SASL reports whether the listener authenticates with SASL.
func (l *Listener) SASL() bool { return l.Protocol == ProtoSaslPlaintext || l.Protocol == ProtoSaslSSL }

// MechanismEnabled reports whether mechanism m is enabled on l.
func (l *Listener) MechanismEnabled(m string) bool {
	for _, e := range l.Mechanisms {
		if e == m {
			return true
		}
	}
	return false
}

// parseSecurityProtocolMap parses listener.security.protocol.map,
// "NAME:PROTOCOL,...".
func parseSecurityProtocolMap(s string) (map[string]string, error) {
	out := map[string]string{}
	for _, e := range strings.Split(s, ",") {
		e = strings.TrimSpace(e)
		if e == "" {
			continue
		}
		name, proto, ok := strings.Cut(e, ":")
		name, proto = strings.TrimSpace(name), strings.ToUpper(strings.TrimSpace(proto))
		if !ok || name == "" {
			return nil, fmt.Errorf("cannot parse listener.security.protocol.map entry %q: want NAME:PROTOCOL", e)
		}
		switch proto {
		case ProtoPlaintext, ProtoSaslPlaintext, ProtoSSL, ProtoSaslSSL:
		default:
			return nil, fmt.Errorf("listener.security.protocol.map entry %q: unknown security protocol %q", e, proto)
		}
		out[strings.ToUpper(name)] = proto
	}
	return out, nil
}

// endpoint is one parsed NAME://host:port entry.
type endpoint struct {
	name string
	host string
	port int
}

// parseEndpoints parses a listeners or advertised.listeners value:
// comma-separated NAME://host:port entries (IPv6 hosts in brackets); an
// entry without "NAME://" is PLAINTEXT. Names are upper-cased and must be
// unique.
func parseEndpoints(key, s string) ([]endpoint, error) {
	var out []endpoint
	seen := map[string]bool{}
	for _, e := range strings.Split(s, ",") {
		e = strings.TrimSpace(e)
		if e == "" {
			continue
		}
		name, hp := ProtoPlaintext, e
		if i := strings.Index(e, "://"); i >= 0 {
			name, hp = strings.ToUpper(e[:i]), e[i+3:]
		}
		if name == "" {
			return nil, fmt.Errorf("cannot parse %s entry %q: empty listener name", key, e)
		}
		host, portS, err := net.SplitHostPort(hp)
		if err != nil {
			return nil, fmt.Errorf("cannot parse %s entry %q: %w", key, e, err)
		}
		port, err := strconv.Atoi(portS)
		if err != nil || port < 0 || port > 65535 {
			return nil, fmt.Errorf("cannot parse %s entry %q: port %q is not in [0, 65535]", key, e, portS)
		}
		if seen[name] {
			return nil, fmt.Errorf("%s names listener %s twice", key, name)
		}
		seen[name] = true
		out = append(out, endpoint{name: name, host: host, port: port})
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s is empty", key)
	}
	return out, nil
}

// ParseListeners builds the client listeners from the properties (get
// applies the defaults): every entry of listeners except the controller
// listeners that controller.listener.names names, which are the quorum's
// (ParseCluster) and are never advertised to clients. Errors name the
// property at fault.
func ParseListeners(props map[string]string, get func(string) string) ([]Listener, error) {
	client, _, err := parseListenerSet(props, get)
	return client, err
}

// parseListenerSet parses listeners, advertised.listeners and the security
// protocol map, and splits the listeners into client listeners and
// controller listeners (those controller.listener.names names), each in
// listeners order.
//
// When listener.security.protocol.map is not set, a controller listener
// name it lacks maps to PLAINTEXT, as Kafka's KRaft mode does, unless a
// listener name is SSL, SASL_PLAINTEXT or SASL_SSL: then each controller
// listener needs an explicit mapping.
func parseListenerSet(props map[string]string, get func(string) string) (client, controller []Listener, err error) {
	pmap, err := parseSecurityProtocolMap(get("listener.security.protocol.map"))
	if err != nil {
		return nil, nil, err
	}
	eps, err := parseEndpoints("listeners", get("listeners"))
	if err != nil {
		return nil, nil, err
	}
	ctlNames := controllerListenerNames(props)
	if _, explicit := props["listener.security.protocol.map"]; !explicit && len(ctlNames) > 0 {
		secure := false
		for _, ep := range eps {
			secure = secure || ep.name == ProtoSSL || ep.name == ProtoSaslPlaintext || ep.name == ProtoSaslSSL
		}
		for _, n := range ctlNames {
			secure = secure || n == ProtoSSL || n == ProtoSaslPlaintext || n == ProtoSaslSSL
		}
		for _, n := range ctlNames {
			if _, ok := pmap[n]; !ok && !secure {
				pmap[n] = ProtoPlaintext
			}
		}
	}
	adv := map[string]endpoint{}
	if s := strings.TrimSpace(props["advertised.listeners"]); s != "" {
		aeps, err := parseEndpoints("advertised.listeners", s)
		if err != nil {
			return nil, nil, err
		}
		for _, a := range aeps {
			adv[a.name] = a
		}
	}
	var out []Listener
	for _, ep := range eps {
		proto, ok := pmap[ep.name]
		if !ok {
			if slices.Contains(ctlNames, ep.name) {
				return nil, nil, fmt.Errorf("controller listener %s (controller.listener.names) is not in listener.security.protocol.map (%s): "+
					"an explicit mapping for each controller listener is needed when the map is set or SSL or SASL listeners are used", ep.name, get("listener.security.protocol.map"))
			}
			return nil, nil, fmt.Errorf("listener %s is not in listener.security.protocol.map (%s)", ep.name, get("listener.security.protocol.map"))
		}
		if (proto == ProtoSSL || proto == ProtoSaslSSL) && slices.Contains(ctlNames, ep.name) {
			return nil, nil, fmt.Errorf("controller listener %s uses security protocol %s: TLS is not implemented on controller listeners, use PLAINTEXT or SASL_PLAINTEXT", ep.name, proto)
		}
		l := Listener{Name: ep.name, Protocol: proto, Addr: net.JoinHostPort(ep.host, strconv.Itoa(ep.port))}
		a, ok := adv[ep.name]
		if !ok {
			a = ep
		}
		l.AdvertisedHost, l.AdvertisedPort = a.host, int32(a.port)
		if l.AdvertisedHost == "" || l.AdvertisedHost == "0.0.0.0" || l.AdvertisedHost == "::" {
			l.AdvertisedHost = "127.0.0.1"
		}
		if l.SASL() {
			if err := l.parseSASL(props, get); err != nil {
				return nil, nil, err
			}
		}
		if proto == ProtoSSL || proto == ProtoSaslSSL {
			if err := l.parseTLS(props, get); err != nil {
				return nil, nil, err
			}
		}
		out = append(out, l)
	}
	for name := range adv {
		found := false
		for _, l := range out {
			found = found || l.Name == name
		}
		if !found {
			return nil, nil, fmt.Errorf("advertised.listeners names %s, which listeners does not", name)
		}
	}
	for _, l := range out {
		if slices.Contains(ctlNames, l.Name) {
			controller = append(controller, l)
		} else {
			client = append(client, l)
		}
	}
	return client, controller, nil
}

// controllerListenerNames is controller.listener.names split at commas,
// upper-cased as listener names are, blanks dropped.
func controllerListenerNames(props map[string]string) []string {
	var out []string
	for _, n := range strings.Split(props["controller.listener.names"], ",") {
		if n = strings.ToUpper(strings.TrimSpace(n)); n != "" {
			out = append(out, n)
		}
	}
	return out
}

// parseSASL reads l's SASL mechanisms and PLAIN users.
func (l *Listener) parseSASL(props map[string]string, get func(string) string) error {
	prefix := "listener.name." + strings.ToLower(l.Name) + "."
	key := prefix + "sasl.enabled.mechanisms"
	mechs, ok := props[key]
	if !ok {
		key = "sasl.enabled.mechanisms"
		mechs = get(key)
	}
	for _, m := range strings.Split(mechs, ",") {
		m = strings.TrimSpace(m)
		switch m {
		case "":
			continue
		case mechPlain, mechScramSHA256, mechScramSHA512:
			if !l.MechanismEnabled(m) {
				l.Mechanisms = append(l.Mechanisms, m)
			}
		default:
			return fmt.Errorf("%s=%q: mechanism %q is not supported (PLAIN, SCRAM-SHA-256 and SCRAM-SHA-512 are)", key, mechs, m)
		}
	}
	if len(l.Mechanisms) == 0 {
		return fmt.Errorf("listener %s is %s but %s enables no mechanism", l.Name, l.Protocol, key)
	}
	if !l.MechanismEnabled(mechPlain) {
		return nil
	}
	for _, k := range []string{prefix + "plain.sasl.jaas.config", "sasl.jaas.config"} {
		v, ok := props[k]
		if !ok {
			continue
		}
		users, err := ParsePlainJAAS(v)
		if err != nil {
			return fmt.Errorf("cannot parse %s: %w", k, err)
		}
		l.PlainUsers = users
		return nil
	}
	l.PlainUsers = map[string]string{}
	return nil
}

// jaasModule is one login module entry of a JAAS configuration.
type jaasModule struct {
	class   string
	flag    string
	options map[string]string
}

// parseJAAS parses the value of a sasl.jaas.config property: one or more
// "<LoginModule class> <required|requisite|sufficient|optional>
// key=value ... ;" entries, values plain or double-quoted (backslash
// escapes the next character inside quotes).
func parseJAAS(s string) ([]jaasModule, error) {
	var mods []jaasModule
	i := 0
	skip := func() {
		for i < len(s) && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r') {
			i++
		}
	}
	word := func() string {
		start := i
		for i < len(s) && !strings.ContainsRune(" \t\r\n=;\"", rune(s[i])) {
			i++
		}
		return s[start:i]
	}
	for {
		skip()
		if i >= len(s) {
			break
		}
		m := jaasModule{class: word(), options: map[string]string{}}
		if m.class == "" {
			return nil, fmt.Errorf("expected a login module class at offset %d", i)
		}
		skip()
		m.flag = word()
		switch m.flag {
		case "required", "requisite", "sufficient", "optional":
		default:
			return nil, fmt.Errorf("login module %s: control flag %q is not required, requisite, sufficient or optional", m.class, m.flag)
		}
		for {
			skip()
			if i >= len(s) {
				return nil, fmt.Errorf("login module %s: missing ';' at the end", m.class)
			}
			if s[i] == ';' {
				i++
				break
			}
			k := word()
			skip()
			if k == "" || i >= len(s) || s[i] != '=' {
				return nil, fmt.Errorf("login module %s: expected key=value at offset %d", m.class, i)
			}
			i++
			skip()
			var v string
			if i < len(s) && s[i] == '"' {
				i++
				var sb strings.Builder
				closed := false
				for i < len(s) {
					c := s[i]
					i++
					if c == '\\' && i < len(s) {
						sb.WriteByte(s[i])
						i++
						continue
					}
					if c == '"' {
						closed = true
						break
					}
					sb.WriteByte(c)
				}
				if !closed {
					return nil, fmt.Errorf("login module %s: unterminated quoted value of %s", m.class, k)
				}
				v = sb.String()
			} else {
				v = word()
			}
			m.options[k] = v
		}
		mods = append(mods, m)
	}
	if len(mods) == 0 {
		return nil, fmt.Errorf("no login module")
	}
	return mods, nil
}

// plainLoginModule is Kafka's PLAIN login module class.
const plainLoginModule = "org.apache.kafka.common.security.plain.PlainLoginModule"

// ParsePlainJAAS returns the PLAIN users of a JAAS configuration: the
// user_<name>="<password>" options of its PlainLoginModule entries (other
// modules, and username/password, the broker's own client credentials, are
// ignored).
func ParsePlainJAAS(s string) (map[string]string, error) {
	mods, err := parseJAAS(s)
	if err != nil {
		return nil, err
	}
	users := map[string]string{}
	for _, m := range mods {
		if m.class != plainLoginModule {
			continue
		}
		for k, v := range m.options {
			if name, ok := strings.CutPrefix(k, "user_"); ok && name != "" {
				users[name] = v
			}
		}
	}
	return users, nil
}
