/* SPDX-License-Identifier: BSD-3-Clause */
/* The agent's environment (boot/env.h): what it inherits from a rank's. */
#include "shim/boot/env.h"

#include <stdlib.h>
#include <string.h>

int shim_env_stripped(const char *e)
{
    /* The agent must not load the shim (and MPI) again, nor look like an
     * MPI process to the launcher's PMI/PMIx machinery. */
    static const char *exact[] = {"LD_PRELOAD=", "LD_AUDIT="};
    static const char *prefix[] = {"OMPI_", "PMIX_",  "PMI_",  "HYDRA_",
                                   "HYDI_", "MPIR_",  "ORTE_", "OPAL_",
                                   "PRTE_", "MPICH_", "I_MPI_"};
    size_t             i;

    for (i = 0; i < sizeof(exact) / sizeof(exact[0]); i++) {
        if (!strncmp(e, exact[i], strlen(exact[i]))) {
            return 1;
        }
    }
    for (i = 0; i < sizeof(prefix) / sizeof(prefix[0]); i++) {
        if (!strncmp(e, prefix[i], strlen(prefix[i]))) {
            return 1;
        }
    }
    return 0;
}

char **shim_agent_env(char *const *envp, const char *set)
{
    size_t n = 0, k = 0, name = 0;
    char **out;

    while (envp != NULL && envp[n] != NULL) {
        n++;
    }
    if (set != NULL && strchr(set, '=') != NULL) {
        name = (size_t)(strchr(set, '=') - set) + 1; /* "NAME=" */
    }
    out = calloc(n + 2, sizeof(char *));
    if (out == NULL) {
        return NULL;
    }
    for (size_t i = 0; i < n; i++) {
        if (!shim_env_stripped(envp[i]) &&
            (name == 0 || strncmp(envp[i], set, name) != 0)) {
            out[k++] = envp[i];
        }
    }
    if (name != 0) {
        out[k++] = (char *)set;
    }
    out[k] = NULL;
    return out;
}
