"""check()'s reduction over MPI (mpi4py), for loops without torch.distributed."""

from typing import Any

from .controller import Allreduce


def mpi_allreduce(comm: Any) -> Allreduce:
    """The reduction check() needs, over an mpi4py communicator:

        from mpi4py import MPI
        reduce = trainctl.mpi_allreduce(MPI.COMM_WORLD)
        d = ctl.check(step, allreduce=reduce)

    One MPI_Allreduce (MAX) of VOTE_LEN int64 values; no numpy needed. mpi4py is
    imported here, never by `import trainctl`."""
    from array import array
    from mpi4py import MPI

    def reduce(values):
        send = array("q", values)
        recv = array("q", bytes(8 * len(send)))
        comm.Allreduce([send, MPI.INT64_T], [recv, MPI.INT64_T], op=MPI.MAX)
        return recv
    return reduce
