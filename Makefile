# dpushim: build libdpushim.so and dpu_agent for each installed MPI.
#   make                 every MPI found (Open MPI, MPICH)
#   make MPI=openmpi     one of them; artefacts in build/<mpi>/
#   make deps            install the Debian packages needed (as root)
#   make check           install, build, run every test for both MPIs
#   make demo            install, build, the demo for both MPIs
#   make bench           side-by-side overlap benchmark and the examples
#                        against plain MPI (scripts/)
#   make install PREFIX=/usr/local   header, libraries, agents, pkg-config,
#                        the runner (bin/dpushim), man pages, modulefile
#   make deb             Debian packages (debian/, dpkg-buildpackage), checked
#                        by lintian: build/deb/ (scripts/dev/deb.sh)
#   make deb-arm64       the agent's package for arm64 (a DPU): build/deb-arm64/
#   make depgraph        call and include loops between source files
#   make agent-arm64     dpu_agent cross-built for aarch64 (a BlueField's
#                        Arm cores) and the wire's tools, build/arm64/;
#                        run with qemu-user (scripts/cluster/arm64-run.sh,
#                        docs/bluefield.md)
# check, demo and bench run for both MPIs unless MPI=... names them: the
# list is taken after `make deps` has installed them, never before.

SHELL      := /bin/bash
CC         ?= gcc
CFLAGS     ?= -O2 -g
# -ffp-contract=off: a*b+c never fused into one FMA (GCC fuses by default
# in gnu11 where the ISA has FMA, as aarch64 does): reductions give the
# same bits on the host and on a DPU's agent (common/dps_sched.c).
WARN       := -std=gnu11 -Wall -Wextra -Werror -ffp-contract=off
# Sources include each other by their path from the top of the tree
# ("shim/core/shim.h", "common/dps_log.h").
INC        := -I.
UCX_LIBS   := -lucp -lucs
# What dpu_agent links, on any ISA.
AGENT_LIBS := $(UCX_LIBS) -libverbs -lpthread
# The cross compiler for the Arm agent: Debian's, with the arm64 UCX and
# rdma-core of multiarch (/usr/lib/aarch64-linux-gnu; scripts/deps.sh).
ARM64_CC   := aarch64-linux-gnu-gcc
MPICC_openmpi := mpicc.openmpi
MPICC_mpich   := mpicc.mpich
MPIF90_openmpi := mpif90.openmpi
MPIF90_mpich   := mpif90.mpich

ALL_MPIS   := openmpi mpich
# Evaluated when used (=, not :=): after `deps` in the sub-make.
FOUND_MPIS  = $(foreach m,$(ALL_MPIS),$(if $(shell command -v $(MPICC_$(m)) 2>/dev/null),$(m)))
MPI        ?= $(FOUND_MPIS)
# The MPIs check, demo and bench run for: as named, else all of them.
RUN_MPIS    = $(if $(filter command line environment,$(origin MPI)),$(MPI),$(ALL_MPIS))
BAD_MPIS    = $(filter-out $(ALL_MPIS),$(MPI))

COMMON_SRC := common/dps_log.c common/dps_config.c common/dps_proto.c \
              common/dps_encode.c common/dps_sched.c \
              common/dps_ucx.c common/dps_listen.c common/dps_secret.c \
              common/dps_agentmap.c common/dps_shm.c common/dps_rtypes.c \
              common/dps_cma.c common/dps_grant.c common/dps_munge.c
BLD_SRC    := shim/compile/build.c shim/compile/moves.c shim/compile/reductions.c \
              shim/compile/steps.c
