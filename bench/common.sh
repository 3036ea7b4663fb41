# Sourced by the comparison scripts (bench/*/run.sh): their refusals of bad input (one line naming the value,
# exit 2, before anything is built or written) and the build of the hympi apps they compare.

# The repository this file belongs to, and the hympi build the scripts compare (BUILD, default <repo>/build).
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=${BUILD:-$repo/build}

# Refuses with one line and exit 2.
refuse() {
  echo "run.sh: $*" >&2
  exit 2
}

# NAMES ARG...: sets the variable NAME from each `--NAME VALUE` among the arguments (a last `--NAME` with no value
# sets it empty, for its check to name); refuses any other argument.
parse_value_options() {
  local names=" $1 "
  shift
  while [[ $# -gt 0 ]]; do
    [[ $1 == --* && $names == *" ${1#--} "* ]] || refuse "unknown argument '$1'"
    printf -v "${1#--}" '%s' "${2-}"
    shift
    shift || true
  done
}

# NAME VALUE: VALUE must be a positive integer.
need_positive_int() {
  [[ $2 =~ ^[1-9][0-9]*$ ]] || refuse "$1 must be a positive integer, got '$2'"
}

# RUN_TIMEOUT must be a whole number of seconds > 0.
need_run_timeout() {
  [[ $RUN_TIMEOUT =~ ^[1-9][0-9]*$ ]] || refuse "RUN_TIMEOUT must be a positive number of seconds, got '$RUN_TIMEOUT'"
}

# TOOL...: each must be on PATH.
need_tools() {
  local tool
  for tool in "$@"; do
    command -v "$tool" >/dev/null || refuse "$tool is not on PATH"
  done
}

# Sets python to the interpreter for a script's Python part ($PYTHON, else the repository's venv, else python3) and
# puts this tree's hympi package on PYTHONPATH.
set_python() {
  python=${PYTHON:-$repo/.venv/bin/python}
  [[ -x $python ]] || python=python3
  export PYTHONPATH=$repo/python${PYTHONPATH:+:$PYTHONPATH}
}

# Sets mpirun_flags to what Open MPI's mpirun needs to run as root and more ranks than cores (none for others).
set_mpirun_flags() {
  mpirun_flags=()
  if mpirun --version 2>/dev/null | grep -q "Open MPI"; then mpirun_flags+=(--allow-run-as-root --oversubscribe); fi
}

# NAME BINARY: builds the reference code NAME once: unless BINARY exists, calls build_NAME SRC on an empty source
# folder SRC ($WORK/NAME-src), which fetches the source there, configures it (log in $WORK/NAME-configure.log),
# builds it (log in $WORK/NAME-build.log) and copies the program to BINARY; exits 1 naming both logs if it fails.
build_reference() {
  local src=$WORK/$1-src
  [[ -x $2 ]] && return 0
  rm -rf "$src"
  mkdir -p "$src"
  echo "building $1 in $src" >&2
  "build_$1" "$src" ||
    { echo "run.sh: $1 build failed, see $WORK/$1-configure.log and $WORK/$1-build.log" >&2; exit 1; }
}

# [CMAKE_ARG...] -- TARGET...: configures $BUILD (from $repo) with the CMake arguments when the first target is not
# built yet, then builds the targets. A BUILD without build.ninja holds apps built elsewhere by `make build`: used
# as they are.
build_hympi() {
  local cmake_args=()
  while [[ $1 != -- ]]; do cmake_args+=("$1"); shift; done
  shift
  if [[ ! -x $BUILD/bin/$1 ]]; then
    cmake -S "$repo" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release "${cmake_args[@]}" >/dev/null
  fi
  if [[ -f $BUILD/build.ninja ]]; then nice ninja -C "$BUILD" "$@" >/dev/null; fi
}

# RUN FIRST SECOND: the two implementations in repeat RUN's order; it alternates, so that neither always runs first
# (on a warmer or a quieter machine).
run_order() {
  if (($1 % 2)); then echo "$2 $3"; else echo "$3 $2"; fi
}
