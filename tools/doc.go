// Package tools holds ringbroker's binaries: ringbroker (the daemon) and,
// later, ringctl (admin CLI), ringdump (segment inspector) and ringbench
// (load generator). Only binaries read flags and files.
package tools
