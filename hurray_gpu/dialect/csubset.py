"""A parser of the portable C subset into a small typed syntax tree (for dialects that are not C,
and for host C's region splitting of work-group kernels, which keeps the statements' text).

The C-family and GLSL dialects render the subset by rewriting its text; WGSL cannot: it has no
``?:``, no implicit conversions (u32 from i32, f32 from integers), no ``-`` on u32, shift
amounts must be u32, declarations read ``var x: T``, and mixed operators need parentheses. So
bodies (and the portable helpers) are parsed here once into statements and expressions whose
types follow C's (and GLSL's) rules: integer literals without a suffix adapt to the other
operand (as C's int converts), u32 wins over i32, any f32 operand makes the operation f32.
Constant integer subexpressions are folded with 32-bit wrap-around, so a renderer never emits a
constant expression its compiler would evaluate (and reject, on overflow) itself.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TypeGuard

from hurray_gpu.errors import UnsupportedOpError

__all__ = ["Call", "Cond", "Expr", "Func", "Lit", "Name", "Parser", "Stmt", "Unary", "Binary",
           "parse_body", "parse_functions"]

_TOKEN = re.compile(
    r"\s+|//[^\n]*|/\*.*?\*/"
    r"|(?P<num>0[xX][0-9a-fA-F]+[uU]?|(?:\d+\.\d*|\.\d+|\d+)(?:[eE][+-]?\d+)?(?:lf|[fFuU])?)"
    r"|(?P<id>[A-Za-z_]\w*)"
    r"|(?P<op><<=|>>=|\+\+|--|\+=|-=|\*=|/=|%=|&=|\|=|\^=|<<|>>|<=|>=|==|!=|&&|\|\||[-+*/%<>=!~&|^?:;,(){}])",
    re.S)
TYPES = ("u32", "i32", "f32", "f64", "bool")
ASSIGN_OPS = ("=", "+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=", "<<=", ">>=")
# Binary operators by precedence level, loosest first (C's table, without the comma).
_LEVELS: tuple[tuple[str, ...], ...] = (
    ("||",), ("&&",), ("|",), ("^",), ("&",), ("==", "!="), ("<", ">", "<=", ">="),
    ("<<", ">>"), ("+", "-"), ("*", "/", "%"))
# "int" marks an integer literal without a suffix: it takes the type of what it meets.
INT = "int"
_MASK = 0xFFFFFFFF


@dataclass(frozen=True)
class Lit:
    """A number: ``value`` (an int, wrapped to 32 bits, or the float's text) of ``type``."""

    value: int | str
    type: str


@dataclass(frozen=True)
class Name:
    """A variable (local, scalar parameter or helper parameter)."""

    name: str
    type: str


@dataclass(frozen=True)
class Call:
    """An intrinsic, buffer access (``LOAD``...; ``args[0]`` is then a buffer's Name) or helper."""

    name: str
    args: tuple[Expr, ...]
    type: str


@dataclass(frozen=True)
class Unary:
    """``-x``, ``~x``, ``!x``."""

    op: str
    arg: Expr
    type: str


@dataclass(frozen=True)
class Binary:
    """``a op b``; operands are already converted to the operation's type (see :func:`unify`),
    except shift amounts (u32 or i32) and the ``&&``/``||`` operands (bool)."""

    op: str
    left: Expr
    right: Expr
    type: str


@dataclass(frozen=True)
class Cond:
    """``c ? a : b`` (only the chosen branch is evaluated)."""

    cond: Expr
    then: Expr
    other: Expr
    type: str


Expr = Lit | Name | Call | Unary | Binary | Cond


@dataclass
class Stmt:
    """One statement: ``kind`` is decl, assign, incr, call, if, for, while, do, break,
    continue, return or block (fields by kind: see :class:`Parser`)."""

    kind: str
    name: str = ""  # decl/assign/incr: the variable
    type: str = ""  # decl: its type
    op: str = ""  # assign: = += ...; incr: ++ --
    expr: Expr | None = None  # decl init, assigned value, call, condition, returned value
    body: list[Stmt] = field(default_factory=list)  # block/if-then/loop body
    other: list[Stmt] | None = None  # if: else branch
    init: list[Stmt] = field(default_factory=list)  # for
    step: list[Stmt] = field(default_factory=list)  # for
    at: tuple[int, int] = (0, 0)  # its tokens [start, end) in Parser.tokens (and .spans)


@dataclass
class Func:
    """A helper function (``FUNC <type> name(<type> a, ...) { ... }``)."""

    name: str
    type: str
    params: tuple[tuple[str, str], ...]
    body: list[Stmt]


def _error(where: str, message: str) -> UnsupportedOpError:
    return UnsupportedOpError(f"{where}: {message}", fix="write the body in the portable subset "
                              "(hurray_gpu.dialect's docstring lists it).")


def _wrap(value: int, type_: str) -> int:
    value &= _MASK
    return value - (1 << 32) if type_ in ("i32", INT) and value >> 31 else value


def is_const(expr: Expr) -> TypeGuard[Lit]:
    """True for an integer literal."""
    return isinstance(expr, Lit) and isinstance(expr.value, int)


def convert(expr: Expr, type_: str) -> Expr:
    """``expr`` as ``type_``: literals are retyped (wrapping), others wrapped in U32/I32/F32."""
    if expr.type == type_ or (type_ == INT and expr.type in ("u32", "i32")):
        return expr
    if is_const(expr) and type_ in ("u32", "i32", INT):
        return Lit(_wrap(int(expr.value), type_), type_)
    if is_const(expr) and type_ in ("f32", "f64"):
        return Lit(f"{int(expr.value)}.0", type_)
    if type_ == "bool":
        zero = Lit("0.0", expr.type) if expr.type in ("f32", "f64") else Lit(0, expr.type)
        return Binary("!=", expr, zero, "bool")
    if expr.type == "bool" and type_ == "f32":
        return Call("F32", (expr,), "f32")
    return Call({"u32": "U32", "i32": "I32", "f32": "F32", "f64": "F64"}[type_], (expr,), type_)


def common(a: str, b: str) -> str:
    """The type C's usual conversions (as GLSL's implicit ones) give ``a op b``."""
    if "f64" in (a, b):
        return "f64"
    if "f32" in (a, b):
        return "f32"
    if "u32" in (a, b):
        return "u32"
    if "i32" in (a, b):
        return "i32"
    return "bool" if a == b == "bool" else INT


_FOLD = {
    "+": lambda a, b: a + b, "-": lambda a, b: a - b, "*": lambda a, b: a * b,
    "&": lambda a, b: a & b, "|": lambda a, b: a | b, "^": lambda a, b: a ^ b,
    "<<": lambda a, b: a << (b & 31),
}


def _fold(op: str, a: int, b: int, type_: str) -> int | None:
    """C's 32-bit result of ``a op b`` in ``type_`` (None: division by zero, left alone)."""
    ua, ub = a & _MASK, b & _MASK
    signed = type_ in ("i32", INT)
    if op in _FOLD:
        return _wrap(_FOLD[op](a, b), type_)
    if op == ">>":
        return _wrap((a if signed else ua) >> (ub & 31), type_)
    if op in ("/", "%"):
        if b == 0:
            return None
        if not signed:
            return _wrap(ua // ub if op == "/" else ua % ub, type_)
        q = abs(a) // abs(b) * (1 if (a < 0) == (b < 0) else -1)  # C truncates toward zero
        return _wrap(q if op == "/" else a - q * b, type_)
    return None


class Parser:
    """Recursive descent over the tokens of one body (or helper) with a scope of typed names.

    Args:
        where: what error messages name (the kernel).
        text: the subset text.
        names: visible variables and their types (scalar parameters...).
        calls: result type per intrinsic or helper name; a callable entry maps the argument
            types to it (LOAD's depends on the buffer).
        arg_types: the parameter types of intrinsics and helpers whose arguments convert
            (None where the argument is a buffer name or takes any type).
    """

    def __init__(self, where: str, text: str, names: dict[str, str],
                 calls: dict[str, str], arg_types: dict[str, tuple[str | None, ...]],
                 buffers: dict[str, str]) -> None:
        self.where = where
        self.tokens: list[str] = []
        self.spans: list[tuple[int, int]] = []  # each token's [start, end) in the text
        for m in _TOKEN.finditer(text):
            if m.lastgroup:
                self.tokens.append(m.group(m.lastgroup))
                self.spans.append(m.span())
        if sum(len(m.group(0)) for m in _TOKEN.finditer(text)) != len(text):
            raise _error(where, "characters outside the subset's tokens")
        self.pos = 0
        self.scopes: list[dict[str, str]] = [dict(names)]
        self.calls, self.arg_types, self.buffers = calls, arg_types, buffers

    # -- tokens -----------------------------------------------------------------------------
    def peek(self, ahead: int = 0) -> str:
        k = self.pos + ahead
        return self.tokens[k] if k < len(self.tokens) else ""

    def take(self, expected: str | None = None) -> str:
        tok = self.peek()
        if expected is not None and tok != expected:
            raise _error(self.where, f"expected {expected!r}, found {tok or 'the end'!r} near "
                         f"{' '.join(self.tokens[max(0, self.pos - 6):self.pos + 3])!r}")
        if not tok:
            raise _error(self.where, "unexpected end of the body")
        self.pos += 1
        return tok

    def lookup(self, name: str) -> str:
        for scope in reversed(self.scopes):
            if name in scope:
                return scope[name]
        raise _error(self.where, f"{name!r} is not declared")

    # -- statements -------------------------------------------------------------------------
    def statements(self) -> list[Stmt]:
        """Statements until the end of the text."""
        out = []
        while self.peek():
            out.append(self.statement())
        return out

    def block(self) -> list[Stmt]:
        self.take("{")
        self.scopes.append({})
        out = []
        while self.peek() != "}":
            out.append(self.statement())
        self.take("}")
        self.scopes.pop()
        return out

    def branch(self) -> list[Stmt]:
        """A statement in its own scope, as a list (``if (c) x = 1;`` or a block)."""
        if self.peek() == "{":
            return self.block()
        self.scopes.append({})
        try:
            return [self.statement()]
        finally:
            self.scopes.pop()

    def statement(self) -> Stmt:
        """One statement, with the range of its tokens (``at``)."""
        start = self.pos
        stmt = self.parse_statement()
        stmt.at = (start, self.pos)
        return stmt

    def parse_statement(self) -> Stmt:
        tok = self.peek()
        if tok == "{":
            return Stmt("block", body=self.block())
        if tok == ";":
            self.take()
            return Stmt("block")
        if tok == "if":
            self.take()
            self.take("(")
            cond = convert(self.expression(), "bool")
            self.take(")")
            then = self.branch()
            other = None
            if self.peek() == "else":
                self.take()
                other = self.branch()
            return Stmt("if", expr=cond, body=then, other=other)
        if tok == "while":
            self.take()
            self.take("(")
            cond = convert(self.expression(), "bool")
            self.take(")")
            return Stmt("while", expr=cond, body=self.branch())
        if tok == "do":
            self.take()
            body = self.branch()
            self.take("while")
            self.take("(")
            cond = convert(self.expression(), "bool")
            self.take(")")
            self.take(";")
            return Stmt("do", expr=cond, body=body)
        if tok == "for":
            return self.for_loop()
        if tok in ("break", "continue"):
            self.take()
            self.take(";")
            return Stmt(tok)
        if tok == "return":
            self.take()
            value = None if self.peek() == ";" else self.expression()
            self.take(";")
            ret = self.scopes[0].get("hg_return")
            if value is not None and ret:
                value = convert(value, ret)
            return Stmt("return", expr=value)
        stmts = self.simple()
        self.take(";")
        return stmts[0] if len(stmts) == 1 else Stmt("block", body=stmts, op="flat")

    def for_loop(self) -> Stmt:
        self.take("for")
        self.take("(")
        self.scopes.append({})
        init = self.simple() if self.peek() != ";" else []
        self.take(";")
        cond = None if self.peek() == ";" else convert(self.expression(), "bool")
        self.take(";")
        step: list[Stmt] = []
        while self.peek() != ")":
            if step:
                self.take(",")
            step += self.simple()
        self.take(")")
        body = self.branch()
        self.scopes.pop()
        return Stmt("for", expr=cond, body=body, init=init, step=step)

    def simple(self) -> list[Stmt]:
        """A declaration (possibly of several names), an assignment, ``x++`` or a call."""
        tok = self.peek()
        if tok in TYPES:
            type_ = self.take()
            out = []
            while True:
                name = self.take()
                if not re.fullmatch(r"[A-Za-z_]\w*", name):
                    raise _error(self.where, f"bad declaration of {name!r}")
                init = None
                if self.peek() == "=":
                    self.take()
                    init = convert(self.ternary(), type_)
                self.scopes[-1][name] = type_
                out.append(Stmt("decl", name=name, type=type_, expr=init))
                if self.peek() != ",":
                    return out
                self.take(",")
        if tok in ("++", "--"):
            self.take()
            name = self.take()
            self.lookup(name)
            return [Stmt("incr", name=name, op=tok)]
        if re.fullmatch(r"[A-Za-z_]\w*", tok) and self.peek(1) in (*ASSIGN_OPS, "++", "--"):
            name, op = self.take(), self.take()
            type_ = self.lookup(name)
            if op in ("++", "--"):
                return [Stmt("incr", name=name, op=op)]
            value = self.ternary()
            if op in ("<<=", ">>="):
                value = convert(value, "u32")
            elif op != "=" and common(type_, value.type) != type_:
                # x op= v computed in a wider type (an f32 v into an integer x): written out.
                bop = op[:-1]
                value = Binary(bop, convert(Name(name, type_), common(type_, value.type)),
                               convert(value, common(type_, value.type)),
                               common(type_, value.type))
                op = "="
            return [Stmt("assign", name=name, op=op, expr=convert(value, type_))]
        expr = self.expression()
        if not isinstance(expr, Call):
            raise _error(self.where, f"a statement that does nothing near {tok!r}")
        return [Stmt("call", expr=expr)]

    # -- expressions ------------------------------------------------------------------------
    def expression(self) -> Expr:
        return self.ternary()

    def ternary(self) -> Expr:
        cond = self.binary(0)
        if self.peek() != "?":
            return cond
        self.take()
        then = self.ternary()
        self.take(":")
        other = self.ternary()
        type_ = common(then.type, other.type)
        if type_ == INT:
            type_ = "i32"
        return Cond(convert(cond, "bool"), convert(then, type_), convert(other, type_), type_)

    def binary(self, level: int) -> Expr:
        if level == len(_LEVELS):
            return self.unary()
        left = self.binary(level + 1)
        while self.peek() in _LEVELS[level]:
            op = self.take()
            left = self.combine(op, left, self.binary(level + 1))
        return left

    def combine(self, op: str, left: Expr, right: Expr) -> Expr:
        """``left op right`` with C's conversions, folded when both are integer literals."""
        if op in ("&&", "||"):
            return Binary(op, convert(left, "bool"), convert(right, "bool"), "bool")
        if op in ("<<", ">>"):
            type_ = "i32" if left.type == INT and not is_const(right) else left.type
            left = convert(left, type_)
            if is_const(left) and is_const(right):
                value = _fold(op, int(left.value), int(right.value), type_)
                if value is not None:
                    return Lit(value, type_)
            return Binary(op, left, convert(right, "u32"), type_)
        type_ = common(left.type, right.type)
        if type_ == INT and not (is_const(left) and is_const(right)):
            type_ = "i32"
        left, right = convert(left, type_), convert(right, type_)
        result = "bool" if op in ("==", "!=", "<", ">", "<=", ">=") else type_
        if is_const(left) and is_const(right) and result != "bool":
            value = _fold(op, int(left.value), int(right.value), type_)
            if value is not None:
                return Lit(value, type_)
        return Binary(op, left, right, result)

    def unary(self) -> Expr:
        tok = self.peek()
        if tok in ("-", "~", "!", "+"):
            self.take()
            arg = self.unary()
            if tok == "+":
                return arg
            if tok == "!":
                return Unary("!", convert(arg, "bool"), "bool")
            if is_const(arg):
                value = -int(arg.value) if tok == "-" else ~int(arg.value)
                return Lit(_wrap(value, arg.type), arg.type)
            if tok == "-" and arg.type == "u32":
                return Binary("-", Lit(0, "u32"), arg, "u32")
            return Unary(tok, arg, arg.type)
        return self.primary()

    def primary(self) -> Expr:
        tok = self.take()
        if tok == "(":
            expr = self.expression()
            self.take(")")
            return expr
        if tok in ("true", "false"):
            return Name(tok, "bool")
        if tok[0].isdigit() or tok[0] == ".":
            return self.number(tok)
        if not re.fullmatch(r"[A-Za-z_]\w*", tok):
            raise _error(self.where, f"unexpected {tok!r}")
        if self.peek() == "(":
            return self.call(tok)
        return Name(tok, self.lookup(tok))

    def number(self, tok: str) -> Lit:
        low = tok.lower()
        if low.startswith("0x"):
            unsigned = low.endswith("u")
            return Lit(_wrap(int(low.rstrip("u"), 16), "u32" if unsigned else INT),
                       "u32" if unsigned else INT)
        if low.endswith("lf"):
            return Lit(low[:-2], "f64")
        if any(c in low for c in ".e") or low.endswith("f"):
            return Lit(low.rstrip("f"), "f32")
        if low.endswith("u"):
            return Lit(int(low[:-1]) & _MASK, "u32")
        return Lit(_wrap(int(low), INT), INT)

    def call(self, name: str) -> Call:
        self.take("(")
        args: list[Expr] = []
        first_is_buffer = name in ("LOAD", "STORE") or name.startswith("ATOMIC_")
        while self.peek() != ")":
            if args:
                self.take(",")
            if first_is_buffer and not args:
                buf = self.take()
                if buf not in self.buffers:
                    raise _error(self.where, f"{name} of {buf!r}, which is no buffer or array")
                args.append(Name(buf, self.buffers[buf]))
            else:
                args.append(self.ternary())
        self.take(")")
        if name not in self.calls:
            raise _error(self.where, f"unknown call {name}()")
        result = self.calls[name]
        if name == "LOAD":
            result = args[0].type
        wanted = list(self.arg_types.get(name, ()))
        if name == "STORE":
            wanted = [None, "u32", args[0].type]
        typed = []
        for k, arg in enumerate(args):
            want = wanted[k] if k < len(wanted) else None
            if want is None and arg.type == INT:
                want = "i32"
            typed.append(arg if want is None else convert(arg, want))
        return Call(name, tuple(typed), result)


def parse_body(where: str, text: str, names: dict[str, str], calls: dict[str, str],
               arg_types: dict[str, tuple[str | None, ...]],
               buffers: dict[str, str]) -> list[Stmt]:
    """The statements of a kernel body (see :class:`Parser` for the arguments).

    Raises:
        UnsupportedOpError: text outside the subset, or a name used before it is declared.
    """
    return Parser(where, text, names, calls, arg_types, buffers).statements()


def parse_functions(where: str, text: str, calls: dict[str, str],
                    arg_types: dict[str, tuple[str | None, ...]]) -> list[Func]:
    """Helper definitions (``FUNC ...``); their signatures are added to ``calls`` and
    ``arg_types`` so that later text can call them."""
    parser = Parser(where, text, {}, calls, arg_types, {})
    funcs = []
    while parser.peek():
        parser.take("FUNC")
        ret, name = parser.take(), parser.take()
        parser.take("(")
        params: list[tuple[str, str]] = []
        while parser.peek() != ")":
            if params:
                parser.take(",")
            ptype, pname = parser.take(), parser.take()
            params.append((pname, ptype))
        parser.take(")")
        calls[name] = ret
        arg_types[name] = tuple(t for _, t in params)
        parser.scopes = [{"hg_return": ret, **{n: t for n, t in params}}]
        funcs.append(Func(name, ret, tuple(params), parser.block()))
    return funcs
