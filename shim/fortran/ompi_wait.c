/* SPDX-License-Identifier: BSD-3-Clause */
/* Fortran on Open MPI (fortran/fortran.h): completion and request calls. */
#include "shim/fortran/fortran.h"
#include "shim/fortran/probe.h"

#if defined(OPEN_MPI) && OPEN_MPI

#include <dlfcn.h>
#include <pthread.h>
#include <stdlib.h>

/* ---- completion -------------------------------------------------------- */

/* Fortran's LOGICAL .TRUE. (gfortran's, Open MPI's default). */
#define FTRUE 1

static void status_out(const MPI_Status *c, MPI_Fint *f)
{
    if (!shim_fst_ignored(f)) {
        PMPI_Status_c2f(c, f);
    }
}

/* n Fortran requests as C ones; NULL: out of memory. */
static MPI_Request *reqs_c(const MPI_Fint *f, int n)
{
    MPI_Request *c = malloc(sizeof(*c) * (size_t)(n > 0 ? n : 1));

    for (int i = 0; c != NULL && i < n; i++) {
        c[i] = PMPI_Request_f2c(f[i]);
    }
    return c;
}

/* Back to Fortran: what the call completed is MPI_REQUEST_NULL now. */
static void reqs_f(const MPI_Request *c, MPI_Fint *f, int n)
{
    for (int i = 0; i < n; i++) {
        f[i] = PMPI_Request_c2f(c[i]);
    }
}

/* Room for n C statuses, or MPI_STATUSES_IGNORE; *oom on failure. */
static MPI_Status *statuses_c(const MPI_Fint *f, int n, int *oom)
{
    MPI_Status *c;

    if (shim_fsts_ignored(f)) {
        return MPI_STATUSES_IGNORE;
    }
    c = malloc(sizeof(MPI_Status) * (size_t)(n > 0 ? n : 1));
    *oom |= c == NULL;
    return c;
}

/* The first n of c into f (none when f is NULL); frees c. */
static void statuses_f(MPI_Status *c, MPI_Fint *f, int n, const int *unused)
{
    (void)unused;
    if (c == MPI_STATUSES_IGNORE) {
        return;
    }
    for (int i = 0; f != NULL && i < n; i++) {
        PMPI_Status_c2f(&c[i], f + (size_t)i * FSTATUS_SIZE);
    }
    free(c);
}

#define P_WAIT (MPI_Fint * req, MPI_Fint * status, MPI_Fint * ierr)
void f_wait P_WAIT;
void f_wait P_WAIT
{
    MPI_Request r = PMPI_Request_f2c(*req);
    MPI_Status  st;
    int         rc = MPI_Wait(&r, &st);

    *req = PMPI_Request_c2f(r);
    if (rc == MPI_SUCCESS) {
        status_out(&st, status);
    }
    fset(ierr, rc);
}
FORTRAN(wait, WAIT, P_WAIT);

#define P_TEST \
    (MPI_Fint * req, MPI_Fint * flag, MPI_Fint * status, MPI_Fint * ierr)
void f_test P_TEST;
void f_test P_TEST
{
    MPI_Request r = PMPI_Request_f2c(*req);
    MPI_Status  st;
    int         fl = 0, rc = MPI_Test(&r, &fl, &st);

    *req = PMPI_Request_c2f(r);
    if (rc == MPI_SUCCESS) {
        *flag = fl ? FTRUE : 0;
        if (fl) {
            status_out(&st, status);
        }
    }
    fset(ierr, rc);
}
FORTRAN_P(test, TEST, P_TEST);

#define P_WAITALL \
    (MPI_Fint * count, MPI_Fint * reqs, MPI_Fint * statuses, MPI_Fint * ierr)
void f_waitall P_WAITALL;
void f_waitall P_WAITALL
{
    int          n = *count, oom = 0, rc = MPI_ERR_NO_MEM;
    MPI_Request *r = reqs_c(reqs, n);
    MPI_Status  *st = statuses_c(statuses, n, &oom);

    if (r != NULL && !oom) {
        rc = MPI_Waitall(n, r, st);
        reqs_f(r, reqs, n);
        statuses_f(st, statuses, n, NULL);
    } else if (st != MPI_STATUSES_IGNORE) {
        free(st);
    }
    free(r);
    fset(ierr, rc);
}
FORTRAN(waitall, WAITALL, P_WAITALL);

