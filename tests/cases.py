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

# SCRIPT: the checks written in shell (scripts/test/*.sh), in make check's
# order after the matrix above. Each case is one call of a shell function
# (scripts/test/case.sh runs it with the parts' functions loaded):
#   name      the case's name; {mpi} for a case run for each MPI
#   cmd       the function and its words: {mpi} the MPI, {mpis} every MPI
#             given (several words), {first} the first, {second} the
#             second (the first when only one is given)
#   per_mpi   True: once for each MPI given ("mpis": only those MPIs)
#   fixture   what it needs: None (nothing), "root" (namespaces, chroot,
#             mmdebstrap), "qemu" (the aarch64 build under qemu-user),
#             "cluster" (the emulated cluster with DPUs of
#             scripts/cluster/cluster.sh; with "need": "listeners" (the
#             DPUs' listening agents up), "service" (the DPUs' agent
#             services, MUNGE, users), "none" (neither): the runner's
#             cluster session brings it up once and each case's need)
#   env       VAR=value words set for the call alone
#   after     names of cases whose logs it reads (-k runs them first)
#   parallel  True: shares nothing with other cases (no job of this
#             run's tag it counts or kills, no port, no fixture): runs
#             beside the unit and matrix cases (bin/dps-test -j)
#   quick     in make check-quick too
# A case reports one result or several (report in scripts/test/common.sh);
# tests/case_results.txt names each case's results (bin/dps-test --list
# shows them, -k matches them, and a run fails a case whose results are
# not those: bin/dps-test --record rewrites the file).


def _s(name, *cmd, **kw):
    kw.update(name=name, cmd=list(cmd))
    kw.setdefault("per_mpi", "{mpi}" in name)
    return kw


