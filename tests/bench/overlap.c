/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Overlap of MPI_Ialltoall / Ibcast / Iallgather / Iallreduce with
 * computation, measured the way the OSU Micro-Benchmarks (osu_ialltoall,
 * osu_ibcast, ...) do, so the numbers can be set beside OMB's:
 *   pure comm  = post + wait, averaged over iterations;
 *   overall    = post + compute for the pure-comm time + wait;
 *   overlap %  = max(0, 100 - 100 * (overall - compute) / pure comm),
 *   post       = time inside MPI_I* alone, in the pure-comm loop,
 * with each time averaged over ranks. Run it with and without the shim.
 * The compute phase is busy (OMB), a fixed amount of work (-W), or a
 * sleep (-S: a rank whose GPU kernel runs, or that waits for I/O: the
 * idle host); -T sets its length per size instead of the pure-comm time,
 * so that runs with and without the shim compute equally long.
 */
#define _GNU_SOURCE
#include <mpi.h>
#include <dirent.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <time.h>

static const char *coll = "ialltoall";
static double      sink; /* keeps the compute loop from being optimised away */
static double      batches_per_sec; /* work mode: calibrated kernel speed */
static int         sleeping;        /* -S: the compute phase sleeps */
static int         strided;         /* -V N: Ialltoall into runs of N doubles,
                                     * N apart */
static int         both;            /* -B: and from such runs */

/* -T: compute time per size, in us ("SIZE=US,..."); 0 if not given. */
static double given_us(const char *list, long n)
{
    const char *p = list;

    while (p != NULL && *p != '\0') {
        long   sz;
        double us;

        if (sscanf(p, "%ld=%lf", &sz, &us) == 2 && sz == n) {
            return us;
        }
        p = strchr(p, ',');
        p = p != NULL ? p + 1 : NULL;
    }
    return 0;
}

/* One batch of the compute kernel. */
static double kernel(double x)
{
    int j;

    for (j = 0; j < 64; j++) {
        x = x * 1.0000001 + 0.5;
    }
    return x;
}

/* Work mode: how many batches run per second on an otherwise idle rank. */
static void calibrate(void)
{
    double t0 = MPI_Wtime(), x = sink;
    long   n = 0;

    while (MPI_Wtime() - t0 < 0.2) {
        int k;

        for (k = 0; k < 1000; k++) { /* clock reads out of the loop */
            x = kernel(x);
        }
        n += 1000;
    }
    sink = x;
    batches_per_sec = n / (MPI_Wtime() - t0);
}

