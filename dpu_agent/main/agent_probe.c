/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dpu_agent --probe: the RDMA devices rdma-core sees, and whether one of
 * them is an NVIDIA BlueField DPU (its integrated ConnectX reports the
 * BlueField's PCI device id as the verbs vendor part id); and whether
 * this agent runs on a BlueField's own Arm cores.
 */
#include "dpu_agent/main/agent_probe.h"

#include <errno.h>
#include <infiniband/verbs.h>
#include <stdio.h>
#include <string.h>

#define OUI_MELLANOX 0x02c9u /* IEEE OUI in ibv_device_attr.vendor_id */

const char *agent_bluefield_name(uint32_t vendor_id, uint32_t part_id)
{
    if (vendor_id != OUI_MELLANOX) {
        return NULL;
    }
    switch (part_id) {
    case 0xa2d2: return "BlueField";
    case 0xa2d6: return "BlueField-2";
    case 0xa2dc: return "BlueField-3";
    default: return NULL;
    }
}

static const char *port_state(enum ibv_port_state s)
{
    switch (s) {
    case IBV_PORT_ACTIVE: return "active";
    case IBV_PORT_DOWN: return "down";
    case IBV_PORT_INIT: return "init";
    case IBV_PORT_ARMED: return "armed";
    default: return "other";
    }
}

int agent_probe(FILE *out)
{
    struct ibv_device **list;
    const char         *found = NULL, *found_dev = NULL;
    int                 n = 0, i;

    errno = 0;
    list = ibv_get_device_list(&n);
    if (list == NULL && errno == ENOSYS) {
        fprintf(out, "RDMA devices (rdma-core): none: this kernel offers no "
                     "RDMA (no /sys/class/infiniband)\n");
        fprintf(out, "BlueField DPU: none found (agents run on the host, as "
                     "emulated DPUs)\n");
        return 1;
    }
    if (list == NULL) {
        fprintf(out, "RDMA devices: cannot list them: %s\n",
                strerror(errno ? errno : ENOSYS));
        fprintf(out, "BlueField DPU: unknown\n");
        return 2;
    }
    fprintf(out, "RDMA devices (rdma-core): %d\n", n);
    for (i = 0; i < n; i++) {
        struct ibv_context    *ctx = ibv_open_device(list[i]);
        struct ibv_device_attr attr;
        const char            *name = ibv_get_device_name(list[i]), *bf;
        uint8_t                p;

        if (ctx == NULL || ibv_query_device(ctx, &attr) != 0) {
            fprintf(out, "  %s: cannot query: %s\n", name, strerror(errno));
            if (ctx != NULL) {
                ibv_close_device(ctx);
            }
            continue;
        }
        bf = agent_bluefield_name(attr.vendor_id, attr.vendor_part_id);
        fprintf(out, "  %s: vendor %#06x part %#06x firmware %s%s%s\n", name,
                attr.vendor_id, attr.vendor_part_id, attr.fw_ver,
                bf ? ", " : "", bf ? bf : "");
        for (p = 1; p <= attr.phys_port_cnt; p++) {
            struct ibv_port_attr pa;

            if (ibv_query_port(ctx, p, &pa) == 0) {
                fprintf(out, "    port %u: %s, %s\n", p, port_state(pa.state),
                        pa.link_layer == IBV_LINK_LAYER_ETHERNET
                            ? "Ethernet (RoCE)"
                            : "InfiniBand");
            }
        }
        if (bf != NULL && found == NULL) {
            found = bf;
            found_dev = name;
        }
        ibv_close_device(ctx);
    }
    if (found != NULL) {
        fprintf(out, "BlueField DPU: present (%s, %s)\n", found_dev, found);
    } else {
        fprintf(out, "BlueField DPU: none found%s\n",
                n == 0 ? " (no RDMA device at all: agents run on the host, "
                         "as emulated DPUs)"
                       : "");
    }
    ibv_free_device_list(list);
    return found != NULL ? 0 : 1;
}

int agent_on_dpu(void)
{
#if defined(__aarch64__)
    struct ibv_device **list;
    int                 n = 0, i, found = 0;

    list = ibv_get_device_list(&n);
    for (i = 0; list != NULL && i < n && !found; i++) {
        struct ibv_context    *ctx = ibv_open_device(list[i]);
        struct ibv_device_attr attr;

        if (ctx == NULL) {
            continue;
        }
        found =
            ibv_query_device(ctx, &attr) == 0 &&
            agent_bluefield_name(attr.vendor_id, attr.vendor_part_id) != NULL;
        ibv_close_device(ctx);
    }
    if (list != NULL) {
        ibv_free_device_list(list);
    }
    return found;
#else
    /* A BlueField's cores are Arm: an x86 host that sees one is its host
     * (the same ConnectX is visible from both sides). */
    return 0;
#endif
}
