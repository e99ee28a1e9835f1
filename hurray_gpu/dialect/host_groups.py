"""Work-group kernels in host C: region splitting at ``BARRIER()`` (pocl's work-item loops).

Host C runs one work item after another, so a barrier can only be met by running every item of
the group up to it first. The body is cut at each barrier into regions; each region becomes a
loop over the group's items, and the statements that hold a barrier (workgroup-uniform ``if``
and ``for``, as the subset requires) become control flow around the regions, evaluated once
for the group with item 0's values. A local declared in one region and read in another (or by
the control flow) is kept per item, in an array indexed by the linear local id; every other
local stays a plain scalar of its region's loop, where the compiler keeps it in a register.
Workgroup arrays are locals of the group's function, so each group has its own, and groups run
in parallel on OpenMP threads.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field

from hurray_gpu.dialect.kernel import KernelDef
from hurray_gpu.errors import UnsupportedOpError

__all__ = ["MAX_GROUP_BYTES", "render_group_entry"]

# Per-item copies and workgroup arrays live on the group function's stack: OpenMP worker
# threads get the platform's default thread stack (2 MiB at the least on glibc), so a group's
# memory stays well under it.
MAX_GROUP_BYTES = 512 * 1024

_DECL = re.compile(r"(u32|i32|f32|bool)\s+([A-Za-z_]\w*)\s*(?:=\s*(.*))?;\Z", re.S)
_KEYWORD = re.compile(r"(if|for|while|else|do|switch)\b")
_IDENT = re.compile(r"\b[A-Za-z_]\w*\b")
_JUMP = re.compile(r"\b(return|break|continue|goto)\b")
_BYTES = {"u32": 4, "i32": 4, "f32": 4, "bool": 1}


def _refuse(kernel: KernelDef, what: str) -> UnsupportedOpError:
    return UnsupportedOpError(f"kernel {kernel.name}: {what} in a work-group kernel on host C",
                              fix="write the body with one declaration per statement, unique "
                              "names and no return/break/continue beside barriers, or run it "
                              "on an opencl, vulkan, cuda or rocm device.")


@dataclass
class _Stmt:
    """A parsed statement: ``simple`` (text with its ``;``), ``barrier``, ``block``, ``if``
    (``text`` the condition, ``other`` the else branch) or ``for`` (``init``, ``text`` the
    condition, ``step``); ``sync`` says a barrier is inside."""

    kind: str
    text: str = ""
    body: list[_Stmt] = field(default_factory=list)
    other: list[_Stmt] | None = None
    init: str = ""
    step: str = ""
    sync: bool = False


class _Parser:
    """Statements of a subset body (comments already stripped)."""

    def __init__(self, text: str, fail: Callable[[str], UnsupportedOpError]) -> None:
        self.s, self.i, self.fail = text, 0, fail

    def skip(self) -> None:
        while self.i < len(self.s) and self.s[self.i].isspace():
            self.i += 1

    def seq(self, closing: bool) -> list[_Stmt]:
        out: list[_Stmt] = []
        while True:
            self.skip()
            if self.i >= len(self.s) or self.s[self.i] == "}":
                if closing != (self.i < len(self.s)):
                    raise self.fail("unbalanced braces")
                self.i += 1
                return out
            stmt = self.stmt()
            if stmt.kind != "simple" or stmt.text:
                out.append(stmt)

    def parens(self) -> str:
        self.skip()
        if self.i >= len(self.s) or self.s[self.i] != "(":
            raise self.fail("a control statement without parentheses")
        depth, start = 0, self.i
        while self.i < len(self.s):
            depth += {"(": 1, ")": -1}.get(self.s[self.i], 0)
            self.i += 1
            if depth == 0:
                return self.s[start + 1:self.i - 1].strip()
        raise self.fail("unbalanced parentheses")

    def branch(self) -> list[_Stmt]:
        stmt = self.stmt()
        return stmt.body if stmt.kind == "block" else [stmt]

    def stmt(self) -> _Stmt:
        self.skip()
        if self.i >= len(self.s):
            raise self.fail("a control statement without its body")
        if self.s[self.i] == "{":
            self.i += 1
            return _mark(_Stmt("block", body=self.seq(True)))
        word = _KEYWORD.match(self.s, self.i)
        if word and word[1] == "if":
            self.i = word.end()
            stmt = _Stmt("if", text=self.parens(), body=self.branch())
            self.skip()
            if re.match(r"else\b", self.s[self.i:self.i + 5]):
                self.i += 4
                stmt.other = self.branch()
            return _mark(stmt)
        if word and word[1] in ("for", "while"):
            self.i = word.end()
            head = self.parens()
            parts = head.split(";") if word[1] == "for" else ["", head, ""]
            if len(parts) != 3:
                raise self.fail(f"for ({head})")
            init, cond, step = (p.strip() for p in parts)
            return _mark(_Stmt("for", text=cond or "1", init=init, step=step,
                               body=self.branch()))
        if word:
            raise self.fail(f"'{word[1]}'")
        end = self.s.find(";", self.i)
        text = self.s[self.i:end + 1].strip() if end >= 0 else ""
        if not text or "{" in text or "}" in text:
            raise self.fail("a statement without its ';'")
        self.i = end + 1
        if re.fullmatch(r"BARRIER\(\s*\)\s*;", text):
            return _Stmt("barrier", sync=True)
        return _Stmt("simple", text=text if text != ";" else "")


def _mark(stmt: _Stmt) -> _Stmt:
    stmt.sync = any(s.sync for s in [*stmt.body, *(stmt.other or [])])
    return stmt


# A flattened body: ("items", statements) runs every item of the group; ("open", text, cond),
# ("else",) and ("close",) are the group's control flow around them.
_Piece = tuple


def _flatten(seq: list[_Stmt], out: list[_Piece]) -> None:
    for stmt in seq:
        if not stmt.sync:
            if out and out[-1][0] == "items":
                out[-1][1].append(stmt)
            else:
                out.append(("items", [stmt]))
        elif stmt.kind == "barrier":
            out.append(("sync",))
        elif stmt.kind == "block":
            _flatten(stmt.body, out)
        elif stmt.kind == "if":
            out.append(("open", "if ({})", stmt.text))
            _flatten(stmt.body, out)
            if stmt.other is not None:
                out.append(("else",))
                _flatten(stmt.other, out)
            out.append(("close",))
        else:  # a loop holding a barrier: the group steps every item's counter together
            if stmt.init:
                _flatten([_Stmt("simple", text=stmt.init + ";")], out)
            out.append(("open", "while ({})", stmt.text))
            _flatten(stmt.body, out)
            if stmt.step:
                _flatten([_Stmt("simple", text=stmt.step + ";")], out)
            out.append(("close",))


def _top_level_comma(text: str) -> bool:
    depth = 0
    for char in text:
        depth += {"(": 1, ")": -1}.get(char, 0)
        if char == "," and depth == 0:
            return True
    return False


def _walk(stmts: list[_Stmt]) -> list[_Stmt]:
    out = []
    for stmt in stmts:
        out.append(stmt)
        out += _walk([*stmt.body, *(stmt.other or [])])
    return out


def _source(stmt: _Stmt) -> str:
    """Subset text of a statement (every branch braced)."""
    def block(items: list[_Stmt]) -> str:
        inner = "\n".join(_source(s) for s in items)
        return "{\n" + "\n".join("    " + line for line in inner.splitlines()) + "\n}"
    if stmt.kind == "simple":
        return stmt.text
    if stmt.kind == "block":
        return block(stmt.body)
    if stmt.kind == "if":
        other = f" else {block(stmt.other)}" if stmt.other is not None else ""
        return f"if ({stmt.text}) {block(stmt.body)}{other}"
    return f"for ({stmt.init}; {stmt.text}; {stmt.step}) {block(stmt.body)}"


def _check_jumps(stmts: list[_Stmt], loops: int, fail: Callable[[str], UnsupportedOpError]
                 ) -> None:
    for stmt in stmts:
        if stmt.kind == "simple":
            jump = _JUMP.search(stmt.text)
            if jump and (jump[1] in ("return", "goto") or loops == 0):
                raise fail(f"'{jump[1]}'")
        # A loop that holds a barrier becomes the group's control flow: a break in it would
        # leave a region's loop over the items, not the loop.
        inner = loops + (stmt.kind == "for" and not stmt.sync)
        _check_jumps([*stmt.body, *(stmt.other or [])], inner, fail)


def _items_loop(kernel: KernelDef, body: str) -> str:
    lx, ly, lz = kernel.local_size
    head = [f"for (uint32_t hg_lz = 0; hg_lz < {lz}u; hg_lz++)" if lz > 1 else
            "const uint32_t hg_lz = 0u;",
            f"for (uint32_t hg_ly = 0; hg_ly < {ly}u; hg_ly++)" if ly > 1 else
            "const uint32_t hg_ly = 0u;",
            f"for (uint32_t hg_lx = 0; hg_lx < {lx}u; hg_lx++) {{"]
    ids = (f"    const uint32_t hg_li = hg_lx + {lx}u * (hg_ly + {ly}u * hg_lz);\n"
           "    const uint32_t hg_gid0 = hg_b0 + hg_lx, hg_gid1 = hg_b1 + hg_ly, "
           "hg_gid2 = hg_b2 + hg_lz;\n    (void)hg_li; (void)hg_gid0; (void)hg_gid1; "
           "(void)hg_gid2;\n")
    indented = "\n".join("    " + line for line in body.splitlines())
    return "{\n" + "\n".join(head) + "\n" + ids + indented + "\n}\n}"


@dataclass
class _Plan:
    pieces: list[_Piece]
    promoted: dict[str, str]  # name -> subset type


def _plan(kernel: KernelDef, text: str) -> _Plan:
    def fail(what: str) -> UnsupportedOpError:
        return _refuse(kernel, what)

    tree = _Parser(text, fail).seq(False)
    _check_jumps(tree, 0, fail)
    pieces: list[_Piece] = []
    _flatten(tree, pieces)
    declared: dict[str, tuple[int, str]] = {}
    taken = {p.name for p in kernel.params} | {n for n, _ in kernel.shared}
    uses: list[set[str]] = []
    for unit, piece in enumerate(pieces):
        if piece[0] == "items":
            stmts = _walk(piece[1])
            for stmt in stmts:
                decl = _DECL.match(stmt.text) if stmt.kind == "simple" else None
                if stmt.kind == "simple" and re.match(r"(u32|i32|f32|bool)\b", stmt.text) \
                        and decl is None:
                    raise fail(f"declaration {stmt.text!r}")
                if decl and _top_level_comma(decl[3] or ""):
                    raise fail(f"declaration {stmt.text!r}")
                if decl:
                    if decl[2] in declared or decl[2] in taken or decl[2].startswith("hg_"):
                        raise fail(f"a second declaration of {decl[2]!r}")
                    declared[decl[2]] = (unit, decl[1])
            uses.append({w for s in stmts for w in _IDENT.findall(
                s.text + " " + s.init + " " + s.step)})
        else:
            uses.append(set(_IDENT.findall(piece[2])) if piece[0] == "open" else set())
    promoted = {name: ty for name, (unit, ty) in declared.items()
                if any(name in used for k, used in enumerate(uses) if k != unit)}
    return _Plan(pieces, promoted)


def _private(promoted: dict[str, str], text: str) -> str:
    """``text`` with each promoted local read as this item's copy."""
    if not promoted:
        return text
    names = "|".join(sorted(promoted, key=len, reverse=True))
    return re.sub(rf"\b({names})\b", r"hg_s->\1[hg_li]", text)


