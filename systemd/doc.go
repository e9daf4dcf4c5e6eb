// Package systemd holds the appliance's systemd unit, tuning script and
// install target (no Go code yet beyond this doc).
package systemd
