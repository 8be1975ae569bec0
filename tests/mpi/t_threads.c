/* SPDX-License-Identifier: BSD-3-Clause */
/* MPI_THREAD_MULTIPLE: two threads per rank post and complete offloaded
 * Ialltoall/Ibcast concurrently, each on its own communicator, and every
 * byte is compared with stock MPI (PMPI_Alltoall / a known pattern). */
#include <mpi.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NTHREADS 2
#define ITERS    30
#define BLOCK    (64 * 1024)

static int             rank, size;
static long long       counts[2]; /* offloaded calls: ialltoall, ibcast */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

typedef struct {
    MPI_Comm comm;
    int      id;
    int      errors;
} job_t;

static unsigned char pat(int t, int it, int src, int dst, size_t i)
{
    return (unsigned char)(t * 131 + it * 31 + src * 17 + dst * 7 + i * 13);
}

static void *worker(void *arg)
{
    job_t         *j = arg;
    size_t         n = (size_t)BLOCK * size, i;
    unsigned char *s = malloc(n), *r = malloc(n), *ref = malloc(n);
    unsigned char *b = malloc(BLOCK);
    int            it, d;

    for (it = 0; it < ITERS && s && r && ref && b; it++) {
        MPI_Request req[2];
        MPI_Status  st[2]; /* not MPI_STATUSES_IGNORE: MPICH's access
                            * attributes make gcc warn on it */
        int         root = it % size;

        for (d = 0; d < size; d++) {
            for (i = 0; i < BLOCK; i++) {
                s[(size_t)d * BLOCK + i] = pat(j->id, it, rank, d, i);
            }
        }
        memset(r, 0x5a, n);
        for (i = 0; i < BLOCK; i++) {
            b[i] = rank == root ? pat(j->id, it, root, -1, i) : 0;
        }
        MPI_Ialltoall(s, BLOCK, MPI_BYTE, r, BLOCK, MPI_BYTE, j->comm,
                      &req[0]);
        MPI_Ibcast(b, BLOCK, MPI_BYTE, root, j->comm, &req[1]);
        if (it % 2) {
            MPI_Waitall(2, req, st);
        } else {
            int done = 0;

            while (!done) {
                MPI_Testall(2, req, &done, st);
            }
        }
        PMPI_Alltoall(s, BLOCK, MPI_BYTE, ref, BLOCK, MPI_BYTE, j->comm);
        if (memcmp(r, ref, n) != 0) {
            fprintf(stderr,
                    "rank %d thread %d iter %d: ialltoall differs "
                    "from stock MPI\n",
                    rank, j->id, it);
            j->errors++;
        }
        for (i = 0; i < BLOCK; i++) {
            if (b[i] != pat(j->id, it, root, -1, i)) {
                fprintf(stderr,
                        "rank %d thread %d iter %d: ibcast byte "
                        "%zu wrong\n",
                        rank, j->id, it, i);
                j->errors++;
                break;
            }
        }
        pthread_mutex_lock(&lock);
        counts[0]++;
        counts[1]++;
        pthread_mutex_unlock(&lock);
    }
    free(s);
    free(r);
    free(ref);
    free(b);
    return NULL;
}

int main(int argc, char **argv)
{
    pthread_t th[NTHREADS];
    job_t     jobs[NTHREADS];
    long long tot[2];
    int       provided, t, errors = 0, all = 0;

    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (provided < MPI_THREAD_MULTIPLE) {
        if (rank == 0) {
            printf("MPI_THREAD_MULTIPLE not provided (%d)\n", provided);
        }
        MPI_Finalize();
        return 1;
    }
    for (t = 0; t < NTHREADS; t++) {
        MPI_Comm_dup(MPI_COMM_WORLD, &jobs[t].comm);
        jobs[t].id = t;
        jobs[t].errors = 0;
    }
    for (t = 0; t < NTHREADS; t++) {
        pthread_create(&th[t], NULL, worker, &jobs[t]);
    }
    for (t = 0; t < NTHREADS; t++) {
        pthread_join(th[t], NULL);
        errors += jobs[t].errors;
        MPI_Comm_free(&jobs[t].comm);
    }
    MPI_Reduce(counts, tot, 2, MPI_LONG_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    MPI_Allreduce(&errors, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) {
        printf("expect: ialltoall offloaded=%lld fallback=0 bytes=%lld\n",
               tot[0], tot[0] * (long long)BLOCK * size);
        printf("expect: ibcast offloaded=%lld fallback=0 bytes=%lld\n", tot[1],
               tot[1] * (long long)BLOCK);
        printf("result: %s\n", all ? "FAILED" : "ok");
    }
    MPI_Finalize();
    return all != 0;
}