# The configuration cases (cfg_probe with these variables): the output
# must hold each "+regex" and not "-regex" (cfg_case), or the job must
# abort saying the regex once (require_case).
_ON = "offloaded=2 fallback=0 bytes"
_OFF = "offloaded=0 fallback=2 bytes=0"
_CFG = [
    ("auto-shared", "default MIN_BYTES=auto, agents on rank cores: stock MPI, no agent", "",
     ["+ialltoall " + _OFF, "+ibcast " + _OFF, "-started agent",
      "+DPUSHIM_MIN_BYTES=auto: the agents would share every core"], {}),
    ("auto-spare", "default MIN_BYTES=auto, agent on a spare CPU: 256 KiB",
     "DPUSHIM_AGENT_CPUS=1", ["+ialltoall " + _OFF, "+ibcast " + _OFF,
                              "+started agent",
                              "-MIN_BYTES=auto: the agents would share"],
     {"DPS_RANK_CPUS": "0"}),
    ("sched-batch", "AGENT_SCHED=batch",
     "DPUSHIM_AGENT_SCHED=batch DPUSHIM_MIN_BYTES=1",
     ["+ialltoall " + _ON, "+ibcast " + _ON], {}),
    ("depth1-chunk4k", "PIPELINE_DEPTH=1 and CHUNK_BYTES=4k",
     "DPUSHIM_PIPELINE_DEPTH=1 DPUSHIM_CHUNK_BYTES=4k DPUSHIM_MIN_BYTES=1",
     ["+ialltoall " + _ON, "+ibcast " + _ON], {}),
    ("chunk-range", "CHUNK_BYTES out of range",
     "DPUSHIM_CHUNK_BYTES=1k DPUSHIM_MIN_BYTES=1",
     ["+invalid value DPUSHIM_CHUNK_BYTES='1k': expected .*from 4096 to 67108864",
      "+ialltoall " + _OFF], {}),
    ("depth-range", "PIPELINE_DEPTH out of range",
     "DPUSHIM_PIPELINE_DEPTH=0 DPUSHIM_MIN_BYTES=1",
     ["+invalid value DPUSHIM_PIPELINE_DEPTH='0'", "+ialltoall " + _OFF], {}),
    ("require1-ok", "REQUIRE=1 with offload working",
     "DPUSHIM_REQUIRE=1 DPUSHIM_MIN_BYTES=1",
     ["+ialltoall " + _ON, "+ibcast " + _ON], {}),
    ("require0-noagent", "REQUIRE=0 with a missing agent runs on stock MPI",
     "DPUSHIM_REQUIRE=0 DPUSHIM_AGENT=/nonexistent/a DPUSHIM_MIN_BYTES=1",
     ["+no agent available: running on stock MPI", "+ialltoall " + _OFF], {}),
    ("require-noagent", "missing agent binary",
     "DPUSHIM_REQUIRE=1 DPUSHIM_AGENT=/nonexistent/a DPUSHIM_MIN_BYTES=1",
     "no agent available, and DPUSHIM_REQUIRE is set: aborting", {}),
    ("require-notexec", "agent binary not executable",
     "DPUSHIM_REQUIRE=yes DPUSHIM_AGENT={root}/README.md DPUSHIM_MIN_BYTES=1",
     "no agent available, and DPUSHIM_REQUIRE is set: aborting", {}),
    ("require-invalid", "invalid value",
     "DPUSHIM_REQUIRE=1 DPUSHIM_CHUNK_BYTES=12x",
     "invalid DPUSHIM_\\* values, and DPUSHIM_REQUIRE is set: aborting", {}),
    ("require-offload0", "unparsable REQUIRE with OFFLOAD=0",
     "DPUSHIM_REQUIRE=please DPUSHIM_OFFLOAD=0",
     "DPUSHIM_REQUIRE is set: aborting", {}),
    ("require-auto", "MIN_BYTES=auto offloading nothing", "DPUSHIM_REQUIRE=1",
     "MIN_BYTES=auto offloads nothing .*DPUSHIM_REQUIRE is set: aborting", {}),
    ("bad-sched", "bad AGENT_SCHED", "DPUSHIM_AGENT_SCHED=fifo DPUSHIM_MIN_BYTES=1",
     ["+error: invalid value DPUSHIM_AGENT_SCHED='fifo'", "+ialltoall " + _OFF], {}),
    ("min-below", "MIN_BYTES below the size; agents count 2 collectives",
     "DPUSHIM_MIN_BYTES=1k", ["+ialltoall " + _ON, "+ibcast " + _ON,
                              "+^dpushim: agents cpu_ms=[0-9.]+ collectives=2 "], {}),
    ("offload0", "OFFLOAD=0 starts no agent", "DPUSHIM_OFFLOAD=0 DPUSHIM_MIN_BYTES=1",
     ["+ialltoall " + _OFF, "+ibcast " + _OFF, "-started agent"], {}),
    ("ialltoall-off", "IALLTOALL=off", "DPUSHIM_IALLTOALL=off DPUSHIM_MIN_BYTES=1",
     ["+ialltoall " + _OFF, "+ibcast " + _ON], {}),
    ("ibcast-no", "IBCAST=no", "DPUSHIM_IBCAST=no DPUSHIM_MIN_BYTES=1",
     ["+ialltoall " + _ON, "+ibcast " + _OFF], {}),
    ("min-above", "MIN_BYTES above the size", "DPUSHIM_MIN_BYTES=1m",
     ["+ialltoall " + _OFF, "+ibcast " + _OFF], {}),
    ("min-equal", "MIN_BYTES equal to the size", "DPUSHIM_MIN_BYTES=64k",
     ["+ialltoall " + _ON, "+ibcast " + _ON], {}),
    ("bad-min", "bad MIN_BYTES", "DPUSHIM_MIN_BYTES=lots",
     ["+error: invalid value DPUSHIM_MIN_BYTES='lots'", "+ialltoall " + _OFF,
      "-started agent"], {}),
    ("bad-rpd", "bad RANKS_PER_DPU", "DPUSHIM_RANKS_PER_DPU=-2 DPUSHIM_MIN_BYTES=1",
     ["+DPUSHIM_RANKS_PER_DPU", "+ialltoall " + _OFF], {}),
    ("bad-log", "bad LOG", "DPUSHIM_LOG=loud DPUSHIM_MIN_BYTES=1",
     ["+DPUSHIM_LOG='loud'", "+ialltoall " + _OFF], {}),
    ("bad-transport", "bad TRANSPORT", "DPUSHIM_TRANSPORT=rdma DPUSHIM_MIN_BYTES=1",
     ["+DPUSHIM_TRANSPORT='rdma'", "+ialltoall " + _OFF], {}),
    ("agent-cpus", "AGENT_CPUS pins the agent",
     "DPUSHIM_AGENT_CPUS=1 DPUSHIM_MIN_BYTES=1",
     ["+agent pid [0-9]+ runs on CPUs 1", "+ialltoall " + _ON], {}),
    ("bad-agent-cpus", "bad AGENT_CPUS", "DPUSHIM_AGENT_CPUS=0- DPUSHIM_MIN_BYTES=1",
     ["+DPUSHIM_AGENT_CPUS='0-'", "+ialltoall " + _OFF], {}),
    ("bad-stats", "bad STATS", "DPUSHIM_STATS=maybe DPUSHIM_STATS2=1",
     ["+DPUSHIM_STATS='maybe'"], {}),
    ("unknown-var", "unknown variable warned",
     "DPUSHIM_OFLOAD=0 DPUSHIM_MIN_BYTES=4k",
     ["+warning: unknown variable DPUSHIM_OFLOAD", "+ialltoall " + _ON], {}),
    ("missing-agent", "missing agent binary",
     "DPUSHIM_AGENT=/nonexistent/a DPUSHIM_MIN_BYTES=1",
     ["+/nonexistent/a is not executable.*DPUSHIM_AGENT", "+ialltoall " + _OFF,
      "+ibcast " + _OFF], {}),
    ("rpd1", "RANKS_PER_DPU=1: one agent per rank",
     "DPUSHIM_RANKS_PER_DPU=1 DPUSHIM_MIN_BYTES=0",
     ["+ialltoall " + _ON, "+ibcast " + _ON,
      "+^dpushim: agents cpu_ms=[0-9.]+ collectives=2 "], {}),
]


