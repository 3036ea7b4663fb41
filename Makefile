# hympi: `make demo` and `make test` bootstrap a bare Debian machine (as root) and run.
SHELL := /bin/bash
BUILD ?= build
# The same tree under AddressSanitizer + UndefinedBehaviorSanitizer (test-asan).
ASAN_BUILD ?= build-asan
VENV ?= .venv
STAMPS := .stamps
PYTHON ?= python3
# Open MPI refuses root without these; harmless elsewhere.
export OMPI_ALLOW_RUN_AS_ROOT := 1
export OMPI_ALLOW_RUN_AS_ROOT_CONFIRM := 1
export OMPI_MCA_rmaps_base_oversubscribe := 1

.PHONY: all deps build build-asan venv demo test test-cpp test-asan test-python bench clean

all: build venv

$(STAMPS)/system: scripts/bootstrap-system.sh
	@mkdir -p $(STAMPS)
	./scripts/bootstrap-system.sh
	@touch $@

deps: $(STAMPS)/system

# The Release tree builds the apps, the profiler and the app runs (app.*); the unit and MPI suites run
# once, under the sanitizers (test-asan), which keeps `make test` within its time budget.
$(BUILD)/build.ninja: $(STAMPS)/system CMakeLists.txt
	cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=Release -DHYMPI_TEST_SUITES=OFF

build: $(BUILD)/build.ninja
	cmake --build $(BUILD)

# The sanitizer tree runs each MPI suite at 1, 3 and 4 ranks (HYMPI_MPI_TEST_RANKS): 3 splits unevenly and 4
# evenly in two dimensions, which covers what 2 adds; suites written for 2 ranks keep 2.
$(ASAN_BUILD)/build.ninja: $(STAMPS)/system CMakeLists.txt
	cmake -S . -B $(ASAN_BUILD) -G Ninja -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG=-g1 -DHYMPI_SANITIZE=ON \
	  -DHYMPI_BUILD_BENCHES=OFF -DHYMPI_BUILD_APPS=OFF "-DHYMPI_MPI_TEST_RANKS=1;3;4"

build-asan: $(ASAN_BUILD)/build.ninja
	cmake --build $(ASAN_BUILD)

$(VENV)/.installed: $(STAMPS)/system pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install -q --upgrade pip
	$(VENV)/bin/pip install -q -e '.[test]'
	@touch $@

venv: $(VENV)/.installed

demo: build venv
	$(VENV)/bin/hympi study --quick --out hympi-report --db hympi-results.db
	@echo "report: $(CURDIR)/hympi-report/index.html (open it in a browser; raw data: $(VENV)/bin/hympi export --format csv)"

test-cpp: build
	cd $(BUILD) && ctest --output-on-failure -j2 --timeout 300

# Every library suite under the sanitizers. No app mains and no benchmarks: test-cpp runs the apps and
# benchmarks in the Release build, test-python drives the apps end to end (checkpoints, restarts, sweeps).
test-asan: build-asan
	cd $(ASAN_BUILD) && ctest --output-on-failure -j2 --timeout 600

# Three workers on two cores: much of a CLI test is interpreter start-up and launcher waits, not MPI work
# (two workers kept the cores 72 % busy; three: 251 s instead of 309 s on the 2-core VM, idle).
# Passive OpenMP waits for the same reason as the CTest environment (CMakeLists.txt): oversubscribed runs.
test-python: build venv
	OMP_WAIT_POLICY=passive $(VENV)/bin/python -m pytest -q -n 3 tests/python

# pip's downloads and installs wait on the network and the disk, so they run beside the first compile.
test:
	$(MAKE) -j2 build venv
	$(MAKE) test-cpp test-asan test-python

bench: build venv
	$(VENV)/bin/python bench/rb3d/run.py

clean:
	rm -rf $(BUILD) $(ASAN_BUILD) $(VENV) $(STAMPS)
