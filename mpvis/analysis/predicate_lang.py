"""The small expression language of local predicates, parsed safely.

A local predicate (MPVisualizer, ``mpvisualizer-race-detection.txt`` section 1;
spec ``trace-format.md``, "Cones and predicates") is a condition on one rank's
program variables (its ``state`` records) and on its current event.  Users
type it, so it is *never* handed to ``eval``/``compile``: a hand-written
tokenizer and recursive-descent parser build a tree of the classes below, and
:func:`evaluate` walks that tree.

Grammar (lowest precedence first)::

    expr       := and ("or" and)*
    and        := not ("and" not)*
    not        := "not" not | comparison
    comparison := sum (("==" | "!=" | "<" | "<=" | ">" | ">=") sum)*
    sum        := product (("+" | "-") product)*
    product    := unary (("*" | "/" | "//" | "%") unary)*
    unary      := ("-" | "+") unary | primary
    primary    := NUMBER | STRING | "true" | "false" | "null"
                | NAME | "event" "." NAME | "(" expr ")"

``True``/``False``/``None`` are accepted for ``true``/``false``/``null``.
Strings take single or double quotes with the escapes ``\\\\ \\' \\" \\n \\t``.
Chained comparisons mean what they mean in Python (``0 < x < 5``).

Names.  ``kind`` is the kind of the rank's current event (``"send"``,
``"recv"``, ...); ``event.FIELD`` is any field of that event's record
(``event.blocking``, ``event.tag``, ``event.seq``, ``event.op``...); every other
name is a program variable, with its last recorded value.  ``kind`` and
``event`` are therefore reserved.

Values and the absent value.  A name with no value (a variable not recorded
yet, an event field the event lacks, or any name in the initial state) is
*absent*.  As the spec requires, a comparison involving an absent value is
false; so is an ordering comparison between values of different types
(numbers, strings, booleans, null), while ``==`` between them is false and
``!=`` true.  Arithmetic works on numbers only (``+`` also joins two strings);
anything else, and division by zero, gives absent.  ``and``/``or``/``not`` and
the final result use truthiness, with absent counting as false.  Booleans are
not numbers here: ``true == 1`` is false.

Safety limits: at most :data:`MAX_SOURCE` characters, :data:`MAX_DEPTH` levels
of parentheses or prefix operators, and a tree at most :data:`MAX_HEIGHT` nodes
high (long chains like ``a+b+c+...``), so neither parsing nor evaluation can
exhaust Python's stack; no exponentiation and no string repetition, so evaluation
time and memory stay linear in the expression's size.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from mpvis.errors import MpvisError

__all__ = [
    "ABSENT",
    "MAX_DEPTH",
    "MAX_HEIGHT",
    "MAX_SOURCE",
    "Attr",
    "BinOp",
    "BoolOp",
    "Compare",
    "Expr",
    "Literal",
    "Name",
    "Not",
    "PredicateSyntaxError",
    "Scalar",
    "Unary",
    "evaluate",
    "holds",
    "names_used",
    "parse",
    "reads_fields",
    "uses_event",
]

Scalar = bool | int | float | str | None

MAX_SOURCE: Final = 2000
MAX_DEPTH: Final = 32
MAX_HEIGHT: Final = 200
KIND_NAME: Final = "kind"
EVENT_NAME: Final = "event"


class _Absent:
    """The value of a name that has none (singleton :data:`ABSENT`)."""

    _instance: _Absent | None = None

    def __new__(cls) -> _Absent:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "ABSENT"

    def __bool__(self) -> bool:
        return False


ABSENT: Final = _Absent()
Value = Scalar | _Absent


class PredicateSyntaxError(MpvisError, ValueError):
    """The expression is not in the language; ``position`` is a 0-based offset.

    ``str()`` gives the message, the expression and a caret under the offset.
    """

    def __init__(self, message: str, source: str, position: int) -> None:
        self.message = message
        self.source = source
        self.position = position
        shown = source if len(source) <= 120 else source[:117] + "..."
        caret = " " * min(position, len(shown)) + "^"
        super().__init__(f"{message} at column {position + 1}\n  {shown}\n  {caret}")


# ------------------------------------------------------------------ tree
@dataclass(frozen=True)
class Literal:
    value: Scalar


@dataclass(frozen=True)
class Name:
    """A program variable, or ``kind``."""

    name: str


@dataclass(frozen=True)
class Attr:
    """``event.FIELD``: a field of the current event's record."""

    field: str


@dataclass(frozen=True)
class Unary:
    op: str  # "-" or "+"
    operand: Expr


