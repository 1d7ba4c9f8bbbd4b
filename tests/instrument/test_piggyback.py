"""The object-message trailer (mpvis.instrument.piggyback, C half in _crecorder.c).

No MPI here: the C ``dumps``/``loads`` are driven directly, the way mpi4py calls
them (``dumps(obj, protocol)``, ``loads(buffer)``); the real-``mpiexec`` side is
in ``test_trace_mpi.py``.
"""

from __future__ import annotations

import pickle
from collections.abc import Iterator
from functools import partial
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mpvis.instrument._crecorder import bind_pickle, call, dumps, loads

P = pickle.HIGHEST_PROTOCOL


@pytest.fixture(autouse=True)
def stock() -> Iterator[None]:
    bind_pickle(pickle.dumps, pickle.loads, pickle.loads)
    yield
    bind_pickle(pickle.dumps, pickle.loads, pickle.loads)


objects = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text()
    | st.binary(),
    lambda inner: st.lists(inner, max_size=4)
    | st.tuples(inner, inner)
    | st.dictionaries(st.text(max_size=4), inner, max_size=4),
    max_leaves=12,
)
seqs = st.integers(0, 2**63 - 1)


def send(obj: Any, seq: int, extra: Any = None) -> bytes:
    """The bytes of a traced send of ``obj`` as mpi4py would pickle them."""
    data: bytes = call(seq, extra, False, dumps, obj, P)
    return data


def test_unarmed_dumps_is_the_plain_pickle() -> None:
    assert dumps({"a": [1, 2]}, P) == pickle.dumps({"a": [1, 2]}, P)


@given(objects, seqs)
def test_any_receiver_unpickles_the_object_and_traced_ones_get_the_send(obj: Any, seq: int) -> None:
    data = send(obj, seq)
    assert len(data) == len(pickle.dumps(obj, P)) + 12
    assert pickle.loads(data) == obj  # an untraced receiver: the trailer is ignored
    assert loads(memoryview(data)) == obj  # mpi4py hands loads a buffer
    assert call(None, None, True, loads, memoryview(data)) == (seq, obj)


@given(objects, seqs, objects)
def test_hooks_extra_data_travels_in_the_pickle(obj: Any, seq: int, extra: Any) -> None:
    data = send(obj, seq, [extra])
    assert loads(data) == obj
    assert call(None, None, True, loads, data) == (seq, obj, [extra])


@given(objects)
def test_a_message_without_trailer_has_no_send(obj: Any) -> None:
    assert call(None, None, True, loads, pickle.dumps(obj, P)) == (None, obj)
    assert loads(pickle.dumps(obj, P)) == obj


def test_modes_nest_and_are_restored() -> None:
    data = send("x", 7)

    def inner() -> Any:
        return loads(data), call(None, None, True, loads, data)

    assert call(None, None, False, inner) == ("x", (7, "x"))
    assert call(None, None, True, inner) == ((7, "x"), (7, "x"))
    assert loads(data) == "x"
    # an armed call nested in another restores the outer send's number
    assert call(3, None, False, lambda: (send("y", 9), dumps("z", P)))[1] == send("z", 3)
    assert dumps("z", P) == pickle.dumps("z", P)


def test_a_shared_bytes_result_is_copied_not_resized() -> None:
    cached = pickle.dumps("cached", P)
    bind_pickle(lambda obj, *a: cached, pickle.loads, pickle.loads)
    data = send("ignored", 5)
    assert cached == pickle.dumps("cached", P)  # untouched
    assert call(None, None, True, loads, data) == (5, "cached")


def test_another_unpickler_gets_the_pickle_without_trailer() -> None:
    seen: list[bytes] = []

    def strict_loads(buf: Any) -> Any:
        raw = bytes(buf)
        seen.append(raw)
        return pickle.loads(raw)

    bind_pickle(pickle.dumps, strict_loads, pickle.loads)
    data = send([1, 2], 11)
    assert call(None, None, True, loads, data) == (11, [1, 2])
    assert seen == [pickle.dumps([1, 2], P)]


def test_keyword_arguments_reach_the_pickle_functions() -> None:
    """mpi4py's out-of-band path calls dumps(obj, protocol, buffer_callback=cb)
    and loads(data, buffers=...)."""
    big = pickle.PickleBuffer(bytearray(b"x" * 100))
    oob: list[Any] = []
    data = call(4, None, False, partial(dumps, buffer_callback=oob.append), big, 5)
    assert len(oob) == 1
    seq, obj = call(None, None, True, partial(loads, buffers=oob), data)
    assert (seq, bytes(obj)) == (4, b"x" * 100)


def test_errors_are_reported() -> None:
    bind_pickle(lambda obj, *a: "not bytes", pickle.loads, pickle.loads)
    with pytest.raises(TypeError, match="did not return bytes"):
        send(1, 1)
    bind_pickle(pickle.dumps, pickle.loads, pickle.loads)
    bad = pickle.dumps("not a pair", P) + (1).to_bytes(8, "little") + b"\0MV2"
    with pytest.raises(ValueError, match="malformed piggyback"):
        loads(bad)
    with pytest.raises(TypeError):
        call(None, None)  # type: ignore[call-arg]


class _PicklesAnother:
    """Pickles, while being pickled, another object with the same dumps."""

    inner: bytes = b""

    def __reduce__(self) -> tuple[Any, ...]:
        _PicklesAnother.inner = dumps("inner", P)
        return (str, ("outer",))


def test_a_pickle_made_while_pickling_the_message_gets_no_trailer() -> None:
    data = send(_PicklesAnother(), 21)
    assert _PicklesAnother.inner == pickle.dumps("inner", P)
    assert call(None, None, True, loads, data) == (21, "outer")
