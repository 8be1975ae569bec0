/* SPDX-License-Identifier: BSD-3-Clause */
/* Runs offloaded collectives until killed: for the no-orphan-agent test. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
    const int block = 1 << 16;
    int       rank, size;
    char     *s, *r;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    s = malloc((size_t)block * size);
    r = malloc((size_t)block * size);
    memset(s, rank, (size_t)block * size);
    if (rank == 0) {
        printf("running\n");
        fflush(stdout);
    }
    for (;;) {
        MPI_Request req;

        MPI_Ialltoall(s, block, MPI_BYTE, r, block, MPI_BYTE, MPI_COMM_WORLD,
                      &req);
        MPI_Wait(&req, MPI_STATUS_IGNORE);
    }
    MPI_Finalize(); /* not reached */
    return 0;
}
