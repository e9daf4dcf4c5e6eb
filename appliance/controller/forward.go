package controller

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"time"

	"github.com/ringbroker/ringbroker/appliance/wire"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Forwarding: a node that is not the active controller sends an admin
// request to it inside an Envelope (key 58, KIP-590) on the leader's
// controller listener, which quorum's TCPTransport hands over
// (TCPConfig.Requests). Envelope rather than a plain client request:
// the leader must authorize the change as the client that asked for it,
// and the Envelope carries the client's principal and address; and the
// controller listener is the one address every node knows of every
// voter (controller.quorum.voters), where broker listeners are only
// known once brokers register. RequestPrincipal is the principal as
// "User:name" (Kafka serializes its KafkaPrincipal instead; only
// ringbroker nodes read it here); ClientHostAddress the client's IP
// bytes, as Kafka sends them. One connection per forwarded request:
// admin changes are rare.

// ForwardedAPIs are the API keys forwarded to the active controller:
// CreateTopics, DeleteTopics, CreatePartitions, AlterConfigs,
// IncrementalAlterConfigs, CreateAcls, DeleteAcls, AlterClientQuotas,
// AlterUserScramCredentials.
var ForwardedAPIs = []int16{19, 20, 37, 33, 44, 30, 31, 49, 51}

// DefaultForwardTimeout bounds a forwarded request whose own timeout is
// not given (Kafka's request.timeout.ms default of its admin client).
const DefaultForwardTimeout = 30 * time.Second

// maxEnvelope is the largest Envelope frame read.
const maxEnvelope = 64 << 20

// Forwarded is a request forwarded to the active controller.
type Forwarded struct {
	// Principal is the client's principal ("User:name"); Host its IP.
	Principal, Host string
	ClientID        string
	Key, Version    int16
	Req             kmsg.Request
}

// ErrNoController: no active controller answered within the timeout.
var ErrNoController = errors.New("no active controller")

// WrapAdmin makes t's ForwardedAPIs forward their requests to the
// active controller when get returns a quorum of which this node is not
// the leader. A forwarded request that reaches a node that lost the
// leadership is not forwarded again; it runs and fails with
// NOT_CONTROLLER.
func WrapAdmin(t *wire.Table, get func() *Quorum) {
	for _, key := range ForwardedAPIs {
		t.Wrap(key, func(h wire.Handler) wire.Handler {
			return func(r *wire.Request) any {
				q := get()
				if _, fwd := r.Conn.(forwardedConn); q == nil || fwd || q.IsLeader() {
					return h(r)
				}
				return wire.Deferred(func() any { return q.forwardOrRun(r, h) })
			}
		})
	}
}

// forwardOrRun forwards r to the active controller until its timeout;
// when this node becomes the leader, or no leader answers in time, r
// runs here (its changes then fail with NOT_CONTROLLER).
func (q *Quorum) forwardOrRun(r *wire.Request, h wire.Handler) any {
	f := &Forwarded{ClientID: r.ClientID, Key: r.Key, Version: r.Version, Req: r.Req, Principal: "User:ANONYMOUS"}
	if r.Conn != nil {
		f.Principal, f.Host = r.Conn.Principal(), r.Conn.PeerHost()
	}
	ctx, cancel := context.WithTimeout(context.Background(), requestTimeout(r.Req))
	defer cancel()
	resp, err := q.Forward(ctx, f)
	if err == nil {
		return resp
	}
	if !errors.Is(err, errIsLeader) {
		q.log.Warn("cannot forward an admin request to the active controller: answering NOT_CONTROLLER", "api_key", r.Key, "err", err)
	}
	return resolve(h(r))
}

// Serve answers f with its handler in t, as if f's client had sent it
// here (its principal and address in r.Conn, authorized by authz when
// not nil); nil when t has no such API version or the answer is no
// response.
func Serve(t *wire.Table, authz wire.Authorizer, f *Forwarded) kmsg.Response {
	api, ok := t.Lookup(f.Key)
	if !ok || f.Version < api.Min || f.Version > api.Max {
		return nil
	}
	r := &wire.Request{Key: f.Key, Version: f.Version, ClientID: f.ClientID, Req: f.Req, Conn: forwardedConn{f}, Authz: authz}
	resp, _ := resolve(api.Handle(r)).(kmsg.Response)
	return resp
}

// forwardedConn is a forwarded request's client as wire.Conn.
type forwardedConn struct{ f *Forwarded }

func (c forwardedConn) Principal() string       { return c.f.Principal }
func (c forwardedConn) PeerAddr() string        { return net.JoinHostPort(c.f.Host, "0") }
func (c forwardedConn) PeerHost() string        { return c.f.Host }
func (c forwardedConn) Listener() string        { return "" }
func (c forwardedConn) Closed() <-chan struct{} { return nil }

// resolve runs a handler's Deferred parts.
func resolve(out any) any {
	for {
		d, ok := out.(wire.Deferred)
		if !ok {
			return out
		}
		out = d()
	}
}