@dataclass(frozen=True)
class BinOp:
    op: str  # + - * / // %
    left: Expr
    right: Expr


@dataclass(frozen=True)
class Compare:
    """``operands[0] ops[0] operands[1] ops[1] ...`` (chained)."""

    ops: tuple[str, ...]
    operands: tuple[Expr, ...]


@dataclass(frozen=True)
class BoolOp:
    op: str  # "and" or "or"
    values: tuple[Expr, ...]


@dataclass(frozen=True)
class Not:
    operand: Expr


Expr = Literal | Name | Attr | Unary | BinOp | Compare | BoolOp | Not


# ------------------------------------------------------------- tokenizer
@dataclass(frozen=True)
class _Token:
    kind: str  # "num", "str", "name", "op", "end"
    text: str
    pos: int
    value: Scalar = None


_OPERATORS = ("==", "!=", "<=", ">=", "//", "<", ">", "+", "-", "*", "/", "%", "(", ")", ".")
_ESCAPES = {"\\": "\\", "'": "'", '"': '"', "n": "\n", "t": "\t"}
_KEYWORDS = frozenset({"and", "or", "not", "true", "false", "null", "True", "False", "None"})
_CONSTANTS: dict[str, Scalar] = {
    "true": True,
    "True": True,
    "false": False,
    "False": False,
    "null": None,
    "None": None,
}


_DIGITS = frozenset("0123456789")


def _is_word(c: str) -> bool:
    """ASCII letter, digit or underscore (``str.isdigit`` would accept '²')."""
    return c.isascii() and (c.isalnum() or c == "_")


def _tokenize(src: str) -> list[_Token]:
    out: list[_Token] = []
    i, n = 0, len(src)
    while i < n:
        c = src[i]
        if c in " \t\r\n":
            i += 1
        elif _is_word(c) and c not in _DIGITS:
            j = i + 1
            while j < n and _is_word(src[j]):
                j += 1
            out.append(_Token("name", src[i:j], i))
            i = j
        elif c in _DIGITS or (c == "." and i + 1 < n and src[i + 1] in _DIGITS):
            i = _number(src, i, out)
        elif c in "'\"":
            i = _string(src, i, out)
        else:
            op = next((o for o in _OPERATORS if src.startswith(o, i)), None)
            if op is None:
                raise PredicateSyntaxError(f"unexpected character {c!r}", src, i)
            out.append(_Token("op", op, i))
            i += len(op)
    out.append(_Token("end", "", n))
    return out


def _number(src: str, i: int, out: list[_Token]) -> int:
    j, n = i, len(src)
    while j < n and src[j] in _DIGITS:
        j += 1
    is_float = False
    if j < n and src[j] == ".":
        is_float = True
        j += 1
        while j < n and src[j] in _DIGITS:
            j += 1
    if j < n and src[j] in "eE":
        k = j + 1
        if k < n and src[k] in "+-":
            k += 1
        if k < n and src[k] in _DIGITS:
            is_float = True
            j = k
            while j < n and src[j] in _DIGITS:
                j += 1
    text = src[i:j]
    if j < n and _is_word(src[j]):
        raise PredicateSyntaxError(f"malformed number {src[i : j + 1]!r}", src, i)
    value: Scalar = float(text) if is_float else int(text)
    out.append(_Token("num", text, i, value))
    return j


def _string(src: str, i: int, out: list[_Token]) -> int:
    quote, j, n = src[i], i + 1, len(src)
    chars: list[str] = []
    while j < n and src[j] != quote:
        if src[j] == "\\":
            if j + 1 >= n or src[j + 1] not in _ESCAPES:
                raise PredicateSyntaxError("unknown escape in string", src, j)
            chars.append(_ESCAPES[src[j + 1]])
            j += 2
        else:
            chars.append(src[j])
            j += 1
    if j >= n:
        raise PredicateSyntaxError("unterminated string", src, i)
    out.append(_Token("str", src[i : j + 1], i, "".join(chars)))
    return j + 1


