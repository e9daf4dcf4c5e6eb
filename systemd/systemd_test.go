// Package systemd_test checks the appliance packaging in this directory: the
// unit and its example drop-ins pass `systemd-analyze verify`, and the
// tuning script's dry run prints its plan and changes nothing.
package systemd_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// needSystemdAnalyze returns systemd-analyze. Missing, it is installed with
// test-setup.sh under CI (which runs as root), else the test is skipped.
func needSystemdAnalyze(t *testing.T) string {
	t.Helper()
	if p, err := exec.LookPath("systemd-analyze"); err == nil {
		return p
	}
	if os.Getenv("CI") == "" {
		t.Skip("systemd-analyze not installed (run systemd/test-setup.sh)")
	}
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	if out, err := exec.CommandContext(ctx, "bash", "test-setup.sh").CombinedOutput(); err != nil {
		t.Fatalf("systemd/test-setup.sh: %v\n%s", err, out)
	}
	p, err := exec.LookPath("systemd-analyze")
	if err != nil {
		t.Fatalf("systemd-analyze still missing after test-setup.sh: %v", err)
	}
	return p
}

// TestUnitVerifies runs systemd-analyze verify on the unit with every
// example drop-in. verify insists that ExecStart binaries exist, so the copy
// points them at stand-ins; nothing else is changed.
func TestUnitVerifies(t *testing.T) {
	sa := needSystemdAnalyze(t)
	dir := t.TempDir()
	stub := filepath.Join(dir, "bin")
	if err := os.MkdirAll(stub, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"ringbroker", "ringbroker-tune"} {
		if err := os.WriteFile(filepath.Join(stub, name), []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	unit, err := os.ReadFile("ringbroker.service")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Type=notify", "LimitNOFILE=", "LimitMEMLOCK=infinity", "User=ringbroker", "ProtectSystem=strict",
		"ReadWritePaths=/var/lib/ringbroker", "NoNewPrivileges=yes", "PrivateTmp=yes", "ProtectHome=yes"} {
		if !bytes.Contains(unit, []byte(want)) {
			t.Errorf("ringbroker.service lacks %s", want)
		}
	}
	unit = bytes.ReplaceAll(unit, []byte("/usr/local/bin/ringbroker "), []byte(filepath.Join(stub, "ringbroker")+" "))
	if err := os.WriteFile(filepath.Join(dir, "ringbroker.service"), unit, 0o644); err != nil {
		t.Fatal(err)
	}
	dropins := filepath.Join(dir, "ringbroker.service.d")
	if err := os.MkdirAll(dropins, 0o755); err != nil {
		t.Fatal(err)
	}
	confs, _ := filepath.Glob("examples/*.conf")
	if len(confs) < 2 {
		t.Fatalf("want the CPUAffinity and NUMA drop-in examples, found %v", confs)
	}
	var sawAffinity, sawNUMA bool
	for _, c := range confs {
		b, err := os.ReadFile(c)
		if err != nil {
			t.Fatal(err)
		}
		sawAffinity = sawAffinity || bytes.Contains(b, []byte("\nCPUAffinity="))
		sawNUMA = sawNUMA || bytes.Contains(b, []byte("\nNUMAPolicy="))
		b = bytes.ReplaceAll(b, []byte("/usr/local/sbin/ringbroker-tune"), []byte(filepath.Join(stub, "ringbroker-tune")))
		if err := os.WriteFile(filepath.Join(dropins, filepath.Base(c)), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if !sawAffinity || !sawNUMA {
		t.Errorf("drop-in examples: CPUAffinity %v, NUMAPolicy %v; want both", sawAffinity, sawNUMA)
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, sa, "verify", filepath.Join(dir, "ringbroker.service"))
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("systemd-analyze verify: %v\n%s", err, out)
	}
	// Warnings (unknown keys, bad values in drop-ins) do not change the exit
	// status; any output about our files is a failure.
	for _, line := range strings.Split(string(out), "\n") {
		if strings.Contains(line, "ringbroker") {
			t.Errorf("systemd-analyze verify: %s", line)
		}
	}
}

// TestTuneDryRun runs the tuning script's dry run on this machine: it
// prints a plan for every step and leaves /proc/sys as it was.
func TestTuneDryRun(t *testing.T) {
	watched := []string{"vm/swappiness", "vm/dirty_ratio", "vm/dirty_background_ratio", "net/core/somaxconn", "net/core/rmem_max"}
	read := func() map[string]string {
		m := map[string]string{}
		for _, k := range watched {
			b, _ := os.ReadFile("/proc/sys/" + k)
			m[k] = string(b)
		}
		return m
	}
	before := read()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, "bash", "ringbroker-tune", "--dry-run").CombinedOutput()
	if err != nil {
		t.Fatalf("ringbroker-tune --dry-run: %v\n%s", err, out)
	}
	t.Logf("plan:\n%s", out)
	for _, want := range []string{"dry run", "== sysctl", "== cpu governor", "== irq affinity", "== block devices", "nothing changed"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("dry run output lacks %q", want)
		}
	}
	if !strings.Contains(string(out), "vm.swappiness") {
		t.Errorf("dry run does not mention vm.swappiness")
	}
	after := read()
	for k := range before {
		if before[k] != after[k] {
			t.Errorf("dry run changed /proc/sys/%s: %q -> %q", k, before[k], after[k])
		}
	}
}

