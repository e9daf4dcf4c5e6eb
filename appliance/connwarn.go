package appliance

import "time"

// warnConn logs a connection's closing warning through the broker's limit
// (wire.WarnLimit).
func (b *Broker) warnConn(msg string, args ...any) {
	ok, dropped := b.front.warn.Allow(time.Now())
	if !ok {
		if b.metrics != nil {
			b.metrics.ConnWarningSuppressed()
		}
		return
	}
	if dropped > 0 {
		args = append(args, "connection_warnings_suppressed", dropped)
	}
	b.log.Warn(msg, args...)
}