# ---------------------------------------------------------------- parser
class _Parser:
    def __init__(self, src: str) -> None:
        self.src = src
        self.toks = _tokenize(src)
        self.i = 0
        self.depth = 0

    def peek(self) -> _Token:
        return self.toks[self.i]

    def take(self) -> _Token:
        tok = self.toks[self.i]
        self.i += 1
        return tok

    def at(self, kind: str, *texts: str) -> bool:
        tok = self.toks[self.i]
        return tok.kind == kind and (not texts or tok.text in texts)

    def fail(self, message: str, tok: _Token | None = None) -> PredicateSyntaxError:
        tok = tok or self.peek()
        found = "end of expression" if tok.kind == "end" else repr(tok.text)
        return PredicateSyntaxError(f"{message}, found {found}", self.src, tok.pos)

    def nested(self, parse: Callable[[], Expr]) -> Expr:
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise PredicateSyntaxError(
                f"expression nested more than {MAX_DEPTH} levels deep", self.src, self.peek().pos
            )
        try:
            return parse()
        finally:
            self.depth -= 1

    def expr(self) -> Expr:
        return self.nested(self.or_)

    def or_(self) -> Expr:
        values = [self.and_()]
        while self.at("name", "or"):
            self.take()
            values.append(self.and_())
        return values[0] if len(values) == 1 else BoolOp("or", tuple(values))

    def and_(self) -> Expr:
        values = [self.not_()]
        while self.at("name", "and"):
            self.take()
            values.append(self.not_())
        return values[0] if len(values) == 1 else BoolOp("and", tuple(values))

    def not_(self) -> Expr:
        if self.at("name", "not"):
            self.take()
            return Not(self.nested(self.not_))
        return self.comparison()

    def comparison(self) -> Expr:
        operands = [self.sum_()]
        ops: list[str] = []
        while self.at("op", "==", "!=", "<", "<=", ">", ">="):
            ops.append(self.take().text)
            operands.append(self.sum_())
        return operands[0] if not ops else Compare(tuple(ops), tuple(operands))

    def sum_(self) -> Expr:
        left = self.product()
        while self.at("op", "+", "-"):
            op = self.take().text
            left = BinOp(op, left, self.product())
        return left

    def product(self) -> Expr:
        left = self.unary()
        while self.at("op", "*", "/", "//", "%"):
            op = self.take().text
            left = BinOp(op, left, self.unary())
        return left

    def unary(self) -> Expr:
        if self.at("op", "-", "+"):
            op = self.take().text
            return Unary(op, self.nested(self.unary))
        return self.primary()

    def primary(self) -> Expr:
        tok = self.peek()
        if tok.kind in ("num", "str"):
            self.take()
            return Literal(tok.value)
        if tok.kind == "name":
            self.take()
            if tok.text in _CONSTANTS:
                return Literal(_CONSTANTS[tok.text])
            if tok.text in _KEYWORDS:
                raise self.fail("expected a value", tok)
            if tok.text == EVENT_NAME:
                if not self.at("op", "."):
                    raise self.fail("'event' must be followed by '.FIELD'")
                self.take()
                if not self.at("name"):
                    raise self.fail("expected a field name after 'event.'")
                return Attr(self.take().text)
            return Name(tok.text)
        if self.at("op", "("):
            self.take()
            inner = self.expr()
            if not self.at("op", ")"):
                raise self.fail("expected ')'")
            self.take()
            return inner
        raise self.fail("expected a value")


def parse(source: str) -> Expr:
    """Parse ``source`` into a tree; raises :class:`PredicateSyntaxError`.

    >>> parse("x > 3")
    Compare(ops=('>',), operands=(Name(name='x'), Literal(value=3)))
    """
    if not isinstance(source, str):
        raise TypeError("a predicate expression must be a string")
    if len(source) > MAX_SOURCE:
        raise PredicateSyntaxError(
            f"expression longer than {MAX_SOURCE} characters", source[:MAX_SOURCE], MAX_SOURCE
        )
    if not source.strip():
        raise PredicateSyntaxError("empty expression", source, 0)
    p = _Parser(source)
    tree = p.expr()
    if not p.at("end"):
        raise p.fail("expected an operator or the end of the expression")
    if _height(tree) > MAX_HEIGHT:
        raise PredicateSyntaxError(f"expression more than {MAX_HEIGHT} operations deep", source, 0)
    return tree


# ------------------------------------------------------------ evaluation
def _category(v: Value) -> str:
    if isinstance(v, bool):
        return "bool"
    if isinstance(v, int | float):
        return "num"
    if isinstance(v, str):
        return "str"
    return "null" if v is None else "absent"


_ORDER: dict[str, Callable[[Any, Any], bool]] = {
    "<": operator.lt,
    "<=": operator.le,
    ">": operator.gt,
    ">=": operator.ge,
}
_ARITH: dict[str, Callable[[Any, Any], Any]] = {
    "+": operator.add,
    "-": operator.sub,
    "*": operator.mul,
    "/": operator.truediv,
    "//": operator.floordiv,
    "%": operator.mod,
}


