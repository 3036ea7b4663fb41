#!/usr/bin/env bash
# NPB-MZ benchmark: hympi's C++ port against the NPB3.4-MZ MPI+OpenMP Fortran reference, same
# machine, same layouts, same run. Builds the reference outside the repository (in $WORK).
#
#   bench/npb-mz/run.sh [--classes "A B"] [--layouts "1x2 2x1"] [--benchmarks "bt-mz sp-mz lu-mz"]
#                       [--repeat N] [--build-only]
#
# Each case runs the reference and hympi alternately N times (default 2); the table keeps every
# run and the summary the best Mop/s of each, so a noisy neighbour hurts both sides alike.
#
# Environment: BUILD (hympi build dir, default <repo>/build), WORK (default /tmp/hympi-npb-mz),
# MARCH (-march= for both implementations, default native; a CPU name builds for other nodes),
# NPB_REF_SRC (an unpacked NPB3.4-MZ-MPI folder, for machines without git access), else
# NPB_REF_GIT (bare git dir of github:LLNL/NPB; cloned from GitHub when absent);
# NPB_REF_BIN (a folder of <benchmark>.<class>.x that this script built on another machine of
# the same architecture, for a machine without gfortran; only missing binaries are built;
# `--build-only` builds them, with MARCH naming the node's CPU, into $WORK/NPB3.4-MZ-MPI/bin and stops),
# RUN_TIMEOUT (seconds before a run is killed and recorded without Mop/s, default 1800).
# Output: one line per run in $WORK/results.tsv and a summary table on stdout.
set -euo pipefail

# shellcheck source=../common.sh
source "$(dirname "$0")/../common.sh"
WORK=${WORK:-/tmp/hympi-npb-mz}
MARCH=${MARCH:-native}
RUN_TIMEOUT=${RUN_TIMEOUT:-1800}
NPB_REF_GIT=${NPB_REF_GIT:-/work/.mirror/LLNL+NPB/repo}
classes="A"
layouts="1x2 2x1"
benchmarks="bt-mz sp-mz lu-mz"
repeat=2
build_only=0
while [[ $# -gt 0 ]]; do
  case "$1" in
    --classes) classes=$2; shift 2 ;;
    --layouts) layouts=$2; shift 2 ;;
    --benchmarks) benchmarks=$2; shift 2 ;;
    --repeat) repeat=$2; shift 2 ;;
    --build-only) build_only=1; shift ;;
    *) refuse "unknown argument '$1'" ;;
  esac
done
need_positive_int --repeat "$repeat"
need_run_timeout
if command -v c++ >/dev/null && ! c++ -march="$MARCH" -x c++ -E - </dev/null >/dev/null 2>&1; then
  refuse "MARCH='$MARCH' is not a CPU the compiler knows (-march=)"
fi

mkdir -p "$WORK"
mpirun_flags=(--oversubscribe --bind-to none)
if mpirun --version 2>/dev/null | grep -q "Open MPI"; then mpirun_flags+=(--allow-run-as-root); fi

