#!/usr/bin/env bash
# Where Open MPI 4 really puts the ranks and threads of a table of layouts, with the launcher binding them (the
# spelling `hympi layout --for openmpi4` prints) and with hympi binding them itself (--bind-to none + HYMPI_BIND).
# Needs only the built apps and mpirun, no Python, so it runs on a bare compute node; bench/layout/check.py then
# compares every run with the cpusets the layout spec intends on that node's topology (OUT/node.xml).
# Usage: bench/layout/affinity_sweep.sh OUT   (HYMPI_BIN_DIR: the apps, default build/bin)
set -uo pipefail
out=${1:?usage: affinity_sweep.sh OUT}
bin=${HYMPI_BIN_DIR:-build/bin}
mkdir -p "$out"
{ echo "pus: $(nproc)"; mpirun --version | head -1; ldd "$bin/hympi-affinity" | grep "not found"; } >"$out/facts.txt" 2>&1
"$bin/hympi-info" --xml >"$out/node.xml" || { echo "hympi-info failed" >&2; exit 1; }
summary=$("$bin/hympi-info" --json)
count() { grep -o "\"$1\": *[0-9]*" <<<"$summary" | grep -o "[0-9]*$"; }
cores=$(count cores); numa=$(count numa_nodes); packages=$(count packages)
echo "$summary" >"$out/node.json"
root=(); [[ $(id -u) -eq 0 ]] && root=(--allow-run-as-root)
run() {  # name ranks threads places mpirun-placement...
  local name=$1 ranks=$2 threads=$3 places=$4; shift 4
  timeout 120 mpirun "${root[@]}" -np "$ranks" "$@" -x OMP_NUM_THREADS="$threads" -x OMP_PLACES="$places" \
    -x OMP_PROC_BIND=close -x OMP_WAIT_POLICY=passive "$bin/hympi-affinity" >"$out/$name.out" 2>"$out/$name.err"
  echo "$name rc=$?" >>"$out/facts.txt"
}
for rt in "$cores 1" "$((cores / 2)) 2" "$((cores / 4)) 4" "2 $((cores / 2))" "1 $cores"; do
  read -r r t <<<"$rt"
  ((r >= 1 && t >= 1)) || continue
  run "core-${r}x${t}-launcher" "$r" "$t" cores --map-by "ppr:$r:node:PE=$t" --bind-to core -x HYMPI_BIND=none
  run "core-${r}x${t}-hympi" "$r" "$t" cores --bind-to none --oversubscribe -x HYMPI_BIND=core
done
run "numa-${numa}x$((cores / numa))-launcher" "$numa" $((cores / numa)) numa_domains --map-by ppr:1:numa \
  --bind-to numa -x HYMPI_BIND=none
run "package-${packages}x$((cores / packages))-launcher" "$packages" $((cores / packages)) sockets \
  --map-by ppr:1:socket --bind-to socket -x HYMPI_BIND=none
