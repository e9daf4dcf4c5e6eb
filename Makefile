# ringbroker build and test entry points. `make test` is what CI runs (.ci/run);
# it must stay under 20 minutes on 2 cores.

GO        ?= go
BIN       := bin
CONFIG    := config/server.properties
# Unit packages: everything but the integration suite, which starts the real binary.
# The cluster suite (tests/cluster) runs in make test-cluster.
UNIT_PKGS  = $(shell $(GO) list ./... | grep -v -e '/tests/integration' -e '/tests/cluster')
UNIT_TIMEOUT        ?= 8m
INTEGRATION_TIMEOUT ?= 15m
FUZZTIME  ?= 30s

.PHONY: help all build run cluster test-cluster test deps vet unit integration integration-netpoll integration-uring integration-uring-direct integration-passes bench microbench fuzz lint clean unit-direct unit-allocs integration-direct crashloop compat compat-report

all: build

build: ## build ringbroker, ringctl, ringdump, ringbench... into bin/
	$(GO) build -o $(BIN)/ ./tools/...

# Starts one broker on 127.0.0.1:9092 (from $(CONFIG)) with its log in ./data.
# ARGS passes more flags, e.g. make run ARGS="--override listeners=PLAINTEXT://127.0.0.1:19092"
ARGS ?=
run: build ## start one broker on 127.0.0.1:9092 with data under ./data (ARGS="--override k=v")
	$(BIN)/ringbroker $(CONFIG) --override log.dirs=./data $(ARGS)

# Starts 3 combined nodes (broker and controller) in the foreground, node N on
# 127.0.0.N (client port 9092, controller port 9093, metrics 9644) with its
# data in ./data/node-N; the first run formats them with one new cluster id
# kept in ./data/cluster.id. Ctrl-C stops all of them. CLUSTER_NODES changes
# the count, CLUSTER_DATA the directory; CLUSTER_ARGS passes -override
# key=value to every node.
CLUSTER_NODES ?= 3
CLUSTER_DATA  ?= ./data
CLUSTER_ARGS  ?=
cluster: build ## start 3 combined nodes on 127.0.0.1-3:9092 with data under ./data/node-N (Ctrl-C stops them)
	$(GO) build -o $(BIN)/ ./tests/cluster/cmd/rbcluster
	exec $(BIN)/rbcluster -bin $(BIN)/ringbroker -data $(CLUSTER_DATA) -nodes $(CLUSTER_NODES) $(CLUSTER_ARGS)

# The multi-process cluster suite (tests/cluster: the harness's self-tests
# and the cluster tests), real processes on loopback addresses and in network
# namespaces; it needs root, and RB_REQUIRE_NETNS=1 makes a skip for want of
# namespaces a failure. Not part of make test. CLUSTER_RUN narrows it (a go
# test -run pattern).
CLUSTER_TIMEOUT ?= 20m
CLUSTER_RUN     ?= .
test-cluster: deps build ## the multi-process cluster suite (tests/cluster; root for namespaces; not in make test)
	RB_REQUIRE_NETNS=1 RB_BIN=$(CURDIR)/$(BIN)/ringbroker $(GO) test -race -count=1 -timeout $(CLUSTER_TIMEOUT) -run '$(CLUSTER_RUN)' ./tests/cluster/...

test: deps vet unit unit-direct unit-allocs integration-passes compat

deps:
	./.ci/deps.sh

vet:
	$(GO) vet ./...

unit:
	$(GO) test -race -timeout $(UNIT_TIMEOUT) $(UNIT_PKGS)

# The allocation tests (testing.AllocsPerRun on the request paths, the
# ring's hot path, the decoders) skip under the race detector, which
# allocates: they run here without it, on both engines and I/O modes
# (~40 s).
ALLOC_TESTS = Allocs|DoesNotAllocate
unit-allocs:
	$(GO) test -count=1 -run '$(ALLOC_TESTS)' ./appliance/ ./ioring/ ./nvme/
	RB_ENGINE=uring $(GO) test -count=1 -run '$(ALLOC_TESTS)' ./appliance/
	RB_ENGINE=uring RB_IO_MODE=direct $(GO) test -count=1 -run '$(ALLOC_TESTS)' ./appliance/

