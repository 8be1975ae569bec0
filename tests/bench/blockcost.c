/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Cost of blocking calls: an 8-byte ping-pong (half round trip), an
 * 8-byte MPI_Allreduce, MPI_Barrier and an 8-byte MPI_Bcast, in us per
 * call, each the best of five rounds after a warm-up round. Run with and
 * without the shim, side by side (make bench), to see what the shim costs
 * calls it does not offload (docs/failures.md). Any number of
 * ranks (the ping-pong between ranks 0 and 1); usage: blockcost [CALLS]
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
    int    rank, n = argc > 1 ? atoi(argv[1]) : 20000;
    double a = 1, b = 0, t, pp = 1e9, ar = 1e9, bar = 1e9, bc = 1e9, v;
    char   m[8] = {0};

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    for (int rep = 0; rep < 6; rep++) { /* the first round warms up */
        MPI_Barrier(MPI_COMM_WORLD);
        t = MPI_Wtime();
        for (int i = 0; i < n; i++) {
            if (rank == 0) {
                MPI_Send(m, 8, MPI_BYTE, 1, 0, MPI_COMM_WORLD);
                MPI_Recv(m, 8, MPI_BYTE, 1, 0, MPI_COMM_WORLD,
                         MPI_STATUS_IGNORE);
            } else if (rank == 1) {
                MPI_Recv(m, 8, MPI_BYTE, 0, 0, MPI_COMM_WORLD,
                         MPI_STATUS_IGNORE);
                MPI_Send(m, 8, MPI_BYTE, 0, 0, MPI_COMM_WORLD);
            }
        }
        v = (MPI_Wtime() - t) / n / 2 * 1e6;
        pp = rep > 0 && v < pp ? v : pp;
        MPI_Barrier(MPI_COMM_WORLD);
        t = MPI_Wtime();
        for (int i = 0; i < n; i++) {
            MPI_Allreduce(&a, &b, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        }
        v = (MPI_Wtime() - t) / n * 1e6;
        ar = rep > 0 && v < ar ? v : ar;
        MPI_Barrier(MPI_COMM_WORLD);
        t = MPI_Wtime();
        for (int i = 0; i < n; i++) {
            MPI_Barrier(MPI_COMM_WORLD);
        }
        v = (MPI_Wtime() - t) / n * 1e6;
        bar = rep > 0 && v < bar ? v : bar;
        MPI_Barrier(MPI_COMM_WORLD);
        t = MPI_Wtime();
        for (int i = 0; i < n; i++) {
            MPI_Bcast(m, 8, MPI_BYTE, i % 2, MPI_COMM_WORLD);
        }
        v = (MPI_Wtime() - t) / n * 1e6;
        bc = rep > 0 && v < bc ? v : bc;
    }
    if (rank == 0) {
        printf("pingpong_half_rtt_us=%.3f allreduce8_us=%.3f "
               "barrier_us=%.3f bcast8_us=%.3f\n",
               pp, ar, bar, bc);
    }
    MPI_Finalize();
    return 0;
}