def _region(plan: _Plan, stmts: list[_Stmt]) -> str:
    lines = []
    for stmt in stmts:
        decl = _DECL.match(stmt.text) if stmt.kind == "simple" else None
        if decl and decl[2] in plan.promoted:
            if decl[3] is not None:
                lines.append(_private(plan.promoted, f"{decl[2]} = {decl[3]};"))
            continue
        lines.append(_private(plan.promoted, _source(stmt)))
    return "\n".join(lines)


def render_group_entry(kernel: KernelDef, text: str, translate: Callable[[str], str],
                       params: str, unpack: str, type_of: Callable[[str], str]) -> str:
    """The host C group function and entry of a kernel with barriers or workgroup arrays.

    Args:
        kernel: the kernel (``local_size`` is the work-group shape).
        text: its body in the subset, comments stripped, block statements expanded.
        translate: the host dialect's rewrite of subset text.
        params: the C parameter list; ``unpack`` declares them in the entry from its ABI.
        type_of: a subset type's C spelling.

    Returns:
        C source of ``<name>_group`` and the ``<name>`` entry (the common host ABI).

    Raises:
        UnsupportedOpError: the body is outside what region splitting handles (a return,
            a break out of a region, a repeated name, private arrays), or the group's memory
            exceeds :data:`MAX_GROUP_BYTES`.
    """
    if kernel.private:
        raise _refuse(kernel, "private arrays")
    plan = _plan(kernel, text)
    lx, ly, lz = kernel.local_size
    items = lx * ly * lz
    size = sum(4 * c for _, c in kernel.shared) + \
        sum(_BYTES[t] * items for t in plan.promoted.values())
    if size > MAX_GROUP_BYTES:
        raise UnsupportedOpError(
            f"kernel {kernel.name}: a work-group of {items} items needs {size} bytes of "
            f"per-item values and workgroup arrays on host C (at most {MAX_GROUP_BYTES})",
            fix="use a smaller work-group or fewer values live across barriers, or run it on "
            "an opencl, vulkan, cuda or rocm device.")
    out = [f"    uint32_t {n}[{c}];" for n, c in kernel.shared]
    if plan.promoted:
        fields = " ".join(f"{type_of(t)} {n}[{items}];" for n, t in plan.promoted.items())
        out += [f"    struct {{ {fields} }} hg_st, *hg_s = &hg_st;"]
    out += [f"    const uint32_t hg_b0 = hg_g0 * {lx}u, hg_b1 = hg_g1 * {ly}u, "
            f"hg_b2 = hg_g2 * {lz}u;",
            "    const uint32_t hg_li = 0u, hg_gid0 = hg_b0, hg_gid1 = hg_b1, hg_gid2 = hg_b2;",
            "    (void)hg_li; (void)hg_gid0; (void)hg_gid1; (void)hg_gid2;"]
    depth = 1
    for piece in plan.pieces:
        if piece[0] == "items":
            code = translate(_items_loop(kernel, _region(plan, piece[1])))
            out += ["    " * depth + line for line in code.splitlines()]
        elif piece[0] == "open":
            cond = translate(_private(plan.promoted, piece[2]))
            out.append("    " * depth + piece[1].format(cond) + " {")
            depth += 1
        elif piece[0] == "else":
            out.append("    " * (depth - 1) + "} else {")
        elif piece[0] == "close":
            depth -= 1
            out.append("    " * depth + "}")
    name, call = kernel.name, ", ".join(p.name for p in kernel.params)
    call = call and ", " + call
    group = (f"static void {name}_group(uint32_t hg_g0, uint32_t hg_g1, uint32_t hg_g2"
             f"{params and ', ' + params}) {{\n" + "\n".join(out) + "\n}")
    entry = _GROUP_ENTRY.format(name=name, unpack=unpack, lx=lx, ly=ly, lz=lz, call=call)
    return f"{group}\n\n{entry}"


