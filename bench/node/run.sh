#!/usr/bin/env bash
# The measurements a 2-core machine cannot make, in one call on a many-core node (issue 34): `hympi study` over
# every core, NPB-MZ against the Fortran reference from N x 1 to 1 x N, the blade row's Fig. 8 up to N2 = 8, pencil
# weak scaling 1 -> N ranks, the transposes against FFTW-MPI, guided vs exhaustive tuning and the probe's cost, each
# part in a share of one time
# budget, one Markdown table per measurement. Needs only the built apps, mpirun and a Python 3.11+ with numpy, rich,
# matplotlib, psutil and scikit-learn (a bare compute node's python3 will do: no install, hympi is taken from this tree).
#
#   bench/node/run.sh [--quick] [--out DIR] [--budget SECONDS] [--parts study,npb,blades,pencil,transpose,tune,probe]
#
# Environment: HYMPI_BIN_DIR (the apps, default <repo>/build/bin), NPB_REF_BIN (a folder of the NPB3.4-MZ
# Fortran reference's <benchmark>.<class>.x, built by `bench/npb-mz/run.sh --build-only`; without it the NPB table
# has hympi's runs alone), PYTHON (default <repo>/.venv/bin/python, else python3), NODE_LIBS (shared libraries
# packed by bench/node/pack.sh: each one the apps or the reference need and the node lacks is linked in).
# --quick: small problems and short budgets, so the test suite runs it end to end on 2 cores (tests/python).
set -euo pipefail
# shellcheck source=../common.sh
source "$(dirname "$0")/../common.sh"
set_python
export HYMPI_BIN_DIR=${HYMPI_BIN_DIR:-$repo/build/bin}
if [[ -n ${NODE_LIBS:-} ]]; then
  NODE_LIBS=$(cd "$NODE_LIBS" && pwd)  # the links made below must not be relative to their own folder
  linked=$(mktemp -d)
  export LD_LIBRARY_PATH=$linked${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  for _ in 1 2 3 4; do  # a library linked in may need others the node lacks
    # ldd fails on what is not dynamically linked (a scripted stand-in): such a file needs nothing linked in.
    missing=$(for exe in "$HYMPI_BIN_DIR"/hympi-* "${NPB_REF_BIN:-/nonexistent}"/*.x; do
                if [[ -x $exe ]]; then ldd "$exe" || true; fi
              done 2>/dev/null | awk '/not found/ { print $1 }' | sort -u)
    [[ -z $missing ]] && break
    for lib in $missing; do if [[ -e $NODE_LIBS/$lib ]]; then ln -sf "$NODE_LIBS/$lib" "$linked/$lib"; fi; done
  done
  [[ -z $missing ]] || echo "run.sh: the node lacks $missing (not in NODE_LIBS)" >&2
fi
exec "$python" "$repo/bench/node/node.py" "$@"
