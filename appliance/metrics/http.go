package metrics

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	vm "github.com/VictoriaMetrics/metrics"
)

// Enabled reports whether addr (metrics.listener) asks for a metrics
// listener: not "" and not "none".
func Enabled(addr string) bool { return addr != "" && addr != "none" }

// Start marks the broker ready and starts the metrics server; the broker's
// Start calls it last.
func (m *Metrics) Start() {
	if m == nil {
		return
	}
	m.ready.Store(true)
	m.startHTTP()
}

// startHTTP serves /metrics, /healthz and /readyz on Options.Listener. A
// listener that cannot be bound is logged, not fatal: the data path runs
// on without metrics.
func (m *Metrics) startHTTP() {
	addr := m.o.Listener
	if !Enabled(addr) {
		return
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		m.o.Log.Error("cannot listen on metrics.listener; serving without metrics", "metrics.listener", addr, "err", err)
		return
	}
	// # HELP and # TYPE lines, so Prometheus types the histograms.
	vm.ExposeMetadata(true)
	mux := http.NewServeMux()
	mux.HandleFunc("/metrics", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
		var buf bytes.Buffer
		m.set.WritePrometheus(&buf)
		vm.WriteProcessMetrics(&buf)
		w.Write(appendWithoutEmptyHelp(nil, buf.Bytes()))
	})
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-m.o.Closing:
			http.Error(w, "shutting down", http.StatusServiceUnavailable)
		default:
			fmt.Fprintln(w, "ok")
		}
	})
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, r *http.Request) {
		if !m.ready.Load() {
			http.Error(w, "not ready", http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ready")
	})
	m.ln = ln
	m.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := m.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			m.o.Log.Error("metrics server failed", "err", err)
		}
	}()
	m.o.Log.Info("metrics listening", "addr", ln.Addr().String())
}

// Addr is the bound metrics listener address, or nil when metrics are
// disabled or could not be bound.
func (m *Metrics) Addr() net.Addr {
	if m == nil || m.ln == nil {
		return nil
	}
	return m.ln.Addr()
}

// Stop marks the broker not ready and stops the metrics server, waiting
// for scrapes in flight (they read the shards, which must still run).
func (m *Metrics) Stop() {
	if m == nil {
		return
	}
	m.ready.Store(false)
	if m.srv == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := m.srv.Shutdown(ctx); err != nil {
		m.srv.Close()
	}
}

// appendWithoutEmptyHelp appends the Prometheus text exposition src to dst
// without its "# HELP <name>" lines that carry no text: VictoriaMetrics/metrics
// writes one before every TYPE line and has no way to give the text, and an
// empty HELP line tells a reader nothing. TYPE lines stay.
func appendWithoutEmptyHelp(dst, src []byte) []byte {
	for len(src) > 0 {
		line := src
		if i := bytes.IndexByte(src, '\n'); i >= 0 {
			line = src[:i+1]
		}
		src = src[len(line):]
		if rest, ok := bytes.CutPrefix(line, []byte("# HELP ")); ok && !bytes.ContainsRune(bytes.TrimSpace(rest), ' ') {
			continue
		}
		dst = append(dst, line...)
	}
	return dst
}