def _cfg_cases():
    out = []
    for tag, title, vars_, want, env in _CFG:
        env = [f"{k}={v}" for k, v in env.items()]
        if isinstance(want, str):
            out.append(_s(f"{{mpi}}/config/{tag}", "require_case", "{mpi}",
                          title, vars_, want, env=env))
        else:
            out.append(_s(f"{{mpi}}/config/{tag}", "cfg_case", "{mpi}",
                          title, vars_, *want, env=env))
    return out


# The FFT example (fft_case MPI NP SHIM ARGS...): each shim run compares
# its result line with the same arguments' stock run.
_FFT = [
    (2, "-n 16 -g 1x2 -k 1 -s 3", []),
    (2, "-n 16 -g 1x2 -k 4 -p -s 3", []),
    (4, "-n 24 -g 2x2 -k 4 -s 3", []),
    (4, "-n 24 -g 2x2 -k 1 -p -s 3", []),
    (2, "-n 64 -g 1x2 -k 2 -d -c serial -s 2", ["FFT_INPLACE=yes"]),
    (4, "-n 32 -g 2x2 -k 1 -d -p -s 2", ["FFT_INPLACE=yes"]),
    (4, "-n 24 -g 2x2 -k 3 -d -s 2", []),
]
_FFT_GPU = [
    (2, "-n 16 -g 1x2 -k 4 -m gpu-like -f 0.5 -s 3", []),
    (2, "-n 32 -g 1x2 -k 2 -d -m gpu-like -t 2 -s 3", []),
]


def _fft_tag(np_, args):
    return f"np{np_}" + "".join(c for c in args if c.isalnum() or c == "-")


def _fft_cases():
    out = []
    stock = lambda np_, a: f"{{mpi}}/fft/stock-{_fft_tag(np_, a)}"
    for shim in (0, 1):
        for np_, args, env in _FFT:
            name = (stock(np_, args) if shim == 0
                    else f"{{mpi}}/fft/shim-{_fft_tag(np_, args)}")
            out.append(_s(name, "fft_case", "{mpi}", str(np_), str(shim),
                          *args.split(), env=env,
                          after=[stock(np_, args)] if shim else []))
    for np_, args, env in _FFT_GPU:
        out.append(_s(stock(np_, args), "fft_case", "{mpi}", str(np_), "0",
                      *args.split(), env=env))
        out.append(_s(f"{{mpi}}/fft/shim-{_fft_tag(np_, args)}", "fft_case",
                      "{mpi}", str(np_), "1", *args.split(), env=env,
                      after=[stock(np_, args)]))
    out.append(_s("{mpi}/fft/bad-args", "fft_bad_case", "{mpi}"))
    return out


