#!/bin/sh
# netns-launch.sh - the launcher's program prefix: runs the rest of the command
# line in the network namespace of this rank's host, so each rank has the
# rails of its own "node" (DESIGN.md, test bed conventions).
#
#   RI2N_MPI_NS_PREFIX  namespace name without the host number (ri2n-TAG-h)
#   RI2N_MPI_HOSTS      hosts in the bed; rank r runs on host (r mod HOSTS) + 1
#
# Open MPI's mpirun sets OMPI_COMM_WORLD_RANK in every rank's environment,
# MPICH's hydra (mpiexec.mpich) sets PMI_RANK.
prefix=${RI2N_MPI_NS_PREFIX:?set RI2N_MPI_NS_PREFIX (e.g. ri2n-mpi-h)}
rank=${OMPI_COMM_WORLD_RANK:-${PMI_RANK:?not started by Open MPI mpirun or MPICH mpiexec}}
hosts=${RI2N_MPI_HOSTS:-2}
exec ip netns exec "$prefix$((rank % hosts + 1))" "$@"
