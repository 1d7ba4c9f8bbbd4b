"""Static types of trace records: :data:`Record`, and one ``TypedDict`` per record kind.

:data:`Record` is the one name every module uses for a record it passes on:
a plain ``dict`` with string keys.  Its shape is one of the classes below,
whose union is :data:`EventRecord`.  Each class follows a kind of
``shared/spec/trace-format.md`` and the optional fields mpvis adds
(docs/trace-format.md, ``protocol/schema/record.schema.json``):
required fields are plain keys, optional ones ``NotRequired``.  ``kind`` is a
``Literal``, so a test of ``rec["kind"]`` narrows an :data:`EventRecord` to its kind's
class for the type checker.  At run time a record is a plain ``dict``: these
types cost nothing on the hot paths (no conversion, no wrapper).

What the classes promise is what :func:`mpvis.protocol.records.check_record`
checks: a record from outside (a file, the wire) is a :data:`Record` until it
has been checked, or until the code that built it (a recorder's decoder, an
importer) vouches for it.  Code that reads records by field name after
checking their kind uses the classes; code that moves records along (framing,
journals, batches, the analyzers' stream) keeps :data:`Record`, which a
TypedDict is not assignable to (a ``dict[str, Any]`` accepts any key, a
TypedDict only its own).  Where the classes come from:

* the model vouches for what it holds: ``ModelManager.record``,
  ``Event.fields`` and ``rebuild_record`` give an :data:`EventRecord` (one
  ``cast``, in ``EventStore.event_record``); readers narrow it by
  ``rec["kind"]`` (the OTF2 export has one handler per kind class, Perfetto's
  labels, the CSV export, the details panel's summary, native replay);
* a stream analyzer casts each checked batch once
  (:mod:`mpvis.analysis.deadlock_monitor`) and hands each record to the
  handler of its kind;
* code that reads any record generically, by a field name in a variable or
  with ``.get`` defaults, takes a :data:`RecordView`.

Why :data:`Record` is not stricter (issue 18, measured with mypy 2.4): as the
union :data:`EventRecord` it gave 1,818 errors in 48 files; as one
``TypedDict(total=False)`` holding every field of every kind, 161 errors in 34
files.  The second is close, but the kind classes are not assignable to it (a
required key of ``SendRecord`` is optional there, and ``SendRecord`` lacks the
keys of the other kinds), so every builder handing a typed record to a mover
would need a ``cast``; records grown from ``dict[str, Any]`` payloads
(``rec.update(extras)``, a JSON ``coll`` payload) and headers or message
bodies typed as records make most of the rest.  What would make it work: the
all-fields class with ``ReadOnly`` items and the kind classes ``closed``
(PEP 705 and 728; mypy 2.4 accepts a closed ``SendRecord`` where such a
read-only record is expected, checked on a scratch file), but records are
changed in transit (the analyzers' stream adds ``comm``, decoders drop
``call``, the collector names sites), so the movers would keep a mutable
type: a later step.  Builders that assemble a record from a kind name and
keyword fields (the simulator's ``_emit``, the synthetic generator, the OTF2
importer's ``_emit``) or hand it straight to a mover (the COMPACT decoder)
therefore build :data:`Record`.

Types only: this module imports nothing of mpvis.  It does without ``from
__future__ import annotations`` so that each class's ``__required_keys__`` and
``__optional_keys__`` are right at run time (a test checks every sample trace
against them).
"""

from collections.abc import Mapping
from typing import Any, Literal, NotRequired, TypeAlias, TypedDict

__all__ = [
    "CollExitRecord",
    "CollRecord",
    "ConsumeRecord",
    "EventRecord",
    "FinalRecord",
    "HeaderRecord",
    "LeakedRequest",
    "LockRecord",
    "Record",
    "RecordView",
    "RecvRecord",
    "SendMode",
    "SendRecord",
    "StateRecord",
    "StateValue",
    "WaitRecord",
    "WaitingRecord",
]

#: A record as mpvis passes it on: parsed (JSON, msgpack) or built, checked or not.
Record: TypeAlias = dict[str, Any]

#: A record only read: a :data:`Record` or any of the classes below (a TypedDict is a
#: ``Mapping[str, object]``, not a ``dict[str, Any]``).  For functions that take
#: records of either kind of caller, such as a description of a send.
RecordView: TypeAlias = Mapping[str, Any]