# The suite runs once per engine: netpoll with the default shards, then
# uring with 4 shards (more shards than CI's 2 cores). INTEGRATION_URING_RUN
# narrows the uring pass (a go test -run pattern) should CI time get tight,
# e.g. 'Franz|Kcat|Kill|BadInput|Sarama|Confluent'. Setting RB_ENGINE runs a
# single pass as asked: RB_ENGINE=uring RB_IO_MODE=direct RB_SHARDS=2 make integration
INTEGRATION_URING_RUN ?= .
integration:
ifdef RB_ENGINE
	$(GO) test -count=1 -timeout $(INTEGRATION_TIMEOUT) ./tests/integration/...
else
	$(MAKE) integration-netpoll
	$(MAKE) integration-uring
endif

integration-netpoll:
	RB_ENGINE=netpoll $(GO) test -count=1 -timeout $(INTEGRATION_TIMEOUT) ./tests/integration/...

integration-uring:
	RB_ENGINE=uring RB_SHARDS=4 $(GO) test -count=1 -timeout $(INTEGRATION_TIMEOUT) -run '$(INTEGRATION_URING_RUN)' ./tests/integration/...

# make test runs the four integration passes (netpoll, uring with 4 shards,
# direct I/O, uring with direct I/O) side by side, each test binary on its
# own brokers and ports: the suite mostly waits on clients, timers and
# kill/restart cycles, so on 2 cores three passes at once took 198-212 s of
# wall time (each pass 188-210 s) against ~530 s one after another, and
# four 215 s. INTEGRATION_JOBS=1 runs them one after another; each pass's
# output is printed whole when it ends.
INTEGRATION_JOBS ?= 4
integration-passes:
	$(MAKE) -j$(INTEGRATION_JOBS) --output-sync=target integration-netpoll integration-uring integration-direct integration-uring-direct

# Real clients' own suites (franz-go pkg/kgo, kafka-go) and smoke checks
# (kcat, confluent-kafka, kafka-python, sarama) against the broker; writes
# build/compat/<date>.json (git ignores it) and changes no tracked file.
# COMPAT_SUITES narrows it ("kgo kafkago smoke"); see tests/compat/run.sh.
compat:
	./tests/compat/run.sh

# Rewrites README.md's compat block from the newest build/compat results
# (or COMPAT_RESULTS=file), on request only.
compat-report: ## rewrite README.md's compat block from the newest build/compat results
	@f="$${COMPAT_RESULTS:-$$(ls -1 build/compat/*.json 2>/dev/null | tail -n 1)}"; \
	if [ -z "$$f" ]; then echo "no results under build/compat: run make compat first (or set COMPAT_RESULTS=file)" >&2; exit 2; fi; \
	go run ./tests/compat/report -readme README.md -readme-only "$$f" && echo "README.md compat block from $$f"

# log.io.mode=direct: the nvme package's tests again in direct mode, and the
# integration suite again with RB_IO_MODE=direct.
# The whole suite (3.8-4.3 minutes beside the other passes on 2 cores); narrow
# it should CI time get tight, e.g.
# '^(TestCrashLoop|TestKillNine|TestFetchSemantics|TestFranzCodecs|TestIdempotentFranzGo|TestGroupsRestart|TestSarama|TestTxnBrokerRestart)$$'
DIRECT_TESTS ?= .
unit-direct:
	NVME_IO_MODE=direct $(GO) test -race -count=1 -timeout $(UNIT_TIMEOUT) ./nvme/

integration-direct:
	RB_IO_MODE=direct $(GO) test -count=1 -timeout $(INTEGRATION_TIMEOUT) -run '$(DIRECT_TESTS)' ./tests/integration/...

# uring with direct I/O: the engine that batches segment writes through
# its rings (io.uring.direct.write.batch).
integration-uring-direct:
	RB_ENGINE=uring RB_IO_MODE=direct RB_SHARDS=4 $(GO) test -count=1 -timeout $(INTEGRATION_TIMEOUT) -run '$(DIRECT_TESTS)' ./tests/integration/...

# The long crash-safety loop: 50 kill -9 cycles under acks=all, both io modes.
CRASHLOOP_CYCLES ?= 50
crashloop: ## 50 kill -9 cycles under acks=all in both I/O modes (CRASHLOOP_CYCLES)
	for m in buffered direct; do \
		RB_IO_MODE=$$m RB_CRASHLOOP_CYCLES=$(CRASHLOOP_CYCLES) $(GO) test -count=1 -timeout 30m -v -run '^TestCrashLoop$$' ./tests/integration/ || exit 1; \
	done

