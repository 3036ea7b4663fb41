#!/usr/bin/env bash
# hympi-pingpong against OSU's osu_latency: the same two cores, the same run, one-way time per
# message size 0 B .. 4 MiB. Builds the OSU micro-benchmarks outside the repository (in $WORK).
#
#   bench/osu/run.sh [--repeat N] [--tolerance T]
#
# Each repeat runs osu_latency and hympi-pingpong back to back (the order alternates between
# repeats) as 2 ranks on the first two cores: OSU bound by mpirun (--map-by core --bind-to core),
# hympi binding itself (core, compact; mpirun --bind-to none), both with osu_latency's counts
# (10000 round trips after 100 warm-up up to 8 KiB, 1000 after 10 above). The summary keeps the
# best (smallest) time of each per size, as a noisy neighbour only ever adds time, and prints the
# ratio hympi / OSU; a size passes when the ratio is within 1 +- T (default 0.10). The spread
# columns (slowest / fastest run of each) show how much noise the verdict sits in.
#
# Environment: BUILD (hympi build dir, default <repo>/build), WORK (default /tmp/hympi-osu),
# OSU_SRC (an unpacked osu-micro-benchmarks source folder), else OSU_GIT (bare git dir of an OSU
# mirror, default /work/.mirror/forresti+osu-micro-benchmarks/repo, OSU 5.3), RUN_TIMEOUT
# (seconds before one run is killed and recorded without times, default 600).
# Output: one line per run and size in $WORK/results.tsv, the summary on stdout and in
# $WORK/summary.tsv (verdict in $WORK/verdict.txt); the load average before and after the runs is printed with it.
set -euo pipefail

# shellcheck source=../common.sh
source "$(dirname "$0")/../common.sh"
WORK=${WORK:-/tmp/hympi-osu}
RUN_TIMEOUT=${RUN_TIMEOUT:-600}
OSU_GIT=${OSU_GIT:-/work/.mirror/forresti+osu-micro-benchmarks/repo}
repeat=3
tolerance=0.10
parse_value_options "repeat tolerance" "$@"
need_positive_int --repeat "$repeat"
[[ $tolerance =~ ^0?\.[0-9]+$ && ! $tolerance =~ ^0?\.0+$ ]] ||
  refuse "--tolerance must be a fraction between 0 and 1 (e.g. 0.10), got '$tolerance'"
need_run_timeout
if [[ -n ${OSU_SRC:-} ]]; then
  [[ -x $OSU_SRC/configure && -f $OSU_SRC/mpi/pt2pt/osu_latency.c ]] ||
    refuse "OSU_SRC='$OSU_SRC' is not an unpacked osu-micro-benchmarks source (no configure, mpi/pt2pt/osu_latency.c)"
elif ! git --git-dir="$OSU_GIT" rev-parse --verify -q HEAD >/dev/null 2>&1; then
  refuse "OSU_GIT='$OSU_GIT' is not a git directory; set OSU_SRC to an unpacked osu-micro-benchmarks source or OSU_GIT to a clone of one"
fi
need_tools mpicc mpirun

mkdir -p "$WORK"
set_mpirun_flags

# --- OSU --------------------------------------------------------------------------------------
osu=$WORK/osu_latency
build_osu() {  # source folder
  if [[ -n ${OSU_SRC:-} ]]; then
    cp -r "$OSU_SRC"/. "$1"
  else
    git --git-dir="$OSU_GIT" archive HEAD | tar -x -C "$1"
  fi &&
    # -fcommon: OSU 5.3 defines its option globals in a header, which gcc >= 10 rejects by default.
    (cd "$1" && ./configure CC=mpicc CXX=mpicxx CFLAGS="-O2 -fcommon" >"$WORK/osu-configure.log" 2>&1 &&
      nice make -C mpi/pt2pt osu_latency >"$WORK/osu-build.log" 2>&1 && cp mpi/pt2pt/osu_latency "$osu")
}
build_reference osu "$osu"

# --- hympi ------------------------------------------------------------------------------------
build_hympi -- hympi-pingpong

