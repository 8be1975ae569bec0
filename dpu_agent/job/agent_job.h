/* SPDX-License-Identifier: BSD-3-Clause */
/* The job as the agent learns it, and the dispatch of every message
 * (agent_job.c). */
#ifndef AGENT_JOB_H
#define AGENT_JOB_H

#include "dpu_agent/core/agent.h"

/* Register the dispatch for messages that come in through the ranks'
 * segments (a->up.handle), at start-up. */
void agent_job_init(agent_t *a);

/* Take the grants that wait on the grant socket (common/dps_grant.h).
 * Before the job layout is known they are kept aside; ranks send theirs
 * while the agent waits for the layout, and a full socket would block
 * or fail them. Called on every pass while wiring up, and whenever the
 * socket wakes the agent. */
void agent_grants_take(agent_t *a);

/* Close the grants still kept aside (at exit). */
void agent_grants_drop(agent_t *a);

/* Handle one decoded message. DPS_OK, DPS_ERR_AGAIN (its communicator
 * or instance is not known yet: handle it again later) or an error
 * (logged). */
int agent_handle(agent_t *a, const dps_msg_t *msg);

#endif