# The examples (example_case MPI NP SHIM STATLINE PROG ARGS...).
def _example_cases():
    out = []
    for np_ in (2, 4):
        out += [
            _s(f"{{mpi}}/example/ring_bcast-group-np{np_}", "example_case",
               "{mpi}", str(np_), "1", "group_init", "ring_bcast", "-m",
               "group", "-n", "256", "-b", "16", "-M", "32", "-i", "20"),
            _s(f"{{mpi}}/example/halo3d-group-np{np_}", "example_case",
               "{mpi}", str(np_), "1", "group_init", "halo3d", "-m", "group",
               "-n", "14,11,9", "-i", "20"),
            _s(f"{{mpi}}/example/halo3d-neighbor-np{np_}", "example_case",
               "{mpi}", str(np_), "1", "neighbor_alltoallw_init", "halo3d",
               "-m", "neighbor", "-n", "14,11,9", "-i", "20"),
        ]
    out += [
        _s("{mpi}/example/ring_bcast-stock", "example_case", "{mpi}", "2",
           "0", "-", "ring_bcast", "-m", "group", "-n", "256", "-b", "16",
           "-M", "32", "-i", "20"),
        _s("{mpi}/example/halo3d-stock", "example_case", "{mpi}", "2", "0",
           "-", "halo3d", "-m", "group", "-n", "14,11,9", "-i", "20"),
    ]
    return out


# Each erroneous call with a fatal handler at 2 and 3 ranks, with
# MPI_ERRORS_RETURN at 3 and 4 (and across hosts in the cluster part).
def _err_cases():
    out = []
    for cas in ("bcast_len", "bcast_len2", "a2a_size", "alias"):
        for h, nps in (("fatal", (2, 3)), ("return", (3, 4))):
            for np_ in nps:
                out.append(_s(f"{{mpi}}/err/{cas}-{h}-np{np_}", "err_case",
                              "{mpi}", str(np_), cas, h))
    return out


