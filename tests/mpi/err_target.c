/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Erroneous calls to the offloaded collectives, which must end (with an
 * error, or aborted by the error handler) and never hang. ERR_CASE picks
 * one:
 *   bcast_len  MPI_Ibcast where the root posts 10 x 4096 ints and the
 *              others 4096 (ERR_ROOT, default 0, is the root)
 *   bcast_len2 ... where one rank other than the root posts more
 *   a2a_size   MPI_Ialltoall whose send block is twice its receive block
 *              on rank ERR_RANK (default: the last)
 *   alias      MPI_Ialltoall with the send buffer the receive buffer (no
 *              MPI_IN_PLACE) on rank ERR_RANK
 * ERR_HANDLER=return sets MPI_ERRORS_RETURN on MPI_COMM_WORLD (default:
 * MPI's fatal handler). Each rank prints the error class its call and its
 * wait returned, then "result: ended" from rank 0; with the fatal handler
 * the job ends in MPI_Abort instead.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define N 4096

static int getenv_int(const char *n, int d)
{
    const char *v = getenv(n);

    return v != NULL ? atoi(v) : d;
}

int main(int argc, char **argv)
{
    const char *cas = getenv("ERR_CASE") ? getenv("ERR_CASE") : "bcast_len";
    int  rank, size, rc_post, rc_wait = MPI_SUCCESS, cls_p = 0, cls_w = 0;
    int *s, *r, bad;
    MPI_Request q = MPI_REQUEST_NULL;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (getenv("ERR_HANDLER") &&
        strcmp(getenv("ERR_HANDLER"), "return") == 0) {
        MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
        MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
    }
    bad = getenv_int("ERR_RANK", size - 1);
    s = calloc((size_t)10 * N * (size_t)size, sizeof(int));
    r = calloc((size_t)10 * N * (size_t)size, sizeof(int));
    if (strcmp(cas, "bcast_len") == 0) {
        int root = getenv_int("ERR_ROOT", 0);

        rc_post = MPI_Ibcast(r, rank == root ? 10 * N : N, MPI_INT, root,
                             MPI_COMM_WORLD, &q);
    } else if (strcmp(cas, "bcast_len2") == 0) {
        rc_post = MPI_Ibcast(r, rank == bad && bad != 0 ? 10 * N : N, MPI_INT,
                             0, MPI_COMM_WORLD, &q);
    } else if (strcmp(cas, "a2a_size") == 0) {
        rc_post = MPI_Ialltoall(s, rank == bad ? 2 * N : N, MPI_INT, r, N,
                                MPI_INT, MPI_COMM_WORLD, &q);
    } else if (strcmp(cas, "alias") == 0) {
        rc_post = MPI_Ialltoall(rank == bad ? r : s, N, MPI_INT, r, N, MPI_INT,
                                MPI_COMM_WORLD, &q);
    } else {
        fprintf(stderr, "unknown ERR_CASE %s\n", cas);
        MPI_Abort(MPI_COMM_WORLD, 2);
        return 2;
    }
    if (rc_post == MPI_SUCCESS && q != MPI_REQUEST_NULL) {
        rc_wait = MPI_Wait(&q, MPI_STATUS_IGNORE);
    }
    MPI_Error_class(rc_post, &cls_p);
    MPI_Error_class(rc_wait, &cls_w);
    printf("rank %d: post class %d, wait class %d, %s\n", rank, cls_p, cls_w,
           rc_post != MPI_SUCCESS || rc_wait != MPI_SUCCESS ? "error reported"
                                                            : "no error");
    fflush(stdout);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) {
        printf("result: ended\n");
    }
    free(s);
    free(r);
    MPI_Finalize();
    return 0;
}
