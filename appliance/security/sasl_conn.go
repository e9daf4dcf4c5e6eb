package security

import "github.com/ringbroker/ringbroker/appliance/wire"

// SASLConn is what the SASL handlers need of a request's connection. The
// broker's connections implement it; the handlers find it as r.Conn. Its
// state is written and read only by the connection's dispatching goroutine
// or loop, which runs the handlers one at a time.
type SASLConn interface {
	wire.Conn
	// SASLListener returns the SASL settings of the listener that
	// accepted the connection; ok is false for a listener without SASL.
	SASLListener() (l SASLListener, ok bool)
	// SASLPending reports whether the connection still has to
	// authenticate.
	SASLPending() bool
	// SASLExchange is the connection's exchange in progress.
	SASLExchange() *Exchange
	// Authenticated ends a successful exchange: User:<user> is the
	// principal from now on.
	Authenticated(user string)
}

// SASLListener is what the SASL handlers know of a SASL listener.
type SASLListener struct {
	Name       string            // the listener's name
	Mechanisms []string          // sasl.enabled.mechanisms
	PlainUsers map[string]string // PLAIN users and their passwords
}

// mechanismEnabled reports whether mechanism m is enabled on l.
func (l SASLListener) mechanismEnabled(m string) bool {
	for _, e := range l.Mechanisms {
		if e == m {
			return true
		}
	}
	return false
}

// Exchange is a connection's SASL exchange in progress: the mechanism
// SaslHandshake chose and, for SCRAM, the server's state. The zero
// Exchange is none.
type Exchange struct {
	Mechanism string
	scram     *ScramServer
}

// saslConn is r's connection as a SASLConn; nil when r has none or it
// keeps no SASL state.
func saslConn(r *wire.Request) SASLConn {
	c, _ := r.Conn.(SASLConn)
	return c
}
