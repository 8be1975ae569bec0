/* SPDX-License-Identifier: BSD-3-Clause */
/* One 64 KiB Ialltoall and Ibcast checked against stock MPI: the program
 * the configuration tests of scripts/check.sh run under various
 * DPUSHIM_* settings. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
    const int   n = 64 * 1024;
    int         rank, size, bad = 0, allbad = 0, i;
    char       *s, *r, *ref, *b;
    MPI_Request req;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    s = malloc((size_t)n * size);
    r = malloc((size_t)n * size);
    ref = malloc((size_t)n * size);
    b = malloc(n);
    for (i = 0; i < n * size; i++) {
        s[i] = (char)(rank * 131 + i * 7 + 1);
    }
    memset(r, 0, (size_t)n * size);
    MPI_Ialltoall(s, n, MPI_BYTE, r, n, MPI_BYTE, MPI_COMM_WORLD, &req);
    MPI_Wait(&req, MPI_STATUS_IGNORE);
    PMPI_Alltoall(s, n, MPI_BYTE, ref, n, MPI_BYTE, MPI_COMM_WORLD);
    bad += memcmp(r, ref, (size_t)n * size) != 0;
    for (i = 0; i < n; i++) {
        b[i] = (rank == size - 1) ? (char)(i * 13 + 5) : 0;
    }
    MPI_Ibcast(b, n, MPI_BYTE, size - 1, MPI_COMM_WORLD, &req);
    MPI_Wait(&req, MPI_STATUS_IGNORE);
    for (i = 0; i < n; i++) {
        if (b[i] != (char)(i * 13 + 5)) {
            bad++;
            break;
        }
    }
    MPI_Allreduce(&bad, &allbad, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) {
        printf("result: %s\n", allbad ? "FAILED" : "ok");
    }
    free(s);
    free(r);
    free(ref);
    free(b);
    MPI_Finalize();
    return allbad != 0;
}