// requestTimeout is the request's own timeout, else DefaultForwardTimeout.
func requestTimeout(req kmsg.Request) time.Duration {
	ms := int32(0)
	switch r := req.(type) {
	case *kmsg.CreateTopicsRequest:
		ms = r.TimeoutMillis
	case *kmsg.DeleteTopicsRequest:
		ms = r.TimeoutMillis
	case *kmsg.CreatePartitionsRequest:
		ms = r.TimeoutMillis
	}
	if ms <= 0 {
		return DefaultForwardTimeout
	}
	return time.Duration(ms) * time.Millisecond
}

var errIsLeader = errors.New("this node is the active controller")

// Forward sends f to the active controller and returns its answer,
// trying again while no leader is known or the one tried answers
// NOT_CONTROLLER or cannot be reached, until ctx ends (ErrNoController)
// or this node becomes the leader (an error: the caller runs f itself).
func (q *Quorum) Forward(ctx context.Context, f *Forwarded) (kmsg.Response, error) {
	var last error
	for {
		if l, ok := q.Leader(); ok {
			if l == q.opts.NodeID {
				return nil, errIsLeader
			}
			resp, err := q.forwardTo(ctx, q.addrs[l], f)
			if err == nil {
				return resp, nil
			}
			last = fmt.Errorf("node %d: %w", l, err)
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("%w within the request's timeout (last: %v)", ErrNoController, last)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// forwardTo sends f in an Envelope to the controller listener at addr.
func (q *Quorum) forwardTo(ctx context.Context, addr string, f *Forwarded) (kmsg.Response, error) {
	if addr == "" {
		return nil, errors.New("no controller listener address")
	}
	env := kmsg.NewPtrEnvelopeRequest()
	env.RequestData = appendRequest(nil, f.Key, f.Version, 0, f.ClientID, f.Req)
	env.RequestPrincipal = []byte(f.Principal)
	if ip := net.ParseIP(f.Host); ip != nil {
		if v4 := ip.To4(); v4 != nil {
			ip = v4
		}
		env.ClientHostAddress = ip
	}
	out, err := q.roundTrip(ctx, addr, env, 0)
	if err != nil {
		return nil, err
	}
	eresp := out.(*kmsg.EnvelopeResponse)
	if eresp.ErrorCode != 0 {
		return nil, kerr.ErrorForCode(eresp.ErrorCode)
	}
	resp := f.Req.ResponseKind()
	resp.SetVersion(f.Version)
	rest, err := readResponseHeader(eresp.ResponseData, resp.IsFlexible())
	if err == nil {
		err = resp.ReadFrom(rest)
	}
	if err != nil {
		return nil, fmt.Errorf("cannot decode the forwarded %s response: %w", kmsg.NameForKey(f.Key), err)
	}
	return resp, nil
}

// appendRequest appends req's header (v1, or v2 with no tagged fields
// when req is flexible) and body.
func appendRequest(dst []byte, key, version int16, corrID int32, clientID string, req kmsg.Request) []byte {
	req.SetVersion(version)
	dst = binary.BigEndian.AppendUint16(dst, uint16(key))
	dst = binary.BigEndian.AppendUint16(dst, uint16(version))
	dst = binary.BigEndian.AppendUint32(dst, uint32(corrID))
	dst = binary.BigEndian.AppendUint16(dst, uint16(len(clientID)))
	dst = append(dst, clientID...)
	if req.IsFlexible() {
		dst = append(dst, 0)
	}
	return req.AppendTo(dst)
}

// readFrame reads one length-prefixed frame.
func readFrame(r *bufio.Reader) ([]byte, error) {
	var hdr [4]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return nil, err
	}
	n := binary.BigEndian.Uint32(hdr[:])
	if n > maxEnvelope {
		return nil, fmt.Errorf("frame of %d bytes is over %d", n, maxEnvelope)
	}
	b := make([]byte, n)
	if _, err := io.ReadFull(r, b); err != nil {
		return nil, err
	}
	return b, nil
}

// skipTags skips a tagged-field section.
func skipTags(b []byte) ([]byte, error) {
	n, k := binary.Uvarint(b)
	if k <= 0 {
		return nil, errors.New("bad tagged fields")
	}
	b = b[k:]
	for range n {
		_, k = binary.Uvarint(b) // tag
		if k <= 0 {
			return nil, errors.New("bad tagged field")
		}
		b = b[k:]
		size, k := binary.Uvarint(b)
		if k <= 0 || uint64(len(b)-k) < size {
			return nil, errors.New("bad tagged field size")
		}
		b = b[k+int(size):]
	}
	return b, nil
}

// readResponseHeader returns the body after a response header.
func readResponseHeader(b []byte, flexible bool) ([]byte, error) {
	if len(b) < 4 {
		return nil, errors.New("response shorter than its header")
	}
	b = b[4:]
	if flexible {
		return skipTags(b)
	}
	return b, nil
}

// requestHeader is a parsed request header.
type requestHeader struct {
	key, version int16
	corrID       int32
	clientID     string
}

// readRequest parses a request (header and body) whose API codec kmsg has.
func readRequest(b []byte) (requestHeader, kmsg.Request, error) {
	var h requestHeader
	if len(b) < 10 {
		return h, nil, fmt.Errorf("%w: request shorter than its header", kerr.InvalidRequest)
	}
	h.key = int16(binary.BigEndian.Uint16(b))
	h.version = int16(binary.BigEndian.Uint16(b[2:]))
	h.corrID = int32(binary.BigEndian.Uint32(b[4:]))
	n := int(int16(binary.BigEndian.Uint16(b[8:])))
	b = b[10:]
	if n > len(b) {
		return h, nil, fmt.Errorf("%w: client id beyond the request", kerr.InvalidRequest)
	}
	if n > 0 {
		h.clientID, b = string(b[:n]), b[n:]
	}
	req := kmsg.RequestForKey(h.key)
	if req == nil || h.version < 0 || h.version > req.MaxVersion() {
		return h, nil, fmt.Errorf("%w: API key %d version %d", kerr.UnsupportedVersion, h.key, h.version)
	}
	req.SetVersion(h.version)
	if req.IsFlexible() {
		var err error
		if b, err = skipTags(b); err != nil {
			return h, nil, fmt.Errorf("%w: %s header: %v", kerr.InvalidRequest, kmsg.NameForKey(h.key), err)
		}
	}
	if err := req.ReadFrom(b); err != nil {
		return h, nil, fmt.Errorf("%w: cannot decode %s v%d: %v", kerr.InvalidRequest, kmsg.NameForKey(h.key), h.version, err)
	}
	return h, req, nil
}

// appendResponse appends resp's header and body (resp at version).
func appendResponse(dst []byte, corrID int32, version int16, resp kmsg.Response) []byte {
	resp.SetVersion(version)
	dst = binary.BigEndian.AppendUint32(dst, uint32(corrID))
	if resp.IsFlexible() {
		dst = append(dst, 0)
	}
	return resp.AppendTo(dst)
}

// serveConn answers the Envelopes on a connection handed over by the
// transport, one at a time, until the peer closes it or sends anything
// else (closed with a log line).
func (q *Quorum) serveConn(conn net.Conn, r *bufio.Reader) {
	select {
	case <-q.ready:
	case <-time.After(30 * time.Second):
		return
	}
	if q.node == nil {
		return // Open failed
	}
	for {
		frame, err := readFrame(r)
		if err != nil {
			return
		}
		out, err := q.serveEnvelope(frame)
		if err != nil {
			q.log.Warn("bad request on the controller listener: connection closed", "remote", conn.RemoteAddr().String(), "err", err)
			return
		}
		if _, err := conn.Write(out); err != nil {
			return
		}
	}
}

// serveEnvelope answers one Envelope frame.
func (q *Quorum) serveEnvelope(frame []byte) ([]byte, error) {
	h, req, err := readRequest(frame)
	if err != nil {
		return nil, err
	}
	switch req.(type) {
	case *kmsg.BrokerRegistrationRequest, *kmsg.BrokerHeartbeatRequest, *kmsg.AllocateProducerIDsRequest:
		out := appendResponse([]byte{0, 0, 0, 0}, h.corrID, h.version, q.servePlain(req))
		binary.BigEndian.PutUint32(out, uint32(len(out)-4))
		return out, nil
	}
	env, ok := req.(*kmsg.EnvelopeRequest)
	if !ok {
		return nil, fmt.Errorf("%s is not served on the controller listener, only Envelope, BrokerRegistration, BrokerHeartbeat and AllocateProducerIds", kmsg.NameForKey(h.key))
	}
	eresp := kmsg.NewPtrEnvelopeResponse()
	inner, ireq, err := readRequest(env.RequestData)
	switch {
	case err != nil:
		eresp.ErrorCode = wire.ErrCode(err)
	case !q.IsLeader():
		eresp.ErrorCode = kerr.NotController.Code
	default:
		f := &Forwarded{Principal: string(env.RequestPrincipal), ClientID: inner.clientID, Key: inner.key, Version: inner.version, Req: ireq}
		if len(env.ClientHostAddress) == 4 || len(env.ClientHostAddress) == 16 {
			f.Host = net.IP(env.ClientHostAddress).String()
		}
		resp := q.host.Serve(f)
		if resp == nil {
			eresp.ErrorCode = kerr.UnknownServerError.Code
			break
		}
		eresp.ResponseData = appendResponse(nil, inner.corrID, inner.version, resp)
	}
	out := appendResponse([]byte{0, 0, 0, 0}, h.corrID, h.version, eresp)
	binary.BigEndian.PutUint32(out, uint32(len(out)-4))
	return out, nil
}
