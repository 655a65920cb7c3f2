# SPDX-License-Identifier: GPL-2.0
#
# The commands of the rnull repository, described in README.md. The
# driver's kbuild makefile is Kbuild (Makefile in drivers/block/rnull).

SCRIPTS := $(CURDIR)/scripts

.PHONY: check check-debug bench bench-settings insn insn-table vm build build-debug setup series series-check lint help

help:
	@echo "make check            build, boot the test VM and run tests/ (CI runs this);"
	@echo "                      RNULL_TESTS=<regex> selects tests, RNULL_TESTS=list lists them"
	@echo "make check-debug      the same tests on a kernel with KASAN, lockdep, kmemleak, ..."
	@echo "make bench            build, boot and compare rnull with null_blk using fio"
	@echo "make insn             count the guest's instructions per request on each driver"
	@echo "make insn-table       the same at several points, in one table"
	@echo "make vm SCRIPT=/abs/path.sh   run your own script in the VM as root"
	@echo "make setup            install what the harness needs (Debian packages, bindgen, source)"
	@echo "make build            set up the machine and build the kernel only"
	@echo "make build-debug      the same for the debug kernel of make check-debug"
	@echo "make series           write patches/: cover letter, kernel-crate patches, driver"
	@echo "make series-check     check that patches/ applies to 7.3 and gives the tested tree"
	@echo "make lint             rustfmtcheck, clippy and checkpatch --strict"

setup:
	@$(SCRIPTS)/setup.sh

build:
	@$(SCRIPTS)/build.sh

build-debug:
	@RNULL_KERNEL=debug $(SCRIPTS)/build.sh

# The tests run on two NUMA nodes, so that per-node queues and home_node
# are exercised. The host's checks (misuses of the request API that must not
# compile, the documentation against the code, the VM runner's handling of
# splats, the benchmark harness on a small scale) run first; the VM's test
# run counts their results with its own (scripts/check.sh).
# RNULL_TESTS=list lists the tests, as "file:test", without building.
ifeq ($(RNULL_TESTS),list)
check check-debug:
	@$(SCRIPTS)/list-tests.sh
else
check: build
	@$(SCRIPTS)/check.sh

# The same tests on the debug kernel (config/debug.config), which is about
# five times slower under TCG; the fuzzer does 10000 operations there.
# RNULL_TESTS selects tests as for make check.
check-debug: build-debug
	@RNULL_KERNEL=debug RNULL_VM_IDLE=$${RNULL_VM_IDLE:-900} \
		RNULL_VM_TIMEOUT=$${RNULL_VM_TIMEOUT:-10800} \
		RNULL_FUZZ_OPS=$${RNULL_FUZZ_OPS:-10000} RNULL_FUZZ_SECONDS=$${RNULL_FUZZ_SECONDS:-7200} \
		$(SCRIPTS)/check.sh
endif

# The results go to BENCH_OUT, by default a new directory in the cache
# (scripts/bench.sh). The BENCH_* settings are checked first, on the host.
bench: bench-settings build
	@$(SCRIPTS)/bench.sh

bench-settings:
	@BENCH_CHECK_ONLY=1 $(CURDIR)/bench/bench.sh

# Instructions per request on each driver, by function (bench/insn.sh).
insn: bench-settings build
	@$(CURDIR)/bench/insn.sh

# The kernel's instructions per request at several points (bench/insn-table.sh).
insn-table: build
	@$(CURDIR)/bench/insn-table.sh

vm: build
	@test -n "$(SCRIPT)" || { echo "usage: make vm SCRIPT=/abs/path/to/script.sh"; exit 2; }
	@$(SCRIPTS)/vm.sh $(SCRIPT)

series:
	@$(SCRIPTS)/series.sh

# SERIES_BUILD=1 also builds every prefix of the series, in the prepared
# tree (one to three minutes a patch).
series-check:
	@$(SCRIPTS)/series-check.sh $(if $(SERIES_BUILD),--build)

lint: build
	@$(SCRIPTS)/lint.sh