SCRIPT = [
    _s("tree/readme", "readme_check"),
    _s("tree/layout", "layout_check", "{first}", parallel=True),
    _s("tree/owners", "owners_check", parallel=True),
    _s("tree/shellcheck", "shellcheck_check", parallel=True),
    _s("tree/source-loop", "source_loop_check"),
    _s("tree/format", "format_check", parallel=True),
    _s("tree/fuzz", "fuzz_decoder", parallel=True),
    _s("arm64/wire", "arm64_wire_tests", fixture="qemu"),
    _s("tree/install", "install_check", "{mpis}"),
    _s("runner/man", "rn_man_tests"),
    _s("runner/python", "rn_python_tests", "{mpis}"),
    _s("runner/errors", "rn_error_tests", "{first}"),
    _s("runner/mismatch", "rn_mismatch_tests", "{mpis}"),
    _s("{mpi}/runner/detect", "rn_detect_tests", "{mpi}"),
    _s("runner/options", "rn_option_tests", "{first}"),
    _s("{mpi}/runner/jobs", "rn_job_tests", "{mpi}"),
    _s("runner/install", "rn_install_tests", "{mpis}"),
    _s("deb/packages", "deb_tests", "{mpis}", fixture="root", parallel=True),
] + [dict(c, group="mpi") for c in (
    _cfg_cases() + [
        _s("{mpi}/config/regcache-off", "regcache_off_case", "{mpi}"),
    ] + _err_cases() + [
        _s("{mpi}/agent-cli", "agent_cli_tests", "{mpi}"),
        _s("{mpi}/kill/all-ranks", "kill_case", "{mpi}", "all-ranks"),
        _s("{mpi}/kill/leader", "kill_case", "{mpi}", "leader"),
        _s("{mpi}/listen/agent", "listen_agent_tests", "{mpi}"),
        _s("{mpi}/listen/jobs", "listen_job_tests", "{mpi}"),
        _s("{mpi}/listen/remote", "listen_remote_tests", "{mpi}"),
        # The aarch64 agent under qemu: its command line and jobs for one
        # MPI, reductions of every type for the other (about 2 min in all).
        _s("{mpi}/arm64/agent", "arm64_agent_tests", "{mpi}",
           mpis=["openmpi"], fixture="qemu"),
        _s("{mpi}/arm64/reduce", "arm64_reduce_tests", "{mpi}",
           mpis=["mpich"], fixture="qemu"),
        _s("{mpi}/listen/pidns", "listen_pidns_tests", "{mpi}",
           fixture="root"),
    ] + [
        _s(f"{{mpi}}/listen/bad-input/{what}", "listen_bad_input_case",
           "{mpi}", what)
        for what in ("map-unreadable", "map-require", "map-no-line",
                     "no-listener", "secret-not-dir", "secret-open",
                     "secret-full")
    ] + [
    ] + [
        _s(f"{{mpi}}/failover/{how}-np{np_}", "failover_case", "{mpi}",
           str(np_), how)
        for np_ in (2, 4) for how in ("kill", "stop", "recv", "bcast")
    ] + [
        _s("{mpi}/failover/kinds", "failover_kinds_case", "{mpi}"),
        _s("{mpi}/failover/pers-order-np3", "pers_order_failover_case",
           "{mpi}", "3"),
        _s("{mpi}/failover/pers-order-np4", "pers_order_failover_case",
           "{mpi}", "4"),
        _s("{mpi}/failover/outsiders", "outsiders_case", "{mpi}"),
    ] + _example_cases() + _fft_cases() + [
    ] + [
        # The Fortran programs in every binding style, three ways.
        _s(f"{{mpi}}/fortran/{f}/{how}", "fortran_case", "{mpi}", f, how)
        for f in ("f_colls_mpif", "f_colls_mpi", "f_colls_f08",
                  "f_rtypes_mpif", "f_rtypes_mpi", "f_rtypes_f08")
        for how in ("stock", "np2", "np4-rpd2")
    ] + [
        # The completion calls' answers: stock MPI's, then the shim's
        # (offloaded, agents up above the threshold, default), each
        # compared with them.
        _s(f"{{mpi}}/answers/{t.rpartition('/')[2]}/{what}", "answers_case",
           "{mpi}", t, what,
           after=[] if what == "stock" else
           [f"{{mpi}}/answers/{t.rpartition('/')[2]}/stock"])
        for t in ("tests/answers", "ftests/f_answers_mpif",
                  "ftests/f_answers_mpi", "ftests/f_answers_f08")
        for what in ("stock", "offloaded", "above", "default")
    ] + [
    ] + [
        _s(f"{{mpi}}/idup/{name}", "idup_case", "{mpi}", run)
        for name, run in (("stock", "stock"), ("np2", "2:0"), ("np4", "4:0"),
                          ("np4-rpd2", "4:2"))
    ] + [
        _s("{mpi}/kill/launcher", "kill_case", "{mpi}", "launcher"),
        _s("{mpi}/mpi4py", "thirdparty_mpi4py", mpis=["openmpi"]),
    ])]


# CLUSTER: the cases across emulated hosts (scripts/test/cluster_check.sh),
# all of fixture "cluster": one cluster for the run, brought up before the
# first and down after the last, and each case's "need" on it. By default
# the suites are spread over the layouts within CI's time;
# DPS_CLUSTER_FULL=1 runs every suite in every layout (about 15 minutes
# more), DPS_CLUSTER_DPU_TESTS ([MPI/]PROG words) and
# DPS_CLUSTER_ERR_CASES ([MPI/]CASE:HANDLER words) replace those lists.
CL_SUITES = ["t_colls", "t_persist", "t_neigh", "t_group", "t_dtypes",
             "t_outside", "f_colls"]
