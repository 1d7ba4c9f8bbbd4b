"""Write OTF2 archives the way Score-P does, with the ``otf2`` package's writer.

No mpvis attribute, no header in the description: MPI regions entered with
``Enter``/``Leave`` (or calling contexts, for sites), the MPI events inside,
communicator ranks local to their communicator, request ids as large as
Score-P's.  Tests describe each rank's calls as a list of steps.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

otf2 = pytest.importorskip("otf2")

Step = tuple[Any, ...]


def write_scorep(out: Path, nprocs: int, program: dict[int, list[Step]], *,
                 sites: bool = False, sub_ranks: list[int] | None = None) -> Path:
    """Write ``out/traces.otf2``; ``program[rank]`` is a list of steps:

    ``("enter", region)``, ``("leave",)``, ``("send", dest, tag)``,
    ``("isend", dest, tag, req)``, ``("isend_done", req)``, ``("irecv_req", req)``,
    ``("recv", src, tag)``, ``("irecv", src, tag, req)``, ``("cancel", req)``,
    ``("test", req)``, ``("coll_begin",)``, ``("coll_end", op, root)``,
    ``("param", name, int)``; ``("sub", step)`` puts a p2p step on the
    communicator of ``sub_ranks`` (ranks local to it).  With ``sites`` a
    region entered at step ``i`` has the call site ``prog.c:<10 + i>``.
    """
    with otf2.writer.open(str(out), timer_resolution=1000) as tr:
        d = tr.definitions
        node = d.system_tree_node("node")
        locs = [d.location(f"Master thread {r}",
                           group=d.location_group(f"MPI Rank {r}", system_tree_parent=node))
                for r in range(nprocs)]
        d.group("MPI_COMM_WORLD locations", group_type=otf2.GroupType.COMM_LOCATIONS,
                paradigm=otf2.Paradigm.MPI, members=locs)
        world = d.comm("MPI_COMM_WORLD", group=d.group(
            "world", group_type=otf2.GroupType.COMM_GROUP, paradigm=otf2.Paradigm.MPI,
            members=list(range(nprocs))), parent=None)
        sub = None
        if sub_ranks is not None:
            sub = d.comm("my sub comm", group=d.group(
                "sub", group_type=otf2.GroupType.COMM_GROUP, paradigm=otf2.Paradigm.MPI,
                members=sub_ranks), parent=world)
        regions: dict[str, Any] = {}
        main = d.region("main", paradigm=otf2.Paradigm.USER)

        def region(name: str) -> Any:
            if name not in regions:
                regions[name] = d.region(name, paradigm=otf2.Paradigm.MPI)
            return regions[name]

        for rank, steps in program.items():
            w = tr.event_writer_from_location(locs[rank])
            stack: list[Any] = []
            for i, step in enumerate(steps):
                t = 100 * (i + 1)
                comm = world
                if step[0] == "sub":
                    comm, step = sub, step[1]
                op = step[0]
                if op == "enter":
                    if sites:
                        scl = d.source_code_location("prog.c", 10 + i)
                        cc = d.calling_context(region(step[1]), None,
                                               d.calling_context(main, scl, None))
                        w(otf2.events.CallingContextEnter(t, cc, 1))
                        stack.append(cc)
                    else:
                        w(otf2.events.Enter(t, region(step[1])))
                        stack.append(region(step[1]))
                elif op == "leave":
                    top = stack.pop()
                    if sites:
                        w(otf2.events.CallingContextLeave(t, top))
                    else:
                        w(otf2.events.Leave(t, top))
                elif op == "send":
                    w(otf2.events.MpiSend(t, step[1], comm, step[2], 8))
                elif op == "isend":
                    w(otf2.events.MpiIsend(t, step[1], comm, step[2], 8, step[3]))
                elif op == "isend_done":
                    w(otf2.events.MpiIsendComplete(t, step[1]))
                elif op == "irecv_req":
                    w(otf2.events.MpiIrecvRequest(t, step[1]))
                elif op == "recv":
                    w(otf2.events.MpiRecv(t, step[1], comm, step[2], 8))
                elif op == "irecv":
                    w(otf2.events.MpiIrecv(t, step[1], comm, step[2], 8, step[3]))
                elif op == "cancel":
                    w(otf2.events.MpiRequestCancelled(t, step[1]))
                elif op == "test":
                    w(otf2.events.MpiRequestTest(t, step[1]))
                elif op == "coll_begin":
                    w(otf2.events.MpiCollectiveBegin(t))
                elif op == "coll_end":
                    cop = getattr(otf2.CollectiveOp, step[1].upper())
                    root = otf2.Undefined.UINT32.value if step[2] is None else step[2]
                    w(otf2.events.MpiCollectiveEnd(t, cop, world, root, 4, 4))
                elif op == "param":
                    w(otf2.events.ParameterInt(t, d.parameter(step[1], otf2.ParameterType.INT64),
                                               step[2]))
                else:
                    raise ValueError(op)
    return out / "traces.otf2"


def recv(src: int, tag: int, region: str = "MPI_Recv") -> list[Step]:
    return [("enter", region), ("recv", src, tag), ("leave",)]


def send(dest: int, tag: int, region: str = "MPI_Send") -> list[Step]:
    return [("enter", region), ("send", dest, tag), ("leave",)]


FINAL: list[Step] = [("enter", "MPI_Finalize"), ("leave",)]
