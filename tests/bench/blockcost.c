/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Cost of blocking calls: an 8-byte ping-pong (half round trip), an
 * 8-byte MPI_Allreduce and MPI_Barrier, in us per call, measured after a
 * warm-up round. Run with and without the shim, side by side, to see
 * what watching blocking calls for agent failures costs (README,
 * "Failure behaviour"). 2 ranks; usage: blockcost [CALLS]
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
    int rank, n = argc > 1 ? atoi(argv[1]) : 20000;
    double a = 1, b = 0, t, pp = 0, ar = 0, bar = 0;
    char m[8] = {0};

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    for (int rep = 0; rep < 2; rep++) {   /* the first round warms up */
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
        pp = (MPI_Wtime() - t) / n / 2 * 1e6;
        MPI_Barrier(MPI_COMM_WORLD);
        t = MPI_Wtime();
        for (int i = 0; i < n; i++) {
            MPI_Allreduce(&a, &b, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        }
        ar = (MPI_Wtime() - t) / n * 1e6;
        MPI_Barrier(MPI_COMM_WORLD);
        t = MPI_Wtime();
        for (int i = 0; i < n; i++) {
            MPI_Barrier(MPI_COMM_WORLD);
        }
        bar = (MPI_Wtime() - t) / n * 1e6;
    }
    if (rank == 0) {
        printf("pingpong_half_rtt_us=%.2f allreduce8_us=%.2f barrier_us=%.2f\n",
               pp, ar, bar);
    }
    MPI_Finalize();
    return 0;
}
