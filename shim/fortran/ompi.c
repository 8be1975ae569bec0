/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Fortran on Open MPI (fortran/fortran.h): the argument conversions, MPI_INIT
 * and MPI_FINALIZE (where the shim starts and reports). The collectives:
 * fortran/ompi_colls.c; the completion calls: fortran/ompi_wait.c.
 */
#include "shim/fortran/fortran.h"

#if defined(OPEN_MPI) && OPEN_MPI

#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

/* Addresses of Open MPI's Fortran sentinels (common blocks in libmpi,
 * one per name mangling). */
static struct {
    pthread_once_t once;
    const void    *in_place[4], *bottom[4], *st_ignore[4], *sts_ignore[4];
} fs = {PTHREAD_ONCE_INIT, {0}, {0}, {0}, {0}};

static void fs_load(const void **v, const char *base)
{
    char n[64];

    snprintf(n, sizeof(n), "%s", base);
    v[0] = dlsym(RTLD_DEFAULT, n);
    snprintf(n, sizeof(n), "%s_", base);
    v[1] = dlsym(RTLD_DEFAULT, n);
    snprintf(n, sizeof(n), "%s__", base);
    v[2] = dlsym(RTLD_DEFAULT, n);
    for (size_t i = 0; i < strlen(base) && i < sizeof(n) - 1; i++) {
        n[i] =
            (char)(base[i] >= 'a' && base[i] <= 'z' ? base[i] - 32 : base[i]);
    }
    n[strlen(base) < sizeof(n) ? strlen(base) : sizeof(n) - 1] = '\0';
    v[3] = dlsym(RTLD_DEFAULT, n);
}

static void fs_init(void)
{
    fs_load(fs.in_place, "mpi_fortran_in_place");
    fs_load(fs.bottom, "mpi_fortran_bottom");
    fs_load(fs.st_ignore, "mpi_fortran_status_ignore");
    fs_load(fs.sts_ignore, "mpi_fortran_statuses_ignore");
}

static int is_any(const void *p, const void *const *v)
{
    pthread_once(&fs.once, fs_init);
    return p != NULL && (p == v[0] || p == v[1] || p == v[2] || p == v[3]);
}

/* A Fortran buffer argument as C sees it. */
void *shim_fbuf(void *p)
{
    if (is_any(p, fs.in_place)) {
        return MPI_IN_PLACE;
    }
    if (is_any(p, fs.bottom)) {
        return MPI_BOTTOM;
    }
    return p;
}

int shim_fst_ignored(const MPI_Fint *s)
{
    return s == NULL || s == MPI_F_STATUS_IGNORE || is_any(s, fs.st_ignore);
}

MPI_Fint *shim_fst_ignore_arg(void)
{
    pthread_once(&fs.once, fs_init);
    for (int i = 0; i < 4; i++) {
        if (fs.st_ignore[i] != NULL) {
            return (MPI_Fint *)fs.st_ignore[i];
        }
    }
    return NULL;
}

int shim_fsts_ignored(const MPI_Fint *s)
{
    return s == NULL || s == MPI_F_STATUSES_IGNORE || is_any(s, fs.sts_ignore);
}

void shim_fset(MPI_Fint *ierr, int rc)
{
    if (ierr != NULL) { /* optional in mpi_f08 */
        *ierr = rc;
    }
}

/* A request the call started, to the Fortran side. By address: the
 * call that sets it is an argument of the same call, evaluated in no
 * particular order. */
void shim_fstarted(int rc, const MPI_Request *r, MPI_Fint *req, MPI_Fint *ierr)
{
    if (rc == MPI_SUCCESS) {
        *req = PMPI_Request_c2f(*r);
    }
    fset(ierr, rc);
}

/* ---- set-up and tear-down ---------------------------------------------- */

/* The shim starts in MPI_Init and reports in MPI_Finalize (boot/init.c):
 * a Fortran program reaches them here. */
#define P_INIT (MPI_Fint * ierr)
void f_init P_INIT;
void f_init P_INIT
{
    fset(ierr, MPI_Init(NULL, NULL));
}
FORTRAN(init, INIT, P_INIT);

#define P_INIT_THREAD \
    (MPI_Fint * required, MPI_Fint * provided, MPI_Fint * ierr)
void f_init_thread P_INIT_THREAD;
void f_init_thread P_INIT_THREAD
{
    int prov = MPI_THREAD_SINGLE,
        rc = MPI_Init_thread(NULL, NULL, *required, &prov);

    *provided = prov;
    fset(ierr, rc);
}
FORTRAN(init_thread, INIT_THREAD, P_INIT_THREAD);

void f_finalize P_INIT;
void f_finalize P_INIT
{
    fset(ierr, MPI_Finalize());
}
FORTRAN(finalize, FINALIZE, P_INIT);

#endif /* OPEN_MPI */