SHIM_SRC   := shim/base/state.c shim/core/hooks.c shim/boot/init.c shim/boot/spawn.c shim/boot/place.c \
              shim/boot/connect.c shim/core/op.c shim/core/channel.c \
              shim/core/progress.c \
              shim/core/comm.c shim/data/engine.c shim/data/iov.c \
              shim/wrap/wait.c shim/boot/env.c shim/data/reg.c \
              shim/failover/failover.c shim/failover/take.c \
              shim/failover/entries.c shim/wrap/block.c \
              shim/core/sched.c shim/data/types.c shim/data/rtypes.c \
              shim/data/flat.c \
              shim/core/redo.c shim/wrap/call.c shim/args/args.c \
              shim/args/common.c shim/args/mpich.c shim/args/ompi.c \
              shim/wrap/move.c shim/wrap/reduce.c shim/wrap/neigh.c \
              shim/wrap/colls.c shim/wrap/group.c \
              shim/pers/init.c shim/pers/dup.c shim/pers/start.c \
              shim/fortran/ompi.c \
              shim/fortran/ompi_colls.c shim/fortran/ompi_wait.c \
              shim/fortran/mpich.c shim/fortran/probe.c $(BLD_SRC)
# The agent's folders, from the top down (AGENT_LAYERS): main, the job
# and listening, schedule execution, moves and engines, keys, core.
AGENT_SRC  := dpu_agent/main/agent_main.c dpu_agent/main/agent_loop.c \
              dpu_agent/main/agent_probe.c dpu_agent/main/agent_service.c \
              dpu_agent/job/agent_job.c dpu_agent/job/agent_listen.c \
              dpu_agent/sched/agent_sched.c dpu_agent/sched/agent_inst.c \
              dpu_agent/sched/agent_post.c \
              dpu_agent/move/agent_exec.c dpu_agent/move/agent_cma.c \
              dpu_agent/move/agent_engines.c dpu_agent/move/agent_fetch.c \
              dpu_agent/move/agent_push.c dpu_agent/move/agent_queue.c \
              dpu_agent/move/agent_workers.c \
              dpu_agent/keys/agent_keys.c \
              dpu_agent/core/agent_chan.c