#define P_TESTALL                                                             \
    (MPI_Fint * count, MPI_Fint * reqs, MPI_Fint * flag, MPI_Fint * statuses, \
     MPI_Fint * ierr)
void f_testall P_TESTALL;
void f_testall P_TESTALL
{
    int          n = *count, fl = 0, oom = 0, rc = MPI_ERR_NO_MEM;
    MPI_Request *r = reqs_c(reqs, n);
    MPI_Status  *st = statuses_c(statuses, n, &oom);

    if (r != NULL && !oom) {
        rc = MPI_Testall(n, r, &fl, st);
        reqs_f(r, reqs, n);
        *flag = fl ? FTRUE : 0;
        statuses_f(st, fl ? statuses : NULL, fl ? n : 0, NULL);
    } else if (st != MPI_STATUSES_IGNORE) {
        free(st);
    }
    free(r);
    fset(ierr, rc);
}
FORTRAN_P(testall, TESTALL, P_TESTALL);

#define P_WAITANY                                                            \
    (MPI_Fint * count, MPI_Fint * reqs, MPI_Fint * index, MPI_Fint * status, \
     MPI_Fint * ierr)
void f_waitany P_WAITANY;
void f_waitany P_WAITANY
{
    int          n = *count, idx = MPI_UNDEFINED, rc = MPI_ERR_NO_MEM;
    MPI_Request *r = reqs_c(reqs, n);
    MPI_Status   st;

    if (r != NULL) {
        rc = MPI_Waitany(n, r, &idx, &st);
        reqs_f(r, reqs, n);
        if (rc == MPI_SUCCESS) {
            *index = idx == MPI_UNDEFINED ? MPI_UNDEFINED : idx + 1;
            status_out(&st, status);
        }
    }
    free(r);
    fset(ierr, rc);
}
FORTRAN(waitany, WAITANY, P_WAITANY);

#define P_TESTANY                                                          \
    (MPI_Fint * count, MPI_Fint * reqs, MPI_Fint * index, MPI_Fint * flag, \
     MPI_Fint * status, MPI_Fint * ierr)
void f_testany P_TESTANY;
void f_testany P_TESTANY
{
    int          n = *count, idx = MPI_UNDEFINED, fl = 0, rc = MPI_ERR_NO_MEM;
    MPI_Request *r = reqs_c(reqs, n);
    MPI_Status   st;

    if (r != NULL) {
        rc = MPI_Testany(n, r, &idx, &fl, &st);
        reqs_f(r, reqs, n);
        if (rc == MPI_SUCCESS) {
            *flag = fl ? FTRUE : 0;
            *index = idx == MPI_UNDEFINED ? MPI_UNDEFINED : idx + 1;
            if (fl) {
                status_out(&st, status);
            }
        }
    }
    free(r);
    fset(ierr, rc);
}
FORTRAN_P(testany, TESTANY, P_TESTANY);

#define P_SOME                                               \
    (MPI_Fint * count, MPI_Fint * reqs, MPI_Fint * outcount, \
     MPI_Fint * indices, MPI_Fint * statuses, MPI_Fint * ierr)

/* Waitsome and Testsome: indices 1-based, statuses in their order. */
static void some(int wait, MPI_Fint *count, MPI_Fint *reqs, MPI_Fint *outcount,
                 MPI_Fint *indices, MPI_Fint *statuses, MPI_Fint *ierr)
{
    int          n = *count, out = 0, oom = 0, rc = MPI_ERR_NO_MEM;
    MPI_Request *r = reqs_c(reqs, n);
    int         *idx = malloc(sizeof(int) * (size_t)(n > 0 ? n : 1));
    MPI_Status  *st = statuses_c(statuses, n, &oom);

    if (r != NULL && idx != NULL && !oom) {
        rc = wait ? MPI_Waitsome(n, r, &out, idx, st)
                  : MPI_Testsome(n, r, &out, idx, st);
        reqs_f(r, reqs, n);
        if (rc == MPI_SUCCESS) {
            *outcount = out;
            for (int i = 0; out != MPI_UNDEFINED && i < out; i++) {
                indices[i] = idx[i] + 1;
            }
        }
        statuses_f(st, statuses,
                   rc == MPI_SUCCESS && out != MPI_UNDEFINED ? out : 0, NULL);
    } else if (st != MPI_STATUSES_IGNORE) {
        free(st);
    }
    free(idx);
    free(r);
    fset(ierr, rc);
}

