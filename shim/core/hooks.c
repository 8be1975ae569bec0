/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The callbacks upper layers hand down to core (shim_hooks, core/shim.h),
 * in a file of their own: every core file reads them, and this one
 * calls nothing, so reading them makes no loop among core's files.
 */
#include "shim/core/shim.h"

shim_hooks_t shim_hooks;