HDRS       := $(wildcard common/*.h shim/*/*.h dpu_agent/*.h dpu_agent/*/*.h include/*.h)
MPI_TESTS  := $(patsubst tests/mpi/%.c,%,$(wildcard tests/mpi/*.c))
BENCH_SRC  := $(wildcard tests/bench/*.c)
UNIT_TESTS := check_proto check_config check_shim_util check_listen check_shm check_build \
              check_reduce check_cma check_defer

.PHONY: slurm-plugin
.PHONY: all build mpi-list deps deps-full check check-quick check-scale demo bench bench-scale clean unit fuzz install deb deb-arm64 depgraph owners \
        agent-arm64 arm64-cc format format-check $(ALL_MPIS)

PREFIX     ?= /usr/local

all: build

build: mpi-list $(MPI)
	@true

# An empty or unknown list is an error, never a build of nothing.
mpi-list:
	@if [ -n "$(strip $(BAD_MPIS))" ]; then \
	    echo "dpushim: unknown MPI '$(strip $(BAD_MPIS))' (MPI=openmpi, mpich or both)" >&2; \
	    exit 2; fi
	@if [ -z "$(strip $(MPI))" ]; then \
	    echo "dpushim: no MPI found (neither mpicc.openmpi nor mpicc.mpich):" \
	         "run 'make deps' as root, or 'make check' / 'make demo', which do" >&2; \
	    exit 2; fi

$(ALL_MPIS): %: build/%/libdpushim.so build/%/dpu_agent build/%/tests \
               build/%/examples build/%/ftests

# Fortran tests (tests/fortran/): each program in each binding style,
# mpif.h, `use mpi` and `use mpi_f08` (f_colls with a C helper linked in).
PCOLL_openmpi := -DPCOLL=MPIX_ALLTOALL_INIT
PCOLL_mpich   := -DPCOLL=MPI_ALLTOALL_INIT
# f_rtypes: the persistent allreduce; stock MPICH 4.0's is not used.
# Buffers of several types passed to one routine without an interface
# (mpif.h; Open MPI's `use mpi`): an error in gfortran 10 and later, a
# warning with this flag.
FMISMATCH := -fallow-argument-mismatch
PALLRED_openmpi := -DPALLRED=MPIX_ALLREDUCE_INIT
PALLRED_mpich   := -DPALLRED=MPI_ALLREDUCE_INIT -DPERS_SHIM_ONLY
FTEST_SRC  := $(wildcard tests/fortran/*.F90 tests/fortran/*.f90 tests/fortran/*.c)

build/%/ftests: $(FTEST_SRC) Makefile
	@mkdir -p $@
	$(MPICC_$*) $(WARN) $(CFLAGS) -c -o $@/fc_helper.o tests/fortran/fc_helper.c
	$(MPIF90_$*) $(CFLAGS) -Wall -cpp -DSTYLE_MPIF $(PCOLL_$*) -J $@ \
	    -o $@/f_colls_mpif tests/fortran/f_colls.F90 $@/fc_helper.o
	$(MPIF90_$*) $(CFLAGS) -Wall -cpp $(PCOLL_$*) -J $@ \
	    -o $@/f_colls_mpi tests/fortran/f_colls.F90 $@/fc_helper.o
	$(MPIF90_$*) $(CFLAGS) -Wall -J $@ -o $@/f_colls_f08 \
	    tests/fortran/f_colls08.f90 $@/fc_helper.o
	$(MPIF90_$*) $(CFLAGS) -Wall -cpp -DSTYLE_MPIF $(PALLRED_$*) -J $@ \
	    $(FMISMATCH) -o $@/f_rtypes_mpif tests/fortran/f_rtypes.F90
	$(MPIF90_$*) $(CFLAGS) -Wall -cpp $(PALLRED_$*) -J $@ $(FMISMATCH) \
	    -o $@/f_rtypes_mpi tests/fortran/f_rtypes.F90
	$(MPIF90_$*) $(CFLAGS) -Wall -cpp -DSTYLE_F08 -J $@ \
	    -o $@/f_rtypes_f08 tests/fortran/f_rtypes.F90
	$(MPIF90_$*) $(CFLAGS) -Wall -cpp -DSTYLE_MPIF -J $@ $(FMISMATCH) \
	    -o $@/f_answers_mpif tests/fortran/f_answers.F90 $@/fc_helper.o
	$(MPIF90_$*) $(CFLAGS) -Wall -cpp -J $@ $(FMISMATCH) \
	    -o $@/f_answers_mpi tests/fortran/f_answers.F90 $@/fc_helper.o
	$(MPIF90_$*) $(CFLAGS) -Wall -cpp -DSTYLE_F08 -J $@ \
	    -o $@/f_answers_f08 tests/fortran/f_answers.F90 $@/fc_helper.o
	@touch $@

# The example programs (examples/README.md).
EXAMPLES   := pattern ring_bcast halo3d fft3d
# What an example links besides libm, as example=libraries (fft3d: FFTW
# 3, Debian's libfftw3-dev, scripts/deps.sh).
EXAMPLE_LIBS := fft3d=-lfftw3

build/%/examples: $(addprefix examples/,$(addsuffix .c,$(EXAMPLES))) include/dpushim.h Makefile
	@mkdir -p $@
	@set -e; for e in $(EXAMPLES); do \
	    libs=; for kv in $(EXAMPLE_LIBS); do \
	        [ "$${kv%%=*}" = "$$e" ] && libs="$${kv#*=}"; done; \
	    echo "$(MPICC_$*) -o $@/$$e examples/$$e.c$${libs:+ $$libs}"; \
	    $(MPICC_$*) $(WARN) $(CFLAGS) -Iinclude -o $@/$$e examples/$$e.c \
	        $$libs -lm; \
	done
	@touch $@

build/%/libdpushim.so: $(COMMON_SRC) $(SHIM_SRC) $(HDRS) Makefile
	@mkdir -p $(@D)
	$(MPICC_$*) $(WARN) $(INC) $(CFLAGS) -fPIC -shared -fvisibility=hidden \
	    -o $@ $(COMMON_SRC) $(SHIM_SRC) $(UCX_LIBS) -lucm -ldl -lpthread

# The Slurm SPANK plugin (slurm/spank_dpushim.c; Debian's libslurm-dev,
# scripts/deps.sh --full): srun preloads the shim into MPI tasks.
slurm-plugin: build/slurm/spank_dpushim.so
build/slurm/spank_dpushim.so: slurm/spank_dpushim.c Makefile
	@mkdir -p $(@D)
	@test -f /usr/include/slurm/spank.h || { echo "dpushim: no /usr/include/slurm/spank.h: run scripts/deps.sh --full as root (libslurm-dev)" >&2; exit 2; }
	$(CC) $(WARN) $(CFLAGS) -fPIC -shared -o $@ $<

build/%/dpu_agent: $(COMMON_SRC) $(AGENT_SRC) $(HDRS) Makefile
	@mkdir -p $(@D)
	$(CC) $(WARN) $(INC) $(CFLAGS) -o $@ $(COMMON_SRC) $(AGENT_SRC) $(AGENT_LIBS)

build/%/tests: $(wildcard tests/mpi/*.c tests/mpi/*.h tests/bench/*.h) $(BENCH_SRC) Makefile
	@mkdir -p $@
	@set -e; for t in $(MPI_TESTS); do \
	    echo "$(MPICC_$*) -o $@/$$t tests/mpi/$$t.c"; \
	    $(MPICC_$*) $(WARN) $(CFLAGS) -o $@/$$t tests/mpi/$$t.c; \
	done; for b in $(BENCH_SRC); do n=$$(basename $$b .c); \
	    echo "$(MPICC_$*) -o $@/$$n $$b"; \
	    $(MPICC_$*) $(WARN) $(CFLAGS) -o $@/$$n $$b -lm; \
	done
	@touch $@

build/unit/%: tests/unit/%.c $(COMMON_SRC) shim/boot/env.c $(BLD_SRC) $(HDRS) Makefile
	@mkdir -p $(@D)
	$(CC) $(WARN) $(INC) $(CFLAGS) -o $@ $< $(COMMON_SRC) shim/boot/env.c $(BLD_SRC) \
	    $$(pkg-config --cflags --libs check) $(UCX_LIBS)

# The collectives' table against each MPI's names (run with that MPI's
# libdpushim.so): built with the MPI's compiler wrapper.
build/%/check_colls: tests/unit/check_colls.c $(COMMON_SRC) $(HDRS) Makefile
	@mkdir -p $(@D)
	$(MPICC_$*) $(WARN) $(INC) $(CFLAGS) -o $@ $< $(COMMON_SRC) \
	    $$(pkg-config --cflags --libs check) $(UCX_LIBS) -ldl

unit: $(addprefix build/unit/,$(UNIT_TESTS)) $(foreach m,$(MPI),build/$(m)/check_colls) \
      build/tools/sched_model

# libFuzzer harness for the wire decoder (clang), and its seed writer.
FUZZ_FLAGS := -g -O1 -fsanitize=fuzzer,address,undefined \
              -fno-sanitize-recover=all
fuzz: build/fuzz/fuzz_decode build/fuzz/fuzz_hello build/fuzz/mkseeds

# The wire protocol: its decoder and its encoder.
PROTO_SRC  := common/dps_proto.c common/dps_encode.c

build/fuzz/fuzz_decode: tests/fuzz/fuzz_decode.c $(PROTO_SRC) $(HDRS) Makefile
	@mkdir -p $(@D)
	clang $(FUZZ_FLAGS) $(INC) -o $@ tests/fuzz/fuzz_decode.c $(PROTO_SRC)

build/fuzz/fuzz_hello: tests/fuzz/fuzz_hello.c common/dps_listen.c common/dps_munge.c $(HDRS) Makefile
	@mkdir -p $(@D)
	clang $(FUZZ_FLAGS) $(INC) -o $@ tests/fuzz/fuzz_hello.c common/dps_listen.c \
	    common/dps_munge.c common/dps_log.c common/dps_ucx.c $(UCX_LIBS)

# The wire's encoders and decoders with the listeners' hello: what its
# tools link (mkseeds, tests/tools/wire_dump.c).
WIRE_SRC   := $(PROTO_SRC) common/dps_listen.c common/dps_munge.c \
              common/dps_log.c common/dps_ucx.c

build/fuzz/mkseeds: tests/fuzz/mkseeds.c $(WIRE_SRC) $(HDRS) Makefile
	@mkdir -p $(@D)
	$(CC) $(WARN) $(INC) $(CFLAGS) -o $@ tests/fuzz/mkseeds.c $(WIRE_SRC) $(UCX_LIBS)

# The compiled schedules summed per round and agent, for the projection
# model (scripts/bench/model.py).
build/tools/sched_model: tests/tools/sched_model.c $(COMMON_SRC) shim/boot/env.c $(BLD_SRC) $(HDRS) Makefile
	@mkdir -p $(@D)
	$(CC) $(WARN) $(INC) $(CFLAGS) -o $@ $< $(COMMON_SRC) shim/boot/env.c $(BLD_SRC) $(UCX_LIBS)

build/tools/wire_dump: tests/tools/wire_dump.c $(WIRE_SRC) $(HDRS) Makefile
	@mkdir -p $(@D)
	$(CC) $(WARN) $(INC) $(CFLAGS) -o $@ tests/tools/wire_dump.c $(WIRE_SRC) $(UCX_LIBS)

# For aarch64 (a BlueField's Arm cores): the agent alone, the shim stays with
# the x86-64 ranks; and the wire's tools, whose outputs on both ISAs must be
# equal (wire_dump.c). Run with scripts/cluster/arm64-run.sh (qemu-user).
# Explicit rules: they take precedence over build/%/dpu_agent.
ARM64_TOOLS := mkseeds wire_dump
agent-arm64: build/arm64/dpu_agent $(addprefix build/arm64/,$(ARM64_TOOLS)) \
             build/fuzz/mkseeds build/tools/wire_dump

arm64-cc:
	@command -v $(ARM64_CC) >/dev/null || { \
	    echo "dpushim: $(ARM64_CC) not found: run 'make deps' as root" >&2; \
	    exit 2; }

build/arm64/dpu_agent: $(COMMON_SRC) $(AGENT_SRC) $(HDRS) Makefile | arm64-cc
	@mkdir -p $(@D)
	$(ARM64_CC) $(WARN) $(INC) $(CFLAGS) -o $@ $(COMMON_SRC) $(AGENT_SRC) $(AGENT_LIBS)

build/arm64/mkseeds: tests/fuzz/mkseeds.c $(WIRE_SRC) $(HDRS) Makefile | arm64-cc
	@mkdir -p $(@D)
	$(ARM64_CC) $(WARN) $(INC) $(CFLAGS) -o $@ tests/fuzz/mkseeds.c $(WIRE_SRC) $(UCX_LIBS)

build/arm64/wire_dump: tests/tools/wire_dump.c $(WIRE_SRC) $(HDRS) Makefile | arm64-cc
	@mkdir -p $(@D)
	$(ARM64_CC) $(WARN) $(INC) $(CFLAGS) -o $@ tests/tools/wire_dump.c $(WIRE_SRC) $(UCX_LIBS)

deps:
	@scripts/deps.sh

# Also the emulated cluster's (Slurm, munge, iproute2) and the Arm agent's
# (cross compiler, qemu-user, arm64 UCX) packages: for check and bench.
deps-full:
	@scripts/deps.sh --full

# deps first, then a sub-make: it sees the MPIs deps just installed.
check: deps-full
	@$(MAKE) --no-print-directory MPI="$(RUN_MPIS)" build unit fuzz agent-arm64
	@scripts/test/check.sh $(RUN_MPIS)

# The emulated cluster at scale: 8 hosts with DPUs, the suites at 32
# ranks with the DPUs' agents, one DPU agent killed mid-job
# (scripts/test/cluster_check.sh, DPS_CLUSTER_SCALE=1; docs/tests.md).
check-scale: deps-full
	@$(MAKE) --no-print-directory MPI="$(RUN_MPIS)" build agent-arm64
	@DPS_CLUSTER_SCALE=1 scripts/test/cluster_check.sh $(RUN_MPIS)

# The unit tests and a few MPI cases of each MPI (tests/cases.py,
# bin/dps-test --quick): under 2 minutes once built.
check-quick: deps
	@$(MAKE) --no-print-directory MPI="$(RUN_MPIS)" build unit
	@bin/dps-test --quick $(RUN_MPIS)

demo: deps
	@$(MAKE) --no-print-directory MPI="$(RUN_MPIS)" build
	@scripts/demo.sh $(RUN_MPIS)

bench: deps-full
	@$(MAKE) --no-print-directory MPI="$(RUN_MPIS)" build
	@scripts/bench/bench.sh $(RUN_MPIS)

# What grows with the job on 2, 4 and 8 emulated hosts with DPUs, then
# the projection model checked against it and run with BlueField-2
# parameters (docs/bench.md, "At scale"). As root; the first MPI.
bench-scale: deps-full
	@$(MAKE) --no-print-directory MPI="$(firstword $(RUN_MPIS))" build build/tools/sched_model
	@scripts/bench/bench_scale.sh $(firstword $(RUN_MPIS))
	@python3 scripts/bench/model.py fit results/scale/scale.csv
	@python3 scripts/bench/model.py project

# What was built, for every MPI found (scripts/install.sh).
install: build
	@scripts/install.sh "$(PREFIX)" $(MPI)

# Binary packages by Debian's tools, from a copy of the tree; lintian.
deb:
	@scripts/deps.sh --deb
	@scripts/dev/deb.sh

# The agent alone, cross-built for a BlueField's Arm cores.
deb-arm64: deps-full
	@scripts/dev/deb.sh --arm64

clean:
	rm -rf build

# The C sources in the house's style (.clang-format): format rewrites
# them, format-check lists each file that differs (make check runs it).
C_SOURCES = $(shell git ls-files '*.c' '*.h' 2>/dev/null)
NEED_CLANG_FORMAT = @command -v clang-format >/dev/null || \
	{ echo "clang-format not found: run 'make deps-full'" >&2; exit 1; }

format:
	$(NEED_CLANG_FORMAT)
	@clang-format -i $(C_SOURCES)

format-check:
	$(NEED_CLANG_FORMAT)
	@bad=0; for f in $(C_SOURCES); do \
	    clang-format "$$f" | cmp -s "$$f" - || \
	        { echo "$$f: not as clang-format writes it (make format)"; bad=1; }; \
	done; exit $$bad

# Which file calls and includes which, per part: the loops among them
# (--check: none of more than one file) and the longest chains.
DEP_MPICC   = $(MPICC_$(firstword $(MPI)))
# The shim's folders from the top down; peers between the same two '>'.
# pers (persistent requests) is the wrappers' peer: an init runs their
# entries, and their MPI_<Coll>_init, pattern groups and completion
# calls use its requests. args (MPI's call-time argument rules) is below
# the wrappers and boot, which ask it, and needs no other part of the
# shim.
SHIM_LAYERS := shim/fortran > shim/wrap shim/pers shim/boot > \
               shim/failover shim/args > shim/core > \
               shim/compile shim/data > shim/base
# The agent's folders from the top down; common, below every part.
AGENT_LAYERS := dpu_agent/main > dpu_agent/job > dpu_agent/sched > \
                dpu_agent/move > dpu_agent/keys > dpu_agent/core > common
depgraph:
	@scripts/dev/depgraph.py --check -I. \
	    --layers shim "$(SHIM_LAYERS)" \
	    --layers dpu_agent "$(AGENT_LAYERS)" \
	    --part shim "$(DEP_MPICC) $(WARN) $(INC) -fPIC" $(SHIM_SRC) \
	    --part dpu_agent "$(CC) $(WARN) $(INC)" $(AGENT_SRC) \
	    --part common "$(CC) $(WARN) $(INC)" $(COMMON_SRC)

# No room of shim/ writes state another owns (docs/architecture.md, "Who
# writes what").
owners:
	@scripts/dev/owners.py .

# make print-VAR: the value of a variable (scripts use the source lists).
print-%:
	@:$(info $($*))