// TestTuneAppliesToFakeTree runs the script for real against a copy of the
// files it touches (RINGBROKER_TUNE_PROC/SYS), with NVMe and NIC interrupts,
// cpufreq and a block device, and checks the plan, the changes, and that a
// second run finds nothing to do.
func TestTuneAppliesToFakeTree(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("the real run insists on root")
	}
	root := t.TempDir()
	proc, sys := filepath.Join(root, "proc"), filepath.Join(root, "sys")
	files := map[string]string{
		"proc/sys/vm/swappiness":                                          "60",
		"proc/sys/vm/dirty_ratio":                                         "20",
		"proc/sys/net/core/rmem_max":                                      "33554432", // above ours: kept
		"proc/sys/net/ipv4/tcp_rmem":                                      "4096\t131072\t6291456",
		"proc/net/route":                                                  "Iface\tDestination\tGateway\neth9\t00000000\t0101A8C0\n",
		"proc/interrupts":                                                 "           CPU0       CPU1\n 40:  1  2  PCI-MSI 1-edge  nvme0q1\n 41:  1  2  PCI-MSI 2-edge  nvme0q2\n",
		"proc/irq/40/smp_affinity_list":                                   "0-3",
		"proc/irq/41/smp_affinity_list":                                   "4",
		"proc/irq/77/smp_affinity_list":                                   "2",
		"sys/class/net/eth9/device/numa_node":                             "0",
		"sys/class/net/eth9/device/msi_irqs/77":                           "msix",
		"sys/devices/system/node/node0/cpulist":                           "4-7",
		"sys/devices/system/cpu/online":                                   "0-7",
		"sys/devices/system/cpu/cpu0/cpufreq/scaling_governor":            "powersave",
		"sys/devices/system/cpu/cpu0/cpufreq/scaling_available_governors": "performance powersave",
		"sys/block/nvme0n1/queue/scheduler":                               "[mq-deadline] none",
	}
	for name, body := range files {
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	run := func(args ...string) string {
		ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, "bash", append([]string{"ringbroker-tune"}, args...)...)
		cmd.Env = append(os.Environ(), "RINGBROKER_TUNE_PROC="+proc, "RINGBROKER_TUNE_SYS="+sys, "PATH=/usr/bin:/bin")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("ringbroker-tune %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	plan := run("--dry-run")
	for _, want := range []string{
		"plan: vm.swappiness: 60 -> 1",
		"plan: net.ipv4.tcp_rmem: 4096 131072 6291456 -> 4096 1048576 16777216",
		"ok: net.core.rmem_max",
		"irq cpus: 4,5 (nic eth9, numa node 0)",
		"plan: irq 77 (nic eth9): cpus 2 -> 4,5",
		"plan: irq 40 (nvme0q1): cpus 0-3 -> 4,5",
		"plan: cpu0/cpufreq/scaling_governor: powersave -> performance",
		"plan: nvme0n1 scheduler: mq-deadline -> none",
	} {
		if !strings.Contains(plan, want) {
			t.Errorf("plan lacks %q:\n%s", want, plan)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(proc, "sys/vm/swappiness")); string(b) != "60\n" {
		t.Errorf("dry run wrote swappiness %q", b)
	}
	run()
	for name, want := range map[string]string{
		"proc/sys/vm/swappiness":                               "1\n",
		"proc/sys/net/core/rmem_max":                           "33554432\n",
		"proc/irq/40/smp_affinity_list":                        "4,5\n",
		"proc/irq/77/smp_affinity_list":                        "4,5\n",
		"sys/devices/system/cpu/cpu0/cpufreq/scaling_governor": "performance\n",
		"sys/block/nvme0n1/queue/scheduler":                    "none\n",
	} {
		if b, _ := os.ReadFile(filepath.Join(root, name)); string(b) != want {
			t.Errorf("%s = %q after the run, want %q", name, b, want)
		}
	}
	// The fake scheduler file now reads "none" without brackets; make it
	// look like the kernel's before the second run.
	os.WriteFile(filepath.Join(sys, "block/nvme0n1/queue/scheduler"), []byte("mq-deadline [none]\n"), 0o644)
	again := run("--dry-run")
	if strings.Contains(again, "plan: vm.") || strings.Contains(again, "plan: irq") || strings.Contains(again, "plan: nvme") {
		t.Errorf("second dry run still plans changes:\n%s", again)
	}
}

// TestDashboardJSON checks that the Grafana dashboard parses and only
// queries metrics the broker exports.
func TestDashboardJSON(t *testing.T) {
	b, err := os.ReadFile("grafana-dashboard.json")
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Title  string `json:"title"`
		Panels []struct {
			Type    string `json:"type"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatalf("grafana-dashboard.json: %v", err)
	}
	if d.Title == "" || len(d.Panels) < 10 {
		t.Errorf("dashboard %q has %d panels", d.Title, len(d.Panels))
	}
	for _, p := range d.Panels {
		for _, tg := range p.Targets {
			if !strings.Contains(tg.Expr, "ringbroker_") && !strings.Contains(tg.Expr, "process_") && !strings.Contains(tg.Expr, "go_") {
				t.Errorf("panel query %q uses no ringbroker metric", tg.Expr)
			}
		}
	}
}