/* CPU time of this process, every thread (user + system), in s. */
static double rank_cpu(void)
{
    struct rusage ru;

    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_utime.tv_sec + ru.ru_stime.tv_sec +
           (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1e-6;
}

/* CPU time of every thread of every process this /proc shows, in s, from
 * their schedstat (ns). In an emulated host (its own PID namespace and
 * /proc) that is the host: ranks, their threads, the launcher's daemon,
 * an agent on the host; not the agents on its DPU. Threads that ended in
 * between are not counted. */
static double host_cpu(void)
{
    DIR               *d = opendir("/proc"), *t;
    struct dirent     *e, *f;
    unsigned long long ns, sum = 0;
    char               path[600];
    FILE              *fp;

    while (d != NULL && (e = readdir(d)) != NULL) {
        if (e->d_name[0] < '1' || e->d_name[0] > '9') {
            continue;
        }
        snprintf(path, sizeof(path), "/proc/%s/task", e->d_name);
        if ((t = opendir(path)) == NULL) {
            continue;
        }
        while ((f = readdir(t)) != NULL) {
            if (f->d_name[0] < '1' || f->d_name[0] > '9') {
                continue;
            }
            snprintf(path, sizeof(path), "/proc/%s/task/%s/schedstat",
                     e->d_name, f->d_name);
            if ((fp = fopen(path, "r")) != NULL) {
                if (fscanf(fp, "%llu", &ns) == 1) {
                    sum += ns;
                }
                fclose(fp);
            }
        }
        closedir(t);
    }
    if (d != NULL) {
        closedir(d);
    }
    return sum * 1e-9;
}

static void usage(void)
{
    fprintf(stderr,
            "usage: overlap [-c ialltoall|ibcast|iallgather|iallreduce]\n"
            "               [-m MIN:MAX] [-i ITERS] [-x WARMUP] [-t TESTS]\n"
            "  -c  collective (default ialltoall)\n"
            "  -m  message sizes in bytes, powers of two from MIN to MAX\n"
            "      (default 1:4194304; Ialltoall, Iallgather: bytes per\n"
            "      block; Iallreduce: MPI_DOUBLE sum of SIZE/8 elements,\n"
            "      at least one)\n"
            "  -i  timed iterations per size (default 100; a tenth above\n"
            "      64 KiB, at least 10)\n"
            "  -x  warm-up iterations per size (default 10)\n"
            "  -t  MPI_Test calls spread over the compute phase (OMB -t)\n"
            "  -W  compute a fixed amount of work (calibrated to take the\n"
            "      pure-comm time on an idle rank) instead of a fixed time:\n"
            "      CPU taken from the ranks (e.g. by an agent) then shows\n"
            "      in the overall time\n"
            "  -S  the compute phase sleeps (1 ns timer slack): the core is\n"
            "      idle meanwhile, as while a GPU kernel runs\n"
            "  -T SIZE=US,...  compute this long at these sizes instead of\n"
            "      the pure-comm time (the same for stock MPI and the shim)\n"
            "  -M  MPI_Init_thread(MPI_THREAD_MULTIPLE), e.g. for MPICH's\n"
            "      progress thread (MPIR_CVAR_ASYNC_PROGRESS=1)\n"
            "  -V N  Ialltoall only: each block is received into runs of N\n"
            "      doubles N doubles apart, in a buffer twice its size (a\n"
            "      strided vector type, as an FFT transpose's); sizes from\n"
            "      8 N bytes, whole runs\n"
            "  -B  with -V: the send side in the same strided type too\n"
            "  -C  CPU columns, over the overlapped iterations: rank_cpu, a\n"
            "      rank's process (all its threads) per iteration; host_cpu,\n"
            "      every process this /proc shows (in an emulated host: the\n"
            "      host's), per iteration and host (us)\n");
}

static const char *const colls[] = {"ialltoall", "ibcast", "iallgather",
                                    "iallreduce"};

static int coll_known(void)
{
    size_t i;

    for (i = 0; i < sizeof colls / sizeof colls[0]; i++) {
        if (strcmp(coll, colls[i]) == 0) {
            return 1;
        }
    }
    return 0;
}

static void post(void *s, void *r, int n, MPI_Request *req)
{
    MPI_Comm w = MPI_COMM_WORLD;

    if (strcmp(coll, "ialltoall") == 0 && strided) {
        static MPI_Datatype v = MPI_DATATYPE_NULL;
        static int          vn;

        if (vn != n) { /* one type per size, as a library keeps one */
            MPI_Datatype t;

            if (v != MPI_DATATYPE_NULL) {
                MPI_Type_free(&v);
            }
            MPI_Type_vector(n / 8 / strided, strided, 2 * strided, MPI_DOUBLE,
                            &t);
            MPI_Type_create_resized(t, 0, (MPI_Aint)n * 2, &v);
            MPI_Type_free(&t);
            MPI_Type_commit(&v);
            vn = n;
        }
        if (both) {
            MPI_Ialltoall(s, 1, v, r, 1, v, w, req);
        } else {
            MPI_Ialltoall(s, n / 8, MPI_DOUBLE, r, 1, v, w, req);
        }
    } else if (strcmp(coll, "ialltoall") == 0) {
        MPI_Ialltoall(s, n, MPI_BYTE, r, n, MPI_BYTE, w, req);
    } else if (strcmp(coll, "iallgather") == 0) {
        MPI_Iallgather(s, n, MPI_BYTE, r, n, MPI_BYTE, w, req);
    } else if (strcmp(coll, "iallreduce") == 0) {
        MPI_Iallreduce(s, r, n >= 8 ? n / 8 : 1, MPI_DOUBLE, MPI_SUM, w, req);
    } else {
        MPI_Ibcast(s, n, MPI_BYTE, 0, w, req);
    }
}

/* Busy computation for `secs` seconds (or, in work mode, the work that
 * takes that long on an idle rank), with `tests` MPI_Test calls. */
static void compute(double secs, int tests, MPI_Request *req)
{
    double t0 = MPI_Wtime(), slice = secs / (tests + 1), x = sink;
    long   per = (long)(secs * batches_per_sec / (tests + 1)), b;
    int    done = 0, k;

    for (k = 0; k <= tests; k++) {
        double end = t0 + slice * (k + 1);

        if (sleeping) {
            double left = end - MPI_Wtime();

            if (left > 0) {
                struct timespec ts = {(time_t)left,
                                      (long)((left - (time_t)left) * 1e9)};

                clock_nanosleep(CLOCK_MONOTONIC, 0, &ts, NULL);
            }
        } else if (batches_per_sec > 0) {
            for (b = 0; b < per; b++) {
                x = kernel(x);
            }
        } else {
            while (MPI_Wtime() < end) {
                x = kernel(x);
            }
        }
        if (k < tests && !done) {
            MPI_Test(req, &done, MPI_STATUS_IGNORE);
        }
    }
    sink = x;
}

int main(int argc, char **argv)
{
    long        min = 1, max = 4 << 20, n;
    int         iters0 = 100, warm = 10, tests = 0, rank, size, c, work = 0;
    int         multiple = 0, provided, cpu = 0, host_first = 0, nhosts = 1;
    const char *times = NULL;
    char       *s, *r;

    for (c = 1; c < argc; c++) { /* before MPI_Init: how to start it */
        multiple |= strcmp(argv[c], "-M") == 0;
    }
    if (multiple) {
        MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    } else {
        MPI_Init(&argc, &argv);
    }
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    while ((c = getopt(argc, argv, "c:m:i:x:t:WST:MV:BCh")) != -1) {
        switch (c) {
        case 'c': coll = optarg; break;
        case 'm':
            if (sscanf(optarg, "%ld:%ld", &min, &max) != 2) {
                min = max = atol(optarg);
            }
            break;
        case 'i': iters0 = atoi(optarg); break;
        case 'x': warm = atoi(optarg); break;
        case 't': tests = atoi(optarg); break;
        case 'W': work = 1; break;
        case 'S': sleeping = 1; break;
        case 'T': times = optarg; break;
        case 'M': break;
        case 'V': strided = atoi(optarg); break;
        case 'B': both = 1; break;
        case 'C': cpu = 1; break;
        default:
            if (rank == 0) {
                usage();
            }
            MPI_Finalize();
            return c == 'h' ? 0 : 2;
        }
    }
    if (!coll_known() || min < 1 || strided < 0 || (both && !strided) ||
        (strided && (min < 8 * strided || min % (8 * strided) != 0 ||
                     strcmp(coll, "ialltoall") != 0)) ||
        max < min || iters0 < 1 || warm < 0 || tests < 0) {
        if (rank == 0) {
            usage();
        }
        MPI_Finalize();
        return 2;
    }
    s = malloc((size_t)max * size * (strided ? 2 : 1));
    r = malloc((size_t)max * size * (strided ? 2 : 1));
    if (s == NULL || r == NULL) {
        fprintf(stderr, "overlap: out of memory\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    if (work) {
        calibrate();
    }
    if (sleeping) {
        /* Wake when asked: the default 50 us slack would lengthen every
         * compute phase unevenly. */
        prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
    }
    if (cpu) {
        /* One rank of each host samples the host's processes. */
        MPI_Comm node;
        int      nr;

        MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank,
                            MPI_INFO_NULL, &node);
        MPI_Comm_rank(node, &nr);
        host_first = nr == 0;
        MPI_Allreduce(&host_first, &nhosts, 1, MPI_INT, MPI_SUM,
                      MPI_COMM_WORLD);
        MPI_Comm_free(&node);
    }
    memset(s, rank + 1, (size_t)max * size * (strided ? 2 : 1));
    memset(r, 0, (size_t)max * size * (strided ? 2 : 1));
    if (rank == 0) {
        printf("# %s, %d ranks, OMB method, times in us, MPI_Test calls "
               "during compute: %d, compute: %s%s\n",
               coll, size, tests,
               sleeping ? "sleep"
               : work   ? "fixed work"
                        : "fixed time",
               times != NULL ? " of given length" : "");
        if (strided) {
            printf("# received into runs of %d doubles, %d apart (strided "
                   "type)%s\n",
                   strided, strided, both ? ", sent from the same" : "");
        }
        printf("# %10s %12s %12s %12s %9s %9s", "size", "pure_comm", "overall",
               "compute", "overlap%", "post");
        printf(cpu ? " %10s %10s\n" : "\n", "rank_cpu", "host_cpu");
    }
    for (n = min; n <= max; n *= 2) {
        int iters = n > 65536 ? (iters0 / 10 > 10 ? iters0 / 10 : 10) : iters0,
            i;
        double t, pure = 0, overall = 0, comp = 0, postt = 0, v[6], sum[6];
        double ctime, rc0 = 0, hc0 = 0;
        MPI_Request req;

        for (i = 0; i < warm + iters; i++) {
            if (i == warm) {
                MPI_Barrier(MPI_COMM_WORLD);
                pure = postt = 0;
            }
            t = MPI_Wtime();
            post(s, r, (int)n, &req);
            postt += MPI_Wtime() - t;
            MPI_Wait(&req, MPI_STATUS_IGNORE);
            pure += MPI_Wtime() - t;
        }
        pure /= iters;
        ctime = given_us(times, n) > 0 ? given_us(times, n) * 1e-6 : pure;
        for (i = 0; i < warm + iters; i++) {
            double tc;

            if (i == warm) {
                MPI_Barrier(MPI_COMM_WORLD);
                overall = comp = 0;
                rc0 = cpu ? rank_cpu() : 0;
                hc0 = cpu && host_first ? host_cpu() : 0;
            }
            t = MPI_Wtime();
            post(s, r, (int)n, &req);
            tc = MPI_Wtime();
            compute(ctime, tests, &req);
            comp += MPI_Wtime() - tc;
            MPI_Wait(&req, MPI_STATUS_IGNORE);
            overall += MPI_Wtime() - t;
        }
        v[0] = pure;
        v[1] = overall / iters;
        v[2] = comp / iters;
        v[3] = postt / iters;
        v[4] = cpu ? (rank_cpu() - rc0) / iters : 0;
        v[5] = cpu && host_first ? (host_cpu() - hc0) / iters : 0;
        MPI_Reduce(v, sum, 6, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
        if (rank == 0) {
            double p = sum[0] / size, o = sum[1] / size, k = sum[2] / size;
            double ov = 100.0 - 100.0 * (o - k) / p;

            printf("  %10ld %12.2f %12.2f %12.2f %9.1f %9.2f", n, p * 1e6,
                   o * 1e6, k * 1e6, ov < 0 ? 0 : ov, sum[3] / size * 1e6);
            if (cpu) {
                printf(" %10.2f %10.2f", sum[4] / size * 1e6,
                       sum[5] / nhosts * 1e6);
            }
            printf("\n");
            fflush(stdout);
        }
    }
    free(s);
    free(r);
    MPI_Finalize();
    return 0;
}