# Groups are independent (their own workgroup arrays and per-item values), so OpenMP threads
# take them one at a time; a launch of one group stays on the calling thread. Ids of items past
# the global size run like the padded tail of a GPU launch (bodies bounds-check).
_GROUP_ENTRY = """\
void {name}(void **hg_bufs, const uint32_t *hg_words, int64_t hg_n0, int64_t hg_n1,
            int64_t hg_n2) {{
{unpack}
    int64_t hg_w0 = (hg_n0 + {lx} - 1) / {lx}, hg_w1 = (hg_n1 + {ly} - 1) / {ly};
    int64_t hg_groups = hg_w0 * hg_w1 * ((hg_n2 + {lz} - 1) / {lz});
#ifdef _OPENMP
    if (hg_groups > 1) {{
        #pragma omp parallel for schedule(dynamic, 1)
        for (int64_t hg_g = 0; hg_g < hg_groups; hg_g++)
            {name}_group((uint32_t)(hg_g % hg_w0), (uint32_t)((hg_g / hg_w0) % hg_w1),
                         (uint32_t)(hg_g / (hg_w0 * hg_w1)){call});
        return;
    }}
#endif
    for (int64_t hg_g = 0; hg_g < hg_groups; hg_g++)
        {name}_group((uint32_t)(hg_g % hg_w0), (uint32_t)((hg_g / hg_w0) % hg_w1),
                     (uint32_t)(hg_g / (hg_w0 * hg_w1)){call});
}}"""
