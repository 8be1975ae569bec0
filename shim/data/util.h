/* SPDX-License-Identifier: BSD-3-Clause */
/* Shim helpers that need no MPI (unit-tested without it). */
#ifndef SHIM_UTIL_H
#define SHIM_UTIL_H

/* Environment for the agent: envp minus LD_PRELOAD and launcher
 * variables; set ("NAME=value", or NULL) replaces any NAME= entry. Returns
 * a malloc'ed NULL-terminated array of the original strings and set (free
 * only the array), or NULL when out of memory. */
char **shim_agent_env(char *const *envp, const char *set);

/* Is this "NAME=value" entry stripped from the agent's environment? */
int shim_env_stripped(const char *entry);

#endif