# --- the Fortran reference -------------------------------------------------------------------
ref=$WORK/NPB3.4-MZ-MPI
if [[ -n ${NPB_REF_BIN:-} ]]; then
  mkdir -p "$ref/bin"
  cp "$NPB_REF_BIN"/*.x "$ref/bin/"
fi
missing=0
for c in $classes; do
  for b in $benchmarks; do [[ -x $ref/bin/${b}.$c.x ]] || missing=1; done
done
if ((missing)) && { ! command -v gfortran >/dev/null || ! command -v mpif90 >/dev/null; }; then
  echo "installing gfortran" >&2
  apt-get install -y gfortran >/dev/null
fi
if ((missing)); then
  if [[ ! -d $ref/config ]]; then
    if [[ -n ${NPB_REF_SRC:-} ]]; then
      cp -r "$NPB_REF_SRC" "$ref"
    elif [[ -d $NPB_REF_GIT ]]; then
      git --git-dir="$NPB_REF_GIT" archive HEAD NPB3.4-MZ/NPB3.4-MZ-MPI | tar -x -C "$WORK" --strip-components=1
    else
      git clone --depth 1 https://github.com/LLNL/NPB "$WORK/NPB-git"
      cp -r "$WORK/NPB-git/NPB3.4-MZ/NPB3.4-MZ-MPI" "$ref"
    fi
  fi
  # Same optimisation level as hympi's Release build (-O3 -march=$MARCH); gfortran >= 10 needs
  # -fallow-argument-mismatch for the reference's untyped MPI buffers. -ftls-model=local-exec: on AVX-512 cores
  # GCC 12 takes the address of a threadprivate array's GOT slot (`lea cv@gottpoff(%rip)`), which GNU ld 2.40
  # cannot relax ("TLS transition from R_X86_64_GOTTPOFF to R_X86_64_TPOFF32 failed"; linked by gold instead,
  # SP-MZ died with SIGSEGV). Local-exec is what the linker's relaxation makes of every other such access in an
  # executable, so the code is otherwise the same.
  fflags="-O3 -march=$MARCH -fopenmp -fallow-argument-mismatch -ftls-model=local-exec"
  sed -e "s/^FFLAGS.*/FFLAGS = $fflags/" -e "s/^CFLAGS.*/CFLAGS = -O3 -march=$MARCH -fopenmp/" \
    "$ref/config/make.def.template" > "$ref/config/make.def"
  mkdir -p "$ref/bin"  # git archive drops the empty bin/ the Makefiles link into
  # One copy of the tree per benchmark, built in parallel: the benchmarks share common/ objects,
  # so a parallel make in one tree would race on them.
  for b in $benchmarks; do
    (
      tree=$WORK/build-tree-$b
      [[ -d $tree ]] || cp -r "$ref" "$tree"
      cp "$ref/config/make.def" "$tree/config/make.def"
      for c in $classes; do
        exe=$ref/bin/${b}.$c.x
        [[ -x $exe ]] && continue
        echo "building reference $b class $c" >&2
        (cd "$tree" && nice make "$b" CLASS="$c" >"$WORK/build-$b-$c.log" 2>&1 && cp "bin/${b}.$c.x" "$exe") ||
          { echo "reference build failed, see $WORK/build-$b-$c.log" >&2; exit 1; }
      done
    ) &
  done
  for job in $(jobs -p); do wait "$job" || exit 1; done
fi

if ((build_only)); then
  echo "reference binaries: $ref/bin"
  exit 0
fi

# --- hympi ------------------------------------------------------------------------------------
build_hympi -DHYMPI_MARCH="$MARCH" -- hympi-bt-mz hympi-sp-mz hympi-lu-mz

# --- runs: ours and theirs back to back for every case ----------------------------------------
results=$WORK/results.tsv
printf "benchmark\tclass\tlayout\timpl\trun\tseconds\tmops\tverified\n" > "$results"
extract() {  # file -> "seconds mops verified"
  awk '/Time in seconds/ {t=$NF} /Mop\/s total/ {m=$NF} /Verification    =/ {v=$NF} END {print t, m, v}' "$1"
}
for c in $classes; do
  for b in $benchmarks; do
    for l in $layouts; do
      np=${l%x*}
      nt=${l#*x}
      for ((run = 1; run <= repeat; ++run)); do
        log_ref=$WORK/run-ref-$b-$c-$l-$run.log
        log_our=$WORK/run-hympi-$b-$c-$l-$run.log
        (cd "$WORK" && OMP_NUM_THREADS=$nt nice timeout "$RUN_TIMEOUT" mpirun "${mpirun_flags[@]}" -np "$np" "$ref/bin/$b.$c.x") \
          >"$log_ref" 2>&1 || true
        OMP_NUM_THREADS=$nt HYMPI_BIND=none nice timeout "$RUN_TIMEOUT" mpirun "${mpirun_flags[@]}" -np "$np" "$BUILD/bin/hympi-$b" \
          --class "$c" >"$log_our" 2>&1 || true
        read -r t m v < <(extract "$log_ref")
        printf "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n" "$b" "$c" "$l" fortran "$run" "$t" "$m" "$v" >> "$results"
        read -r t m v < <(extract "$log_our")
        printf "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n" "$b" "$c" "$l" hympi "$run" "$t" "$m" "$v" >> "$results"
      done
    done
  done
done
if command -v column >/dev/null; then column -t -s $'\t' "$results"; else cat "$results"; fi
echo
echo "best Mop/s per case (ratio = hympi / fortran):"
awk -F'\t' 'NR > 1 { k = $1 " " $2 " " $3; if ($7 > best[k, $4]) best[k, $4] = $7; keys[k] = 1 }
  END { for (k in keys) printf "%-22s fortran %10.2f  hympi %10.2f  ratio %5.2f\n", k, best[k, "fortran"],
        best[k, "hympi"], best[k, "hympi"] / best[k, "fortran"] }' "$results" | sort
