#!/bin/sh
# zp_mpirun.sh NP PROGRAM [ARGS...] — runs PROGRAM under mpirun on this one machine for the tests:
# oversubscribed (more ranks than cores), as root when root, ranks yielding the core while they wait.
np="$1"
shift
root=""
[ "$(id -u)" = 0 ] && root="--allow-run-as-root"
export OMPI_MCA_mpi_yield_when_idle=1
export OMP_NUM_THREADS="${OMP_NUM_THREADS:-1}"
exec mpirun $root --oversubscribe --bind-to none -np "$np" "$@"
