# ringbroker build and test entry points. `make test` is what CI runs (.ci/run);
# it must stay under 10 minutes on 2 cores (`make test-long` has no limit).

GO        ?= go
BIN       := bin
CONFIG    := config/server.properties
# Unit packages: everything but the integration suite, which starts the real binary.
# The cluster suite (tests/cluster) runs in make test-cluster.
UNIT_PKGS  = $(shell $(GO) list ./... | grep -v -e '/tests/integration' -e '/tests/cluster')
UNIT_TIMEOUT        ?= 20m
INTEGRATION_TIMEOUT ?= 25m
FUZZTIME  ?= 30s
# make test runs every test afresh (-count=1), as a fresh clone would;
# TEST_COUNT= lets go test reuse its cached results when nothing changed.
TEST_COUNT ?= -count=1

.PHONY: help all build run cluster test-cluster test test-long test-build deps vet unit integration integration-netpoll integration-uring integration-uring-direct integration-passes bench microbench fuzz lint clean unit-direct unit-allocs integration-direct crashloop compat compat-report test-cluster-fast

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

# ---- make test ---------------------------------------------------------------
# .ci/stages.sh runs the stages below as a graph, "stage:needs,...", up to
# TEST_JOBS side by side, in this order (the longest first). The integration
# passes and the client suites mostly wait on clients, timers and kill/restart
# cycles, so they run beside the CPU-bound unit stages; see .ci/stages.sh.
# Everything waits for test-build, so the shared binaries are not starved of
# CPU by the race-detector builds and the long chain (compat) starts first.
# Each stage's output is printed whole when it ends (logs in build/test-logs),
# and a table of every stage's wall and CPU seconds ends the run, failed or
# not. TEST_STAGES="vet unit" runs a subset.
#
# TEST_CLUSTER_FAST: the hook for the cluster tests (a 3-node failover,
# 60-120 s): name a target there, e.g. TEST_CLUSTER_FAST=test-cluster-fast,
# and it runs beside the integration passes with the shared binary.
TEST_CLUSTER_FAST ?=
TEST_JOBS ?= 8
TEST_STAGES ?= deps test-build:deps compat:test-build \
	integration-netpoll:test-build integration-uring:test-build \
	integration-direct:test-build integration-uring-direct:test-build \
	$(addsuffix :test-build,$(TEST_CLUSTER_FAST)) \
	vet:test-build unit:test-build unit-direct:test-build unit-allocs:test-build

test: ## everything CI runs, stages side by side, then a table of stage times
	@exec env TEST_JOBS=$(TEST_JOBS) MAKE="$(MAKE)" IT_BIN=$(TEST_BIN_DIR)/integration.test \
		RB_BROKER_BIN=$(abspath $(TEST_BIN_DIR)/ringbroker) COMPAT_BROKER_BIN=$(abspath $(TEST_BIN_DIR)/ringbroker) \
		./.ci/stages.sh $(TEST_STAGES)

# The long runs make test leaves out or shortens, one after another (no time
# limit; before a release, or CI's long variant `.ci/run long`): the 50-cycle
# kill -9 loop in both io modes (make test runs 5 cycles per pass), then the
# soak sizes (RB_LONG=1) of the tests LONG_TESTS names, in all four engine
# and I/O mode passes: TestCompactionConsumerOffsetsBounded with 100,000
# commits (30,000 in make test) and TestFranzCodecs with 200,000 records per
# codec in every pass.
LONG_TESTS ?= ^(TestCompactionConsumerOffsetsBounded|TestFranzCodecs)$$
test-long: crashloop ## the soak sizes and the 50-cycle crash loop make test leaves out (before releases)
	$(MAKE) RB_LONG=1 PASS_CODEC_RECORDS=200000 INTEGRATION_URING_RUN='$(LONG_TESTS)' DIRECT_TESTS='$(LONG_TESTS)' \
		integration-uring integration-direct integration-uring-direct
	RB_LONG=1 RB_ENGINE=netpoll $(GO) test -count=1 -timeout $(INTEGRATION_TIMEOUT) -run '$(LONG_TESTS)' ./tests/integration/

# Builds, once, what the integration passes and compat share: the broker
# binary and the integration test binary (build/test; git ignores build/).
TEST_BIN_DIR := build/test
test-build:
	mkdir -p $(TEST_BIN_DIR)
	$(GO) build -o $(TEST_BIN_DIR)/ringbroker ./tools/ringbroker
	$(GO) test -c -o $(TEST_BIN_DIR)/integration.test ./tests/integration

deps:
	./.ci/deps.sh

vet: ## go vet ./...
	$(GO) vet ./...

unit: ## unit tests with -race (one stage of make test)
	$(GO) test -race $(TEST_COUNT) -timeout $(UNIT_TIMEOUT) $(UNIT_PKGS)

# The allocation tests (testing.AllocsPerRun on the request paths, the
# ring's hot path, the decoders) skip under the race detector, which
# allocates: they run here without it, on both engines and I/O modes
# (~40 s).
ALLOC_TESTS = Allocs|DoesNotAllocate
unit-allocs:
	$(GO) test $(TEST_COUNT) -run '$(ALLOC_TESTS)' ./appliance/ ./ioring/ ./nvme/
	RB_ENGINE=uring $(GO) test $(TEST_COUNT) -run '$(ALLOC_TESTS)' ./appliance/
	RB_ENGINE=uring RB_IO_MODE=direct $(GO) test $(TEST_COUNT) -run '$(ALLOC_TESTS)' ./appliance/