# --- runs -------------------------------------------------------------------------------------
results=$WORK/results.tsv
printf "impl\trun\tbytes\tus\n" > "$results"
load_before=$(uptime)
run_osu() {  # log
  OMP_NUM_THREADS=1 timeout "$RUN_TIMEOUT" mpirun "${mpirun_flags[@]}" -np 2 --map-by core --bind-to core \
    --report-bindings "$osu" >"$1" 2>&1 || true
}
run_hympi() {  # log
  OMP_NUM_THREADS=1 HYMPI_BIND=core HYMPI_DIST=compact timeout "$RUN_TIMEOUT" mpirun "${mpirun_flags[@]}" \
    --bind-to none -np 2 "$BUILD/bin/hympi-pingpong" --iterations 10000 --large-iterations 1000 \
    --max-bytes $((4 << 20)) --show-binding >"$1" 2>&1 || true
}
for ((run = 1; run <= repeat; ++run)); do
  for impl in $(run_order "$run" osu hympi); do
    log=$WORK/run-$impl-$run.log
    "run_$impl" "$log"
    if [[ $impl == osu ]]; then
      # osu_latency: "<bytes> <us>" rows under its header.
      awk -v r="$run" '/^[0-9]+[ \t]+[0-9.]+$/ {printf "osu\t%s\t%s\t%s\n", r, $1, $2}' "$log" >> "$results"
    elif grep -q "message check: PASSED" "$log"; then
      # hympi-pingpong: "  <bytes> B  <us> us  <MB/s> MB/s" rows of its one level.
      awk -v r="$run" '$2 == "B" && $4 == "us" {printf "hympi\t%s\t%s\t%s\n", r, $1, $3}' "$log" >> "$results"
    else
      echo "run.sh: hympi-pingpong run $run failed or did not verify, see $log" >&2
    fi
  done
done
load_after=$(uptime)

# --- summary ----------------------------------------------------------------------------------
echo "osu bindings:   $(grep -o 'MCW rank [0-9] bound to .*' "$WORK/run-osu-1.log" | tr '\n' ' ')"
echo "hympi bindings: $(awk '/^host +rank/ {t = 1; next} /^level/ {exit} t && $2 ~ /^[0-9]+$/ {printf "rank %s -> PU %s  ", $2, $NF}' \
  "$WORK/run-hympi-1.log")"
echo "load before: $load_before"
echo "load after:  $load_after"
echo
summary=$WORK/summary.tsv
# Best (smallest) time of each implementation per size, sorted by size, then the verdict.
awk -F'\t' -v tol="$tolerance" '
  NR > 1 { k = $3 + 0; sizes[k] = 1
           if (!((k, $1) in best) || $4 + 0 < best[k, $1]) best[k, $1] = $4 + 0
           if (!((k, $1) in worst) || $4 + 0 > worst[k, $1]) worst[k, $1] = $4 + 0 }
  END {
    for (k in sizes) {
      if (!((k, "osu") in best) || !((k, "hympi") in best) || best[k, "osu"] <= 0 || best[k, "hympi"] <= 0) {
        printf "%d\t-\t-\t-\tmissing\t-\t-\n", k; continue
      }
      ratio = best[k, "hympi"] / best[k, "osu"]
      # spread = slowest / fastest run of one implementation: the noise the verdict sits in.
      printf "%d\t%.2f\t%.2f\t%.3f\t%s\t%.2f\t%.2f\n", k, best[k, "osu"], best[k, "hympi"], ratio,
        (ratio >= 1 - tol && ratio <= 1 + tol) ? "yes" : "NO", worst[k, "osu"] / best[k, "osu"],
        worst[k, "hympi"] / best[k, "hympi"]
    }
  }' "$results" | sort -n -k1,1 > "$summary.rows"
{
  printf "bytes\tosu_us\thympi_us\tratio\twithin_%s\tosu_spread\thympi_spread\n" "$tolerance"
  cat "$summary.rows"
} > "$summary"
rm -f "$summary.rows"
if command -v column >/dev/null; then column -t -s $'\t' "$summary"; else cat "$summary"; fi
awk -F'\t' -v tol="$tolerance" '
  NR > 1 { n++; if ($5 == "missing") missing++; else if ($5 == "NO") bad++
           if ($5 != "missing") { d = $4 > 1 ? $4 : 1 / $4; if (d > far) { far = d; far_ratio = $4; far_at = $1 } } }
  END {
    if (n == 0) { print "verdict: no sizes measured"; exit }
    printf "verdict: %s %g %% of OSU at %d sizes (%d missing); furthest ratio %s at %s B\n",
      (bad + missing == 0) ? "every size within" : (bad + 0) " size(s) outside", tol * 100, n, missing + 0,
      far_ratio, far_at
  }' "$summary" | tee "$WORK/verdict.txt"
