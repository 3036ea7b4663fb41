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
# Python writes its bytecode caches (__pycache__, ignored by git) whatever the caller's environment says: with
# PYTHONDONTWRITEBYTECODE set (as on the 2-core VMs) and the venv installed --no-compile, every interpreter compiled
# numpy, scikit-learn, matplotlib and hympi again (5.5-6 CPU-s to import what a sweep and its report need, 2.7 with
# the caches), and each pytest worker rewrote every test module's asserts (collection 9.5 CPU-s, 3.0 with them).
unexport PYTHONDONTWRITEBYTECODE

.PHONY: all deps build build-asan venv demo test test-cpp test-asan test-python bench clean

all: build venv

$(STAMPS)/system: scripts/bootstrap-system.sh
	@mkdir -p $(STAMPS)
	./scripts/bootstrap-system.sh
	@touch $@

deps: $(STAMPS)/system

# Two trees, one per MPI implementation. The Release tree (Open MPI, Debian's default) builds the apps, the
# profiler, the benchmarks and the MPI suites: the app runs (app.*) and the Python tests launch its apps. The
# sanitizer tree (MPICH) builds the library, the apps, the profiler and every suite under ASan + UBSan. So each
# MPI suite runs once per MPI, and the library compiles twice, not three times (make test's time budget).
# Open MPI's suites run at 1, 3 and 4 ranks (3 splits unevenly, 4 evenly in two dimensions); MPICH's at 1 and 2:
# MPICH spins in every wait, and with more ranks than the 2 cores here each barrier takes a scheduler quantum.
$(BUILD)/build.ninja: $(STAMPS)/system CMakeLists.txt
	cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=Release -DHYMPI_UNIT_SUITES=OFF "-DHYMPI_MPI_TEST_RANKS=1;3;4"

build: $(BUILD)/build.ninja
	cmake --build $(BUILD)

# The sanitizer tree is a unity build (CMake's UNITY_BUILD): a layer's sources compile as one or two sources, so
# the code they share (nlohmann::json's, most of a -O0 object) is generated once per batch, not once per source;
# the layers took 416 instead of 651 s of compile jobs (2026-11-28). The Release tree compiles every source on its
# own, so a source that misses an #include of its own still fails there.
MPICH := -DMPI_C_COMPILER=mpicc.mpich -DMPI_CXX_COMPILER=mpicxx.mpich -DMPIEXEC_EXECUTABLE=/usr/bin/mpiexec.mpich
$(ASAN_BUILD)/build.ninja: $(STAMPS)/system CMakeLists.txt
	cmake -S . -B $(ASAN_BUILD) -G Ninja -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG=-g1 -DHYMPI_SANITIZE=ON \
	  -DCMAKE_UNITY_BUILD=ON -DHYMPI_BUILD_BENCHES=OFF $(MPICH) "-DHYMPI_MPI_TEST_RANKS=1;2"

build-asan: $(ASAN_BUILD)/build.ninja
	cmake --build $(ASAN_BUILD)

# Debian's own pip (23.0 on bookworm) installs the editable package; --no-compile leaves the .pyc files of numpy,
# scipy, scikit-learn and matplotlib to their first import, which compiles only the modules used (39 instead of 56
# CPU-s with an upgraded pip compiling everything, beside the Release build that needs both cores).
$(VENV)/.installed: $(STAMPS)/system pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install -q --no-compile -e '.[test]'
	@touch $@

venv: $(VENV)/.installed

demo: build venv
	$(VENV)/bin/hympi study --quick --out hympi-report --db hympi-results.db
	@echo "report: $(CURDIR)/hympi-report/index.html (open it in a browser; raw data: $(VENV)/bin/hympi export --format csv)"

# Six at a time on two cores: the Open MPI runs leave the cores idle half the time at two (passive waits,
# oversubscribed ranks; 77-81 s with the cores 46 % busy, 55-60 s at four on the 2-core VM; on a slower one
# 62-63 s at four, 55-56 at six, 51-53 at eight for 10 % more CPU). The sanitizer tree's runs keep both cores busy
# at two (94 %; four gained 5 s of 73), so it stays at two.
test-cpp: build
	cd $(BUILD) && ctest --output-on-failure -j6 --timeout 300

# Every suite and the apps' class S runs under the sanitizers and MPICH. Left to the Release tree (Open MPI): the
# app runs of more than 2 ranks (MPICH, oversubscribed, waits a scheduler quantum per message) and NPB class W
# (unoptimised and instrumented, 9 of them took 650 s).
test-asan: build-asan
	cd $(ASAN_BUILD) && ctest --output-on-failure -j2 --timeout 600 -E '$(RELEASE_ONLY_APP_RUNS)'
RELEASE_ONLY_APP_RUNS := ^app\.(.*[.]W[.].*|.*([.]3|[.]4|4x1|2x2))$$

# Four workers on two cores: much of a CLI test is interpreter start-up and launcher waits, not MPI work
# (two workers kept the cores 72 % busy; three: 251 s instead of 309 s on the 2-core VM, idle; on a slower one
# three took 307 s with the cores 84 % busy, four 289 s at 93 %, 2026-11-28).
# Passive OpenMP waits for the same reason as the CTest environment (CMakeLists.txt): oversubscribed runs.
# HYMPI_TEST_MPICH_BUILD: the MPICH tree, for the tests that run its apps and profiler (skipped without it).
# Tests marked quiet_machine measure other work on the machine (hympi.busy): the parallel pass would be that work,
# so they run alone after it (a few seconds).
test-python: build venv
	HYMPI_TEST_MPICH_BUILD=$(CURDIR)/$(ASAN_BUILD) OMP_WAIT_POLICY=passive $(VENV)/bin/python -m pytest -q -n 4 \
		-m "not quiet_machine" tests/python
	OMP_WAIT_POLICY=passive $(VENV)/bin/python -m pytest -q -m quiet_machine tests/python

# pip's downloads and installs wait on the network and the disk, so they run beside the first compile. The Release
# suites beside the sanitizer tree's compile gained nothing (7.5 min for both, 7.6 one after the other, 2026-11-28):
# they take what CPU they leave idle.
test:
	$(MAKE) -j2 build venv
	$(MAKE) test-cpp test-asan test-python

bench: build venv
	$(VENV)/bin/python bench/rb3d/run.py

clean:
	rm -rf $(BUILD) $(ASAN_BUILD) $(VENV) $(STAMPS)
