/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The MPI library's call-time argument checks of the nonblocking,
 * persistent and neighbourhood collectives (args/args.h): the entry
 * point and what switches the checks. Each MPI's own checks:
 * args/mpich.c, args/ompi.c; what they share: args/common.c.
 */
#include "shim/args/args_int.h"

#include <string.h>

#if !CHK_MPICH && !CHK_OMPI
int ck_mpi(ck_t *k)
{
    (void)k;
    return MPI_SUCCESS; /* an MPI we know nothing of: it judges */
}
#endif

int shim_coll_check(const shim_coll_args_t *a, shim_check_t *out)
{
    ck_t k = {a, out, dps_coll_base(a->coll), a->coll > DPS_COLL_GROUP, 0, 0};
    int  inter = 0;

    memset(out, 0, sizeof(*out));
    out->raise_on = a->comm;
    if (a->comm == MPI_COMM_NULL ||
        PMPI_Comm_test_inter(a->comm, &inter) != MPI_SUCCESS || inter ||
        k.coll <= DPS_COLL_NONE || k.coll >= DPS_COLL_GROUP) {
        return MPI_SUCCESS; /* left to the MPI library */
    }
    PMPI_Comm_rank(a->comm, &k.rank);
    PMPI_Comm_size(a->comm, &k.size);
    return ck_mpi(&k);
}

/* An MPI_T control variable's value as a truth value; dflt when the MPI
 * has no such variable. */
static int cvar_on(const char *name, int dflt)
{
    unsigned char v[64];
    char          nm[128];
    int           provided, idx, n, nlen = (int)sizeof(nm), verb, bind, scope;
    int           dlen = 0, on = dflt;
    MPI_Datatype  dt;
    MPI_T_enum    en;
    MPI_T_cvar_handle h;

    if (PMPI_T_init_thread(MPI_THREAD_SINGLE, &provided) != MPI_SUCCESS) {
        return dflt;
    }
    if (PMPI_T_cvar_get_index(name, &idx) == MPI_SUCCESS &&
        PMPI_T_cvar_get_info(idx, nm, &nlen, &verb, &dt, &en, NULL, &dlen,
                             &bind, &scope) == MPI_SUCCESS &&
        (dt == MPI_INT || dt == MPI_UNSIGNED || dt == MPI_C_BOOL) &&
        PMPI_T_cvar_handle_alloc(idx, NULL, &h, &n) == MPI_SUCCESS) {
        memset(v, 0, sizeof(v));
        if (n == 1 && PMPI_T_cvar_read(h, v) == MPI_SUCCESS) {
            on = 0;
            for (size_t i = 0; i < sizeof(int); i++) {
                on |= v[i] != 0;
            }
        }
        PMPI_T_cvar_handle_free(&h);
    }
    PMPI_T_finalize();
    return on;
}

void shim_check_init(void)
{
#if CHK_OMPI
    ck_cfg.on = cvar_on("mpi_param_check", 1);
#elif CHK_MPICH
    ck_cfg.alias = cvar_on("MPIR_CVAR_COLL_ALIAS_CHECK", 1);
#endif
    if (PMPI_Comm_dup(MPI_COMM_SELF, &ck_cfg.probe) != MPI_SUCCESS ||
        PMPI_Comm_set_errhandler(ck_cfg.probe, MPI_ERRORS_RETURN) !=
            MPI_SUCCESS) {
        ck_cfg.probe = MPI_COMM_NULL; /* datatypes not judged */
    }
}

void shim_check_fini(void)
{
    if (ck_cfg.probe != MPI_COMM_NULL) {
        PMPI_Comm_free(&ck_cfg.probe);
    }
}
