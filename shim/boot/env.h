/* SPDX-License-Identifier: BSD-3-Clause */
/* The agent's environment, made by its spawner (boot/spawn.c); no MPI
 * here, so it is unit-tested without it (boot/env.c). */
#ifndef SHIM_ENV_H
#define SHIM_ENV_H

/* Environment for the agent: envp minus LD_PRELOAD and launcher
 * variables; set ("NAME=value", or NULL) replaces any NAME= entry. Returns
 * a malloc'ed NULL-terminated array of the original strings and set (free
 * only the array), or NULL when out of memory. */
char **shim_agent_env(char *const *envp, const char *set);

/* Is this "NAME=value" entry stripped from the agent's environment? */
int shim_env_stripped(const char *entry);

#endif
