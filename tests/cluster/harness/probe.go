package harness

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// DialFunc opens a TCP connection; net.Dialer's DialContext is one, and
// Network.Dialer gives one that dials from inside a node's namespace.
type DialFunc func(ctx context.Context, network, addr string) (net.Conn, error)

// Probe checks that addr accepts a TCP connection and answers an
// ApiVersions v0 request (the request every Kafka client sends first) with
// error code 0 and a non-empty list of API keys. dial nil dials from this
// process's namespace. The probe gives up when ctx ends.
func Probe(ctx context.Context, dial DialFunc, addr string) error {
	if dial == nil {
		var d net.Dialer
		dial = d.DialContext
	}
	conn, err := dial(ctx, "tcp", addr)
	if err != nil {
		return err
	}
	defer conn.Close()
	if dl, ok := ctx.Deadline(); ok {
		conn.SetDeadline(dl)
	} else {
		conn.SetDeadline(time.Now().Add(10 * time.Second))
	}
	stop := context.AfterFunc(ctx, func() { conn.SetDeadline(time.Now()) })
	defer stop()

	const corrID = 0x52420001
	clientID := "ringbroker-harness"
	req := kmsg.NewApiVersionsRequest()
	req.Version = 0
	body := req.AppendTo(nil)
	msg := binary.BigEndian.AppendUint32(nil, uint32(2+2+4+2+len(clientID)+len(body)))
	msg = binary.BigEndian.AppendUint16(msg, uint16(req.Key()))
	msg = binary.BigEndian.AppendUint16(msg, 0)
	msg = binary.BigEndian.AppendUint32(msg, corrID)
	msg = binary.BigEndian.AppendUint16(msg, uint16(len(clientID)))
	msg = append(msg, clientID...)
	msg = append(msg, body...)
	if _, err := conn.Write(msg); err != nil {
		return fmt.Errorf("cannot send ApiVersions to %s: %w", addr, err)
	}
	var hdr [8]byte
	if _, err := io.ReadFull(conn, hdr[:]); err != nil {
		return fmt.Errorf("no ApiVersions response from %s: %w", addr, err)
	}
	size := binary.BigEndian.Uint32(hdr[:4])
	if size < 4 || size > 1<<20 {
		return fmt.Errorf("ApiVersions response from %s has size %d", addr, size)
	}
	if got := binary.BigEndian.Uint32(hdr[4:]); got != corrID {
		return fmt.Errorf("ApiVersions response from %s has correlation id %#x, want %#x", addr, got, corrID)
	}
	buf := make([]byte, size-4)
	if _, err := io.ReadFull(conn, buf); err != nil {
		return fmt.Errorf("short ApiVersions response from %s: %w", addr, err)
	}
	resp := kmsg.NewApiVersionsResponse()
	resp.Version = 0
	if err := resp.ReadFrom(buf); err != nil {
		return fmt.Errorf("cannot decode the ApiVersions response from %s: %w", addr, err)
	}
	if resp.ErrorCode != 0 {
		return fmt.Errorf("ApiVersions from %s: error code %d", addr, resp.ErrorCode)
	}
	if len(resp.ApiKeys) == 0 {
		return fmt.Errorf("ApiVersions from %s lists no API keys", addr)
	}
	return nil
}