# log.io.mode=direct: the nvme package's tests again in direct mode
# (NVME_IO_MODE=direct: testOptions opens every log in direct mode). The
# tests in UNIT_DIRECT_SKIP set their own io mode (directOptions,
# tailOptions, truncOptions) and never read NVME_IO_MODE, so this run would
# repeat them as unit ran them (~55% of nvme's time under -race); they run
# once, in unit. UNIT_DIRECT_SKIP='^$$' runs them again.
UNIT_DIRECT_SKIP ?= ^(TestDirectPrefetchCoversRead|TestDirectPrefetch|TestTailViewReadsLikeLog|TestDirectBlockBuffersRecycled|TestFixedBlockBuffers|TestTruncateCrash|TestDirectPreallocatesInChunks|TestDirectRingWritevAcrossBlocks)$$
unit-direct:
	NVME_IO_MODE=direct $(GO) test -race $(TEST_COUNT) -timeout $(UNIT_TIMEOUT) -skip '$(UNIT_DIRECT_SKIP)' ./nvme/

# ---- integration passes --------------------------------------------------------
# The suite runs once per engine and I/O mode: netpoll (default shards),
# uring with 4 shards (more shards than CI's 2 cores), netpoll with direct
# I/O, and uring with direct I/O (the engine that batches segment writes
# through its rings, io.uring.direct.write.batch). Each pass's tests start
# their own brokers on free ports, so passes run side by side. Under make
# test they share build/test's binaries (IT_BIN, the integration test
# binary, and RB_BROKER_BIN, the broker); alone, go test builds them. Setting RB_ENGINE runs a single pass as asked:
# RB_ENGINE=uring RB_IO_MODE=direct RB_SHARDS=2 make integration
# INTEGRATION_URING_RUN / DIRECT_TESTS narrow the uring and direct passes
# (go test -run patterns).
INTEGRATION_URING_RUN ?= .
DIRECT_TESTS ?= .
# TestFranzCodecs sends 200,000 records per codec in the netpoll pass and
# PASS_CODEC_RECORDS in the other three (same checks, a quarter of the
# volume: the codecs are the client's work, the engines see the same
# batches); make test-long sends 200,000 in all four.
PASS_CODEC_RECORDS ?= 50000
IT_BIN ?=
# $(call it_run,ENV,PATTERN): the suite with the environment ENV.
ifneq ($(IT_BIN),)
it_run = cd tests/integration && env $(1) $(abspath $(IT_BIN)) -test.count=1 -test.timeout $(INTEGRATION_TIMEOUT) -test.run '$(2)'
else
it_run = env $(1) $(GO) test -count=1 -timeout $(INTEGRATION_TIMEOUT) -run '$(2)' ./tests/integration/...
endif

integration: ## the integration suite against the real binary (RB_ENGINE, RB_IO_MODE pick one pass)
ifdef RB_ENGINE
	$(call it_run,,.)
else
	$(MAKE) integration-netpoll
	$(MAKE) integration-uring
endif

integration-netpoll:
	$(call it_run,RB_ENGINE=netpoll,.)

integration-uring:
	$(call it_run,RB_ENGINE=uring RB_SHARDS=4 RB_CODEC_RECORDS=$(PASS_CODEC_RECORDS),$(INTEGRATION_URING_RUN))

integration-direct:
	$(call it_run,RB_IO_MODE=direct RB_CODEC_RECORDS=$(PASS_CODEC_RECORDS),$(DIRECT_TESTS))

integration-uring-direct:
	$(call it_run,RB_ENGINE=uring RB_IO_MODE=direct RB_SHARDS=4 RB_CODEC_RECORDS=$(PASS_CODEC_RECORDS),$(DIRECT_TESTS))

# The four passes side by side, on their own (make test runs them as stages).
INTEGRATION_JOBS ?= 4
integration-passes:
	$(MAKE) -j$(INTEGRATION_JOBS) --output-sync=target integration-netpoll integration-uring integration-direct integration-uring-direct

# The cluster tests' stage (TEST_CLUSTER_FAST=test-cluster-fast): empty
# until they land.
test-cluster-fast:
	@echo "test-cluster-fast: no cluster tests yet"

# Real clients' own suites (franz-go pkg/kgo, kafka-go) and smoke checks
# (kcat, confluent-kafka, kafka-python, sarama, kafkajs) against the broker,
# the three side by side; writes build/compat/<date>.json (git ignores it)
# and changes no tracked file. COMPAT_SUITES narrows it ("kgo kafkago
# smoke"); see tests/compat/run.sh. Under make test it uses build/test's
# broker (COMPAT_BROKER_BIN).
compat: ## real clients' own suites and smoke checks (build/compat/<date>.json)
	./tests/compat/run.sh

# Rewrites README.md's compat block from the newest build/compat results
# (or COMPAT_RESULTS=file), on request only.
compat-report: ## rewrite README.md's compat block from the newest build/compat results
	@f="$${COMPAT_RESULTS:-$$(ls -1 build/compat/*.json 2>/dev/null | tail -n 1)}"; \
	if [ -z "$$f" ]; then echo "no results under build/compat: run make compat first (or set COMPAT_RESULTS=file)" >&2; exit 2; fi; \
	go run ./tests/compat/report -readme README.md -readme-only "$$f" && echo "README.md compat block from $$f"

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
