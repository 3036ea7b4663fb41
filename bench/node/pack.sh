#!/usr/bin/env bash
# Packs what bench/node/run.sh needs on a bare many-core node that has mpirun and python3 but no compilers or
# development libraries: the apps, the transpose benchmark (its FFTW-MPI peer linked in) and the profiling library
# (the probe part preloads it) of a build made here for the node's CPU, e.g.
#   cmake -S . -B build-node -G Ninja -DCMAKE_BUILD_TYPE=Release -DHYMPI_MARCH=x86-64-v3 -DHYMPI_UNIT_SUITES=OFF
#   ninja -C build-node hympi-profile hympi-bench-transpose \
#     hympi-{affinity,blades,bt-mz,info,is,lu-mz,mpit,pencil,pingpong,rb3d,sp-mz,spmv3d,stream}
# the Fortran NPB-MZ reference (`MARCH=... bench/npb-mz/run.sh --classes "S B" --build-only`) and every shared
# library they load except the C library's own, for run.sh to link in only where the node lacks one (NODE_LIBS).
#
#   bench/node/pack.sh BUILD_BIN REFERENCE_BIN DEST     (REFERENCE_BIN may be an empty folder)
#
# On the node: HYMPI_BIN_DIR=DEST/bin NPB_REF_BIN=DEST/ref NODE_LIBS=DEST/libs bench/node/run.sh ...
set -euo pipefail
[[ $# -eq 3 ]] || { echo "usage: pack.sh BUILD_BIN REFERENCE_BIN DEST" >&2; exit 2; }
bin=$1 ref=$2 dest=$3
[[ -x $bin/hympi-info ]] || { echo "pack.sh: $bin holds no hympi-info (not a build's bin/)" >&2; exit 2; }
profile=$bin/../lib/libhympi-profile.so
[[ -f $profile ]] || { echo "pack.sh: $profile not found (build the hympi-profile target)" >&2; exit 2; }
[[ -x $bin/hympi-bench-transpose ]] ||
  { echo "pack.sh: $bin holds no hympi-bench-transpose (build that target)" >&2; exit 2; }
[[ -d $ref ]] || { echo "pack.sh: $ref: no such folder" >&2; exit 2; }
[[ -e $dest ]] && { echo "pack.sh: $dest exists (nothing is overwritten)" >&2; exit 2; }
mkdir -p "$dest/bin" "$dest/lib" "$dest/ref" "$dest/libs"
cp "$bin"/hympi-* "$dest/bin/"
cp "$profile" "$dest/lib/"
# A node run without the npb part needs no reference: an empty REFERENCE_BIN packs none (run.sh then runs hympi's
# NPB-MZ alone).
if compgen -G "$ref/*.x" >/dev/null; then cp "$ref"/*.x "$dest/ref/"; else echo "pack.sh: $ref holds no *.x: no reference packed" >&2; fi
# The node's own C library, loader and threads must serve every process: never carried. ldd fails on a file that
# is not dynamically linked (a static or scripted reference): that file needs nothing carried.
{ ldd "$dest"/bin/* "$dest"/lib/*.so "$dest"/ref/*.x 2>/dev/null || true; } |
  awk '$2 == "=>" && $3 ~ /^\// { print $1, $3 }' | sort -u |
  grep -Ev '^(libc|libm|libpthread|libdl|librt|ld-linux[^ ]*)\.so' |
  while read -r soname path; do cp -L "$path" "$dest/libs/$soname"; done
du -sh "$dest"/*