#: ``mode`` of a send (field optional: "standard" when absent).
SendMode: TypeAlias = Literal["standard", "buffered", "ready", "synchronous"]
#: A value of a ``state`` record's ``vars``: a JSON scalar.
StateValue: TypeAlias = int | float | str | bool | None


class HeaderRecord(TypedDict):
    """The first line of a trace."""

    kind: Literal["header"]
    format: str
    version: int
    nprocs: int
    program: NotRequired[str]
    started: NotRequired[str]
    source: NotRequired[str]


class _Event(TypedDict):
    """Fields every event has (``rank``, ``seq``) or may have."""

    rank: int
    seq: int
    t: NotRequired[float]
    #: ``file:line``; ``None`` where a recorder knows no site.
    site: NotRequired[str | None]
    comm: NotRequired[int]
    #: The per-rank number of the MPI call the record belongs to.
    call: NotRequired[int]
    #: The function of the call site (compiled programs: named by the collector).
    func: NotRequired[str]


class SendRecord(_Event):
    """``send``: a message is posted; ``req`` is required when not ``blocking``."""

    kind: Literal["send"]
    dest: int
    tag: int
    blocking: bool
    sync: bool
    req: NotRequired[int]
    size: NotRequired[int]
    mode: NotRequired[SendMode]
    #: Wire only: a buffer message without piggyback (see ``ConsumeRecord.chan``).
    buf: NotRequired[bool]


class RecvRecord(_Event):
    """``recv``: a receive is posted (``src``/``tag`` -1: any)."""

    kind: Literal["recv"]
    src: int
    tag: int
    blocking: bool
    req: NotRequired[int]
    #: The receive was preceded by a probe that named its message (PMPI library).
    probed: NotRequired[bool]


class ConsumeRecord(_Event):
    """``consume``: a message is delivered to the program."""

    kind: Literal["consume"]
    recv: int
    src: int
    tag: int
    #: ``[rank, seq]`` of the send taken.
    send: NotRequired[list[int]]
    #: Wire only: the k-th buffer message consumed on its channel.
    chan: NotRequired[int]


class WaitRecord(_Event):
    """``wait``: requests complete."""

    kind: Literal["wait"]
    reqs: list[int]
    cancelled: NotRequired[list[int]]
    #: MPI_Waitany/Testany (PMPI library): the position of the completed request
    #: in the call's array (what a replay must reproduce).
    index: NotRequired[int]


class WaitingRecord(_Event):
    """``waiting`` (optional kind): the rank entered MPI_Wait* on ``reqs`` and did not
    complete at once; ``mode`` "all" (the default) or "any"."""

    kind: Literal["waiting"]
    reqs: list[int]
    mode: NotRequired[Literal["all", "any"]]
    #: Blocked in MPI_Probe instead: the probe's ``src`` and ``tag`` (-1: any).
    probe: NotRequired[dict[str, int]]


class CollRecord(_Event):
    """``coll``: entry to a collective."""

    kind: Literal["coll"]
    op: str
    root: NotRequired[int]
    count: NotRequired[int]
    dtype: NotRequired[str]
    redop: NotRequired[str]
    bytes: NotRequired[int]
    #: World ranks of a derived communicator, in communicator order.
    group: NotRequired[list[int]]
    #: A nonblocking collective (MPI_Ibcast...): entered and left at the posting call.
    nonblocking: NotRequired[bool]


class CollExitRecord(_Event):
    """``coll_exit``: return from a collective."""

    kind: Literal["coll_exit"]
    op: str


class LockRecord(_Event):
    """``lock`` (requested), ``locked`` (acquired), ``unlock``."""

    kind: Literal["lock", "locked", "unlock"]
    lock: str


class StateRecord(_Event):
    """``state``: program variables, for predicates."""

    kind: Literal["state"]
    vars: dict[str, StateValue]


class LeakedRequest(TypedDict):
    """An entry of ``final``'s ``requests``: a request still allocated at MPI_Finalize."""

    req: int
    call: str
    site: str | None
    state: Literal["active", "inactive"]
    started: bool


class FinalRecord(_Event):
    """``final``: the rank ended normally."""

    kind: Literal["final"]
    requests: NotRequired[list[LeakedRequest]]


#: An event record of any kind, typed field by field; narrow it by ``rec["kind"]``.
EventRecord: TypeAlias = (
    SendRecord | RecvRecord | ConsumeRecord | WaitRecord | WaitingRecord | CollRecord
    | CollExitRecord | LockRecord | StateRecord | FinalRecord
)
