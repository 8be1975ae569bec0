/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The example of include/dpushim.h in docs/api.md: every rank sends a
 * block to the next rank and receives one from the previous, as one
 * persistent pattern group started each iteration while the rank
 * computes. Without the shim the same exchange runs with MPI_Isend /
 * MPI_Irecv.
 *
 *   mpicc pattern.c $(pkg-config --cflags --libs dpushim) -o pattern
 *   mpirun -np 4 ./pattern
 *
 * (Linked with the library, the program runs under the shim; built with
 * `pkg-config --cflags` alone it runs under it only when preloaded.)
 */
#include <dpushim.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#define N (1 << 18) /* doubles per block: 2 MiB */

int main(int argc, char **argv)
{
    int     rank, size, right, left, rc, bad = 0;
    double *out = malloc(N * sizeof(double)), *in = malloc(N * sizeof(double));
    MPI_Request     req[2];
    MPI_Status      st[2];
    dpushim_group_t g;
    int             offloaded;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    right = (rank + 1) % size;
    left = (rank + size - 1) % size;

    /* Collective: every rank begins and ends a group. */
    rc = dpushim_group_begin(MPI_COMM_WORLD, &g);
    offloaded = rc == DPUSHIM_SUCCESS;
    if (offloaded) {
        dpushim_group_send(g, out, N, MPI_DOUBLE, right, 0);
        dpushim_group_recv(g, in, N, MPI_DOUBLE, left, 0);
        rc = dpushim_group_end_persistent(&g, &req[0]);
        if (rc != DPUSHIM_SUCCESS) {
            fprintf(stderr, "dpushim: %s\n", dpushim_error_string(rc));
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
    } else if (rank == 0) {
        printf("no offload (%s): plain MPI\n", dpushim_error_string(rc));
    }

    for (int it = 0; it < 10; it++) {
        for (int i = 0; i < N; i++) {
            out[i] = rank * 1e6 + it * 1e3 + i % 1000;
        }
        if (offloaded) {
            MPI_Start(&req[0]); /* the agent moves the data ... */
        } else {
            MPI_Irecv(in, N, MPI_DOUBLE, left, 0, MPI_COMM_WORLD, &req[0]);
            MPI_Isend(out, N, MPI_DOUBLE, right, 0, MPI_COMM_WORLD, &req[1]);
        }
        /* ... while this rank computes (here: nothing). */
        MPI_Waitall(offloaded ? 1 : 2, req, st);
        for (int i = 0; i < N; i++) {
            bad += in[i] != left * 1e6 + it * 1e3 + i % 1000;
        }
    }
    if (offloaded) {
        MPI_Request_free(&req[0]);
    }
    MPI_Allreduce(MPI_IN_PLACE, &bad, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) {
        printf("%s: %d wrong values\n", bad ? "FAILED" : "ok", bad);
    }
    free(out);
    free(in);
    MPI_Finalize();
    return bad != 0;
}
