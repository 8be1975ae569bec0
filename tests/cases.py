# SPDX-License-Identifier: BSD-3-Clause
# The test matrix of bin/dps-test: what runs, how, and what it must show.
# Data only (read by bin/dps-test). scripts/test/check.sh (make check) runs
# every case, make check-quick the quick ones; bin/dps-test --list shows
# the cases by name, bin/dps-test -k NAME runs those whose name holds NAME.
#
# UNIT: Check programs of build/unit/ (per_mpi: of build/<mpi>/, with
# args, {mpi} the MPI). Each of a program's checks counts as a case.
#
# MPI: groups of MPI programs of build/<mpi>/tests/, run under each MPI
# given, each program with each run of its group:
#   programs  names, or shell patterns ("t_*": every tests/mpi/t_*.c)
#   runs      dicts of:
#     tag     the case's name within the program (MPI/program/tag)
#     title   what the report says
#     np      ranks
#     rpd     ranks per agent (DPUSHIM_RANKS_PER_DPU); absent: one agent
#             for the node
#     shim    False: stock MPI alone (default True: preloaded)
#     vars    more variables, "NAME=value" ({root}: the checkout, {mpi});
#             a name given twice takes the last value
#     quick   True, or a list of programs: in make check-quick too
# A stock run passes when the job exits 0 and prints "result: ok"; a shim
# run also when the statistics lines equal the program's "expect:" lines
# and match its "expect~:" ones (and none other is printed), and no
# offloaded collective was left running at MPI_Finalize.

# Variables of every shim run.
SHIM_VARS = ["DPUSHIM_STATS=1", "DPUSHIM_MIN_BYTES=1"]

UNIT = [
    dict(programs=["check_proto", "check_config", "check_shim_util",
                   "check_listen", "check_shm", "check_build",
                   "check_reduce", "check_cma", "check_defer"],
         quick=True),
    # The collectives' table against each MPI's own names.
    dict(programs=["check_colls"], per_mpi=True,
         args=["build/{mpi}/libdpushim.so"], quick=True),
]

# The agents' UCX on TCP only, for the staged UCX get/put path (below).
_TCP = ["DPUSHIM_DATA_PATH=staged", "DPUSHIM_TRANSPORT=ucx",
        "DPUSHIM_AGENT={root}/scripts/cluster/agent_tcp.sh",
        "DPS_AGENT_BIN={root}/build/{mpi}/dpu_agent"]

MPI = [
    # Every program three ways.
    dict(programs=["t_*"], runs=[
        dict(tag="stock", title="stock MPI, 2 ranks", np=2, shim=False),
        dict(tag="np2", title="2 ranks, 1 agent", np=2,
             quick=["t_colls", "t_persist", "t_neigh", "t_dtypes",
                    "t_argerr"]),
        dict(tag="np4-rpd2", title="4 ranks, 2 agents", np=4, rpd=2,
             quick=["t_alltoall_sizes"]),
    ]),
    # Odd communicator sizes: 3 ranks, agents serving 2 and 1 (t_rtypes,
    # every reducible type, runs at 2 and 4: 45 s more at 3 for what
    # t_colls' reductions show there).
    dict(programs=["t_odd", "t_mixed", "t_colls", "t_dtypes", "t_persist",
                   "t_neigh", "t_group", "t_pers_order", "t_argerr"],
         runs=[dict(tag="np3-rpd2", title="3 ranks, 2 agents", np=3,
                    rpd=2)]),
    # t_argerr's reference (stock MPI's refusals) at every size too.
    dict(programs=["t_argerr"], runs=[
        dict(tag="stock-np3", title="stock MPI, 3 ranks", np=3, shim=False),
        dict(tag="stock-np4", title="stock MPI, 4 ranks", np=4, shim=False),
    ]),
    # Fallbacks by reason (DPUSHIM_STATS=2): t_rtypes expects each
    # collective's reasons line. An agent per rank (four agents for four
    # ranks took 130-270 s on two busy cores).
    dict(programs=["t_rtypes"], runs=[
        dict(tag="reasons", title="2 ranks, 2 agents, fallbacks by reason",
             np=2, rpd=1, vars=["DPUSHIM_STATS=2"]),
    ]),
    # The staged data path (the agent copies through its own buffers, as
    # a DPU staging in its memory) beside the default direct one.
    dict(programs=["t_alltoall_sizes", "t_bcast_roots", "t_chunks",
                   "t_comms", "t_engine", "t_colls", "t_dtypes",
                   "t_persist", "t_neigh", "t_group", "t_pers_order"],
         runs=[dict(tag="np4-staged",
                    title="4 ranks, 2 agents, staged data path", np=4,
                    rpd=2, vars=["DPUSHIM_DATA_PATH=staged"])]),
    # The UCX get/put path that serves ranks of other nodes on a cluster.
    # Here UCX emulates RMA with messages the ranks progress in MPI calls,
    # so programs that block in MPI_Recv while data is due are left out.
    dict(programs=["t_alltoall_sizes", "t_bcast_roots", "t_comms",
                   "t_edge", "t_buffers", "t_regcache", "t_regmem",
                   "t_reglru", "t_outside"],
         runs=[dict(tag="np4-ucx",
                    title="4 ranks, 2 agents, UCX get/put for every rank",
                    np=4, rpd=2, vars=["DPUSHIM_TRANSPORT=ucx"])]),
    # Ranks on other nodes as on a cluster without RDMA (issue 27): the UCX
    # get/put path for every rank, staged through the agents, and the agents'
    # UCX on TCP only (scripts/cluster/agent_tcp.sh says why not UCX_TLS for
    # the whole job); each rank an agent of its own and two ranks per agent, at
    # 2, 3 and 4 ranks. t_landed runs every nonblocking and persistent
    # collective around the 256 KiB chunk, twice each: over TCP a put completes
    # long before it lands, so a step that reads a block the round before wrote
    # sees old bytes unless the agent waited for it. Between real hosts the
    # cluster part (scripts/test/cluster_check.sh) runs the suites over TCP.
    dict(programs=["t_landed"], runs=[
        dict(tag=f"np{np}-tcp", np=np, rpd=rpd, vars=_TCP,
             title=f"{np} ranks, {rpd} per agent, staged, "
                   "UCX get/put over TCP")
        for np, rpd in ((2, 2), (3, 1), (4, 2))
    ]),
]
