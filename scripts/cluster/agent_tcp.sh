#!/bin/sh
# dpu_agent with its UCX restricted to TCP, whatever UCX_TLS the ranks
# have: check.sh points DPUSHIM_AGENT here (DPS_AGENT_BIN: the binary)
# so that every transfer between agents and ranks crosses TCP, as between
# nodes without RDMA, while the MPI keeps its own transports. UCX_TLS=
# tcp,self for the whole job would do the same, but MPICH 4.0 over UCX
# 1.13's TCP alone hangs in MPI_Finalize about one run in seven at 3
# ranks, stock MPICH too (openucx/ucx issue 8738).
UCX_TLS=tcp,self exec "${DPS_AGENT_BIN:?set DPS_AGENT_BIN to dpu_agent}" "$@"
