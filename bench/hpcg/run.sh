#!/usr/bin/env bash
# hympi-spmv3d's assembled CSR SpMV against HPCG's reference SpMV (ComputeSPMV_ref): the same
# operator (27 points, HPCG's matrix), the same local grid and process grid, the same run.
# Builds HPCG outside the repository (in $WORK) with our flags: -O3 -march=native, OpenMP, MPI
# (mpicxx), not HPCG's shipped -ffast-math.
#
#   bench/hpcg/run.sh [--repeat N] [--n N] [--ranks R]
#
# Each repeat runs xhpcg and hympi-spmv3d back to back (the order alternates between repeats) as
# R ranks x 1 thread (default 2) with N^3 points per rank (default 96), the ranks stacked along z
# (HPCG --npx=1 --npy=1 --npz=R, hympi --dims 1 1 R). HPCG runs its quick path (--rt=0: one
# timed CG set of 50 iterations, i.e. 51 SpMVs each with its halo exchange); hympi runs 51 timed
# products (--reps 51, halo exchange included, product verified exactly; no CG).
# Both count flops the same way: 2 per stored nonzero per product (HPCG's "Raw SpMV" =
# 2 nnz x products / SpMV time, ReportResults.cpp). The summary prints each run's GFLOP/s, hympi's
# fraction of the STREAM-triad bound it measures before its products (its record's bound_fraction),
# the median of each implementation and the ratio of the medians (hympi / HPCG) with its bootstrap
# interval, or "indistinguishable" where that contains 1 (bench/hpcg/summary.py).
#
# Environment: BUILD (hympi build dir, default <repo>/build; one without build.ninja holds
# binaries built elsewhere and is used as it is), WORK (default /tmp/hympi-hpcg), HPCG_GIT (git
# URL or directory to clone HPCG from, default https://github.com/hpcg-benchmark/hpcg), HPCG_REF
# (default 114602d, the head of HPCG's master: release 3.1 plus four small fixes, one of them to
# ComputeResidual.cpp's OpenMP clause that GCC >= 9 rejects in the 3.1 tag), RUN_TIMEOUT (seconds before one run is killed, default 900).
# Output: one line per run in $WORK/results.tsv, the summary on stdout and in $WORK/summary.txt.
set -euo pipefail

# shellcheck source=../common.sh
source "$(dirname "$0")/../common.sh"
WORK=${WORK:-/tmp/hympi-hpcg}
RUN_TIMEOUT=${RUN_TIMEOUT:-900}
HPCG_GIT=${HPCG_GIT:-https://github.com/hpcg-benchmark/hpcg}
HPCG_REF=${HPCG_REF:-114602d458d1034faa52b71e4c15aba9b3a17698}
repeat=3
n=96
ranks=2
parse_value_options "repeat n ranks" "$@"
need_positive_int --repeat "$repeat"
# HPCG needs a multiple of 8 per axis for its 4 multigrid levels.
[[ $n =~ ^[1-9][0-9]*$ ]] && ((n >= 16 && n % 8 == 0)) ||
  refuse "--n must be a multiple of 8 and >= 16 (HPCG's multigrid), got '$n'"
need_positive_int --ranks "$ranks"
need_run_timeout
need_tools git mpicxx mpirun

mkdir -p "$WORK"
set_mpirun_flags
set_python

# --- HPCG -------------------------------------------------------------------------------------
xhpcg=$WORK/xhpcg
build_hpcg() {  # source folder
  git clone --quiet "$HPCG_GIT" "$1" || refuse "cannot clone HPCG from HPCG_GIT='$HPCG_GIT'"
  git -C "$1" checkout --quiet "$HPCG_REF" || refuse "HPCG_REF='$HPCG_REF' is not a commit or tag of $HPCG_GIT"
  # Our flags, not setup/Make.MPI_GCC_OMP's (-ffast-math would let the compiler reorder sums).
  sed -e 's/^CXXFLAGS .*/CXXFLAGS     = $(HPCG_DEFS) -O3 -march=native -fopenmp/' \
    "$1/setup/Make.MPI_GCC_OMP" > "$1/setup/Make.hympi" &&
    (mkdir -p "$1/build" && cd "$1/build" && ../configure hympi >"$WORK/hpcg-configure.log" 2>&1 &&
      nice make -j2 >"$WORK/hpcg-build.log" 2>&1 && cp bin/xhpcg "$xhpcg")
}
build_reference hpcg "$xhpcg"

# --- hympi ------------------------------------------------------------------------------------
build_hympi -- hympi-spmv3d

# --- runs -------------------------------------------------------------------------------------
results=$WORK/results.tsv
printf "impl\trun\tgflops\tbound_fraction\n" > "$results"
load_before=$(uptime)
run_hpcg() {  # run dir: HPCG writes its report files into the working directory
  (cd "$1" && OMP_NUM_THREADS=1 timeout "$RUN_TIMEOUT" mpirun "${mpirun_flags[@]}" -np "$ranks" --map-by core \
    --bind-to core "$xhpcg" --nx="$n" --ny="$n" --nz="$n" --rt=0 --npx=1 --npy=1 --npz="$ranks") \
    >"$1/stdout.log" 2>&1 || true
  # The report's "GFLOP/s Summary::Raw SpMV=<value>" line.
  sed -n 's|^GFLOP/s Summary::Raw SpMV=\([0-9.eE+-]*\)$|\1|p' "$1"/HPCG-Benchmark*.txt 2>/dev/null | tail -1
}
run_hympi() {  # run dir
  OMP_NUM_THREADS=1 HYMPI_BIND=core HYMPI_DIST=compact timeout "$RUN_TIMEOUT" mpirun "${mpirun_flags[@]}" \
    --bind-to none -np "$ranks" "$BUILD/bin/hympi-spmv3d" --per-rank "$n" "$n" "$n" --dims 1 1 "$ranks" \
    --operator csr --cg-iterations 0 --reps 51 --verify exact >"$1/stdout.log" 2>&1 || true
  # Its rate and, after a tab, its fraction of the triad bound it measured before the products.
  grep -q "verification (exact): PASSED" "$1/stdout.log" &&
    sed -n 's/^HYMPI_RESULT .*"spmv_GFLOPps":\([0-9.eE+-]*\).*/\1/p' "$1/stdout.log" | tr -d '\n' &&
    printf "\t" && sed -n 's/^HYMPI_RESULT .*"bound_fraction":\([0-9.eE+-]*\).*/\1/p' "$1/stdout.log"
}
for ((run = 1; run <= repeat; ++run)); do
  for impl in $(run_order "$run" hpcg hympi); do
    dir=$WORK/run-$impl-$run
    rm -rf "$dir"
    mkdir -p "$dir"
    gflops=$("run_$impl" "$dir" || true)
    if [[ -z $gflops ]]; then
      echo "run.sh: $impl run $run failed, did not verify or printed no SpMV rate, see $dir" >&2
      continue
    fi
    printf "%s\t%s\t%s\n" "$impl" "$run" "$gflops" >> "$results"
    echo "run $run: $impl ${gflops%%$'\t'*} GFLOP/s, load: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
  done
done
load_after=$(uptime)

# --- summary ----------------------------------------------------------------------------------
{
  echo "${ranks} ranks x 1 thread, ${n}^3 per rank, process grid 1x1x${ranks}, HPCG $HPCG_REF"
  echo "load before: $load_before"
  echo "load after:  $load_after"
  "$python" "$repo/bench/hpcg/summary.py" "$results"
} | tee "$WORK/summary.txt"
