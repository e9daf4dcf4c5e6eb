package nvme

// SetOptions applies changed topic configs (segment size and age, index
// interval, retention) to an open log. The logger, clock and log start
// offset stay as they are. Changes take effect on the next append, roll or
// retention pass; existing segments are not rewritten.
func (l *Log) SetOptions(o Options) error {
	if err := o.Validate(); err != nil {
		return err
	}
	o.Logger = l.opts.Logger
	o.Now = l.opts.Now
	o.LogStartOffset = l.opts.LogStartOffset
	o.IOMode, o.Cache, o.Alignment = l.opts.IOMode, l.opts.Cache, l.opts.Alignment
	l.opts = o.withDefaults()
	return nil
}
