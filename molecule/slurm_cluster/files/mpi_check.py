#!/usr/bin/python3
"""Each MPI rank prints: rank size allreduce(rank+1) host. Launched by plain srun over PMIx."""

import socket

from mpi4py import MPI

comm = MPI.COMM_WORLD
total = comm.allreduce(comm.Get_rank() + 1, op=MPI.SUM)
print(comm.Get_rank(), comm.Get_size(), total, socket.gethostname().split(".")[0], flush=True)
