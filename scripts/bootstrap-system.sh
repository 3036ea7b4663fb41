#!/usr/bin/env bash
# Installs the Debian packages hympi builds and tests with; installs only what is missing.
set -euo pipefail
packages=(
  build-essential cmake ninja-build pkg-config git
  openmpi-bin libopenmpi-dev libhwloc-dev hwloc gfortran
  libfftw3-dev libfftw3-mpi-dev  # z transforms of hympi-pencil; FFTW-MPI is the transpose benchmark's peer
  libhdf5-openmpi-dev hdf5-tools  # parallel HDF5 (checkpoints, snapshots; hympi::h5), h5dump
  libgtest-dev libgmock-dev libcli11-dev nlohmann-json3-dev
  python3 python3-venv python3-pip
  procps  # pkill -s: the checkpoint test kills a whole MPI job (mpirun puts each rank in its own process group)
  chromium  # headless, for the report test (tests/python/test_report.py)
  # A real single-node Slurm for the --launcher slurm tests (tests/python/slurmcluster.py starts the daemons itself,
  # no systemd needed); slurm-wlm-basic-plugins (a dependency) brings the pmix plugin Open MPI's ranks start with.
  munge slurmctld slurmd slurm-client
  # MPICH beside Open MPI (which stays the default mpirun: higher alternatives priority): the sanitizer tree of
  # `make test` is built and its MPI suites run against it, parallel HDF5 of the same MPI included.
  mpich libmpich-dev libhdf5-mpich-dev
  # A real MPI program hympi did not build, studied as a user's would be (lmp; tests/python/userprograms.py runs
  # tests/data/lammps/in.melt, from its examples): about 70 MB installed. Not lammps-examples (145 MB for that file).
  lammps
  # Another, that writes its results into a file and appends them to the last run's (HPC Challenge's hpccoutf.txt;
  # tests/python/test_output_file.py): 1.3 MB installed.
  hpcc
  # Python's MPI (Debian's python3, not the venv's): a task farm on mpi4py.futures, whose workers MPI_Comm_spawn
  # starts (tests/programs/farm.py): 1.8 MB installed.
  python3-mpi4py
)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  if [[ $(id -u) -ne 0 ]]; then
    echo "bootstrap: missing packages ${missing[*]}; run as root or install them" >&2
    exit 1
  fi
  echo "bootstrap: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