# The short end-to-end suite side by side with kfake and NATS JetStream
# (bench/run-short.sh): bench/results/<date>-<host>.json, plots, README block.
bench: ## short benchmark suite beside kfake and NATS; rewrites the README's block
	./bench/run-short.sh

microbench: ## Go micro-benchmarks of every package
	$(GO) test -run '^$$' -bench . -benchmem $(UNIT_PKGS)

fuzz: ## every fuzz target for FUZZTIME (30s) each
	FUZZTIME=$(FUZZTIME) ./.ci/fuzz.sh

lint: ## gofmt -l and go vet
	@out=$$(gofmt -l .); \
	if [ -n "$$out" ]; then echo "gofmt -l reports:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...

clean: ## remove bin/ and ./data
	rm -rf $(BIN) data bench/results/tmp

# ---- install (operations; see systemd/) ------------------------------------
# make install [PREFIX=/usr/local] [DESTDIR=/staging]: binaries to
# $(PREFIX)/bin, the tuning script to $(PREFIX)/sbin, the unit and its example
# drop-ins to /etc/systemd/system (the unit's paths follow PREFIX), the config
# to /etc/ringbroker (kept if present), the data directory /var/lib/ringbroker
# owned by the ringbroker system user (created when missing, without DESTDIR).
PREFIX     ?= /usr/local
DESTDIR    ?=
UNITDIR    ?= /etc/systemd/system
CONFDIR    ?= /etc/ringbroker
DATADIR    ?= /var/lib/ringbroker
RB_USER    ?= ringbroker
INSTALL_BINS = ringbroker ringctl ringdump

.PHONY: install
install: ## install binaries, systemd unit and config (PREFIX, DESTDIR)
	mkdir -p $(BIN)
	$(GO) build -trimpath -o $(BIN)/ $(addprefix ./tools/,$(INSTALL_BINS))
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/sbin $(DESTDIR)$(UNITDIR) \
		$(DESTDIR)$(UNITDIR)/ringbroker.service.d $(DESTDIR)$(CONFDIR) $(DESTDIR)$(PREFIX)/share/ringbroker/systemd
	install -m 0755 $(addprefix $(BIN)/,$(INSTALL_BINS)) $(DESTDIR)$(PREFIX)/bin/
	install -m 0755 systemd/ringbroker-tune $(DESTDIR)$(PREFIX)/sbin/ringbroker-tune
	sed -e 's#/usr/local/bin/#$(PREFIX)/bin/#g' -e 's#/usr/local/sbin/#$(PREFIX)/sbin/#g' \
		-e 's#/etc/ringbroker/#$(CONFDIR)/#g' -e 's#/var/lib/ringbroker#$(DATADIR)#g' \
		systemd/ringbroker.service > $(DESTDIR)$(UNITDIR)/ringbroker.service
	chmod 0644 $(DESTDIR)$(UNITDIR)/ringbroker.service
	install -m 0644 systemd/examples/*.conf systemd/grafana-dashboard.json $(DESTDIR)$(PREFIX)/share/ringbroker/systemd/
	test -e $(DESTDIR)$(CONFDIR)/server.properties || \
		sed -e 's#^log.dirs=.*#log.dirs=$(DATADIR)#' $(CONFIG) > $(DESTDIR)$(CONFDIR)/server.properties
	if [ -z "$(DESTDIR)" ]; then \
		getent group $(RB_USER) >/dev/null || groupadd --system $(RB_USER); \
		getent passwd $(RB_USER) >/dev/null || useradd --system --gid $(RB_USER) --home-dir $(DATADIR) \
			--no-create-home --shell /usr/sbin/nologin $(RB_USER); \
		install -d -m 0750 -o $(RB_USER) -g $(RB_USER) $(DATADIR); \
		if [ -d /run/systemd/system ]; then systemctl daemon-reload; fi; \
	else \
		install -d -m 0750 $(DESTDIR)$(DATADIR); \
	fi
	@echo "installed; start with: systemctl enable --now ringbroker"

# make help lists each target whose rule line carries a "## what it does" comment.
help:
	@awk -F':.*## ' '/^[a-z][a-z-]*:.*## /{printf "  %-22s %s\n",$$1,$$2}' $(MAKEFILE_LIST)