def _compare(op: str, a: Value, b: Value) -> bool:
    ca, cb = _category(a), _category(b)
    if "absent" in (ca, cb):
        return False
    if op in ("==", "!="):
        equal = ca == cb and a == b
        return equal if op == "==" else not equal
    return ca == cb and ca in ("num", "str") and _ORDER[op](a, b)


def _arith(op: str, a: Value, b: Value) -> Value:
    ca, cb = _category(a), _category(b)
    if not (ca == cb == "num" or (op == "+" and ca == cb == "str")):
        return ABSENT
    try:
        result: Value = _ARITH[op](a, b)
    except (ZeroDivisionError, OverflowError):
        return ABSENT
    return result


def evaluate(
    tree: Expr,
    variables: Mapping[str, Scalar],
    kind: str | None,
    event: Mapping[str, object] | None = None,
) -> Value:
    """The value of ``tree`` for a rank whose variables are ``variables``.

    ``kind`` and ``event`` describe the current event (``None`` in the initial
    state, where they are absent).  Use :func:`holds` for the truth value.
    """
    if isinstance(tree, Literal):
        return tree.value
    if isinstance(tree, Name):
        if tree.name == KIND_NAME:
            return ABSENT if kind is None else kind
        return variables.get(tree.name, ABSENT)
    if isinstance(tree, Attr):
        if event is None or tree.field not in event:
            return ABSENT
        v = event[tree.field]
        return v if v is None or isinstance(v, bool | int | float | str) else ABSENT
    if isinstance(tree, Unary):
        v = evaluate(tree.operand, variables, kind, event)
        if _category(v) != "num":
            return ABSENT
        assert isinstance(v, int | float)
        return -v if tree.op == "-" else v
    if isinstance(tree, BinOp):
        return _arith(
            tree.op,
            evaluate(tree.left, variables, kind, event),
            evaluate(tree.right, variables, kind, event),
        )
    if isinstance(tree, Compare):
        left = evaluate(tree.operands[0], variables, kind, event)
        for op, operand in zip(tree.ops, tree.operands[1:], strict=True):
            right = evaluate(operand, variables, kind, event)
            if not _compare(op, left, right):
                return False
            left = right
        return True
    if isinstance(tree, BoolOp):
        want = tree.op == "or"
        for sub in tree.values:
            if bool(evaluate(sub, variables, kind, event)) == want:
                return want
        return not want
    return not evaluate(tree.operand, variables, kind, event)


def holds(
    tree: Expr,
    variables: Mapping[str, Scalar],
    kind: str | None,
    event: Mapping[str, object] | None = None,
) -> bool:
    """Truth of ``tree`` (absent counts as false)."""
    return bool(evaluate(tree, variables, kind, event))


def _children(tree: Expr) -> tuple[Expr, ...]:
    if isinstance(tree, Unary | Not):
        return (tree.operand,)
    if isinstance(tree, BinOp):
        return (tree.left, tree.right)
    if isinstance(tree, Compare | BoolOp):
        return tree.operands if isinstance(tree, Compare) else tree.values
    return ()


def _walk(tree: Expr) -> list[Expr]:
    out, stack = [], [tree]
    while stack:
        node = stack.pop()
        out.append(node)
        stack.extend(_children(node))
    return out


def _height(tree: Expr) -> int:
    """Height of the tree, computed without recursion."""
    best, stack = 0, [(tree, 1)]
    while stack:
        node, h = stack.pop()
        best = max(best, h)
        stack.extend((c, h + 1) for c in _children(node))
    return best


def names_used(tree: Expr) -> frozenset[str]:
    """The program variables ``tree`` reads (``kind`` and ``event`` excluded)."""
    return frozenset(n.name for n in _walk(tree) if isinstance(n, Name) and n.name != KIND_NAME)


def uses_event(tree: Expr) -> bool:
    """Does ``tree`` read the current event (``kind`` or ``event.FIELD``)?

    If not, its value changes only at ``state`` events, which lets
    :mod:`mpvis.analysis.predicates` evaluate it once per ``state`` record.
    """
    return any(
        isinstance(n, Attr) or (isinstance(n, Name) and n.name == KIND_NAME) for n in _walk(tree)
    )


def reads_fields(tree: Expr) -> bool:
    """Does ``tree`` read a field of the current event (``event.FIELD``)?"""
    return any(isinstance(n, Attr) for n in _walk(tree))


def variable_names(tree: Expr) -> set[str]:
    """The program variables ``tree`` reads (its names other than ``kind``)."""
    return {n.name for n in _walk(tree) if isinstance(n, Name) and n.name != KIND_NAME}