CL_DPU_TESTS = "openmpi/t_persist mpich/t_colls mpich/t_outside"
CL_ERR_CASES = ("openmpi/a2a_size:fatal openmpi/a2a_size:return "
                "mpich/bcast_len:fatal mpich/bcast_len:return")


def _cl_prog(mpi, t):
    if t == "f_colls":
        return "ftests/f_colls_mpif" if mpi == "mpich" else "ftests/f_colls_f08"
    return "tests/" + t


def _cl_suites(mpi, where, first, full):
    if full:
        return CL_SUITES
    if where == "host":
        return ["t_persist" if mpi == "mpich" else "t_colls", "t_neigh",
                "t_group", "t_dtypes", "t_outside", "f_colls"]
    return ["t_group"] if mpi == first else ["t_neigh"]


def _cl_words(text, mpis, first):
    """[MPI/]X words: (MPI, X) for the MPIs given, no MPI: the first."""
    out = []
    for w in text.split():
        m, _, x = w.rpartition("/")
        m = m or first
        if m in mpis:
            out.append((m, x))
    return out


def cluster_cases(mpis, env):
    first, second = mpis[0], mpis[-1] if len(mpis) > 1 else mpis[0]
    full = env.get("DPS_CLUSTER_FULL", "0") == "1"
    errs = _cl_words(env.get("DPS_CLUSTER_ERR_CASES") or CL_ERR_CASES,
                     mpis, first)
    c = lambda name, need, *cmd: dict(name="cluster/" + name, cmd=list(cmd),
                                      fixture="cluster", need=need)
    out = []
    for mpi in mpis:
        for t in _cl_suites(mpi, "host", first, full):
            out.append(c(f"{mpi}/{t}/hosts", "none", "cl_host_case", mpi,
                         _cl_prog(mpi, t)))
        for m, e in errs:
            if m == mpi:
                cas, _, h = e.partition(":")
                out.append(c(f"{mpi}/err/{cas}-{h}-np4", "none",
                             "cl_err_case", mpi, "4", cas, h))
    for mpi in mpis:
        for t in _cl_suites(mpi, "srun", first, full):
            out.append(c(f"{mpi}/{t}/srun", "none", "cl_srun_case", mpi,
                         _cl_prog(mpi, t)))
        if full:
            for m, e in errs:
                if m == mpi:
                    cas, _, h = e.partition(":")
                    out.append(c(f"{mpi}/err/{cas}-{h}-np3", "none",
                                 "cl_err_case", mpi, "3", cas, h))
    dpu = ([(m, t) for m in mpis for t in CL_SUITES] if full else
           _cl_words(env.get("DPS_CLUSTER_DPU_TESTS") or CL_DPU_TESTS,
                     mpis, first))
    for m, t in dpu:
        out.append(c(f"{m}/{t}/dpu", "listeners", "cl_dpu_case", m,
                     _cl_prog(m, t)))
    out += [
        c(f"{first}/t_neigh/dpu-fetch", "listeners", "cl_fetch_case", first),
        c("fault/dpu-kill", "listeners", "cl_fault_dpu_kill", first),
        c("fault/dpu-link", "listeners", "cl_fault_dpu_link", first),
        c("fault/link", "none", "cl_fault_link", first),
        c("fault/scancel", "none", "cl_fault_scancel", first),
        # The agent service every user's jobs share (service_tests.sh).
        c("service/two-users", "service", "sv_two_users", first, second),
        c("service/no-variables", "service", "sv_no_variables", second),
        c("service/spank", "service", "sv_spank", first),
        c("service/credentials", "service", "sv_credentials"),
        c("service/refused-jobs", "service", "sv_refused_jobs", first),
        c("service/foreign-grant", "service", "sv_foreign_grant"),
        c("service/restart", "service", "sv_restart", first),
        c("service/worker-kill", "service", "sv_worker_kill", first, second),
        c("service/sigterm", "service", "sv_sigterm", first),
    ]
    # Last of every cluster session, whichever cases ran.
    out.append(c("no-process-left", "none", "cl_left_case"))
    return out


# The last case of every run: no agent of this run left.
FINAL = [_s("no-agent-left", "no_agents_left")]