void f_waitsome P_SOME;
void f_waitsome P_SOME
{
    some(1, count, reqs, outcount, indices, statuses, ierr);
}
FORTRAN(waitsome, WAITSOME, P_SOME);

void f_testsome P_SOME;
void f_testsome P_SOME
{
    some(0, count, reqs, outcount, indices, statuses, ierr);
}
FORTRAN_P(testsome, TESTSOME, P_SOME);

#define P_GETST \
    (MPI_Fint * req, MPI_Fint * flag, MPI_Fint * status, MPI_Fint * ierr)

/*
 * Open MPI 4.1's own MPI_REQUEST_GET_STATUS answers .FALSE. whenever the
 * status argument is MPI_STATUS_IGNORE, finished or not (its binding
 * sets the flag and never reads C's answer back), and a program written
 * for it may count on that. Whether the library beneath does is found
 * once, by asking its binding about a finished generalized request.
 */
static struct {
    pthread_once_t once;
    int            ignore_false;
} gs = {PTHREAD_ONCE_INIT, 0};

static void gs_probe(void)
{
    void(*fn) P_GETST =
        (void(*) P_GETST)dlsym(RTLD_NEXT, "ompi_request_get_status_f");
    MPI_Fint    fr, flag = FTRUE, ierr = -1, *ignore = shim_fst_ignore_arg();
    MPI_Request r;

    if (fn == NULL || ignore == NULL || shim_fprobe_req(&r) != MPI_SUCCESS) {
        return;
    }
    fr = PMPI_Request_c2f(r);
    fn(&fr, &flag, ignore, &ierr);
    gs.ignore_false = ierr == MPI_SUCCESS && flag == 0;
    PMPI_Wait(&r, MPI_STATUS_IGNORE);
}

void f_request_get_status P_GETST;
void f_request_get_status P_GETST
{
    MPI_Status st;
    int fl = 0, rc = MPI_Request_get_status(PMPI_Request_f2c(*req), &fl, &st);

    if (rc == MPI_SUCCESS && shim_fst_ignored(status)) {
        pthread_once(&gs.once, gs_probe);
        fl = fl && !gs.ignore_false;
    }
    if (rc == MPI_SUCCESS) {
        *flag = fl ? FTRUE : 0;
        if (fl) {
            status_out(&st, status);
        }
    }
    fset(ierr, rc);
}
FORTRAN_P(request_get_status, REQUEST_GET_STATUS, P_GETST);

#define P_FREE (MPI_Fint * req, MPI_Fint * ierr)
void f_request_free P_FREE;
void f_request_free P_FREE
{
    MPI_Request r = PMPI_Request_f2c(*req);
    int         rc = MPI_Request_free(&r);

    if (rc == MPI_SUCCESS) {
        *req = PMPI_Request_c2f(r);
    }
    fset(ierr, rc);
}
FORTRAN(request_free, REQUEST_FREE, P_FREE);

void f_start P_FREE;
void f_start P_FREE
{
    MPI_Request r = PMPI_Request_f2c(*req);

    fset(ierr, MPI_Start(&r));
}
FORTRAN(start, START, P_FREE);

#define P_STARTALL (MPI_Fint * count, MPI_Fint * reqs, MPI_Fint * ierr)
void f_startall P_STARTALL;
void f_startall P_STARTALL
{
    MPI_Request *r = reqs_c(reqs, *count);

    fset(ierr, r != NULL ? MPI_Startall(*count, r) : MPI_ERR_NO_MEM);
    free(r);
}
FORTRAN(startall, STARTALL, P_STARTALL);

#endif /* OPEN_MPI */
