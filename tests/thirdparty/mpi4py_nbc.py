# SPDX-License-Identifier: BSD-3-Clause
# Third-party check: mpi4py (Debian python3-mpi4py) used as a new user
# would, run under the shim by scripts/check.sh; compares every result
# with the blocking (stock MPI) collective.
# Non-blocking alltoall and bcast with numpy arrays.
import numpy as np
from mpi4py import MPI

comm = MPI.COMM_WORLD
rank, size = comm.Get_rank(), comm.Get_size()
ok = True
for n in (1, 1000, 65536, 300000):
    send = (np.arange(n * size, dtype=np.float64) + 1000.0 * rank)
    recv = np.zeros(n * size)
    req = comm.Ialltoall(send, recv)
    x = sum(i * i for i in range(20000))          # some computation
    req.Wait()
    ref = np.zeros(n * size)
    comm.Alltoall(send, ref)                      # blocking: stock MPI
    ok &= np.array_equal(recv, ref)
    for root in range(size):
        buf = np.arange(n, dtype=np.int32) * (root + 1) if rank == root \
            else np.zeros(n, dtype=np.int32)
        req = comm.Ibcast(buf, root=root)
        req.Wait()
        ok &= np.array_equal(buf, np.arange(n, dtype=np.int32) * (root + 1))
    sub = comm.Split(rank % 2, rank)
    r2 = np.zeros(n * sub.Get_size())
    sub.Ialltoall(send[: n * sub.Get_size()], r2).Wait()
    ref2 = np.zeros_like(r2)
    sub.Alltoall(send[: n * sub.Get_size()], ref2)
    ok &= np.array_equal(r2, ref2)
    sub.Free()
allok = comm.allreduce(int(ok), op=MPI.MIN)
if rank == 0:
    print("mpi4py result:", "ok" if allok else "MISMATCH")
