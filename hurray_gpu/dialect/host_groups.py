"""Work-group kernels in host C: region splitting at ``BARRIER()`` (pocl's work-item loops).

Host C runs one work item after another, so a barrier can only be met by running every item of
the group up to it first. The body is parsed (csubset's parser, whose statements keep the range
of their tokens) and cut at each barrier into regions; each region becomes a loop over the
group's items, holding its statements as written, and the statements that hold a barrier
(workgroup-uniform ``if``, ``for`` and ``while``, as the subset requires) become control flow
around the regions, evaluated once for the group with item 0's values. A local declared in one
region and read in another (or by the control flow) is kept per item, in an array indexed by
the linear local id; every other local stays a plain scalar of its region's loop, where the
compiler keeps it in a register. Workgroup arrays are locals of the group's function, so each
group has its own, and groups run in parallel on OpenMP threads (POSIX threads without OpenMP).
"""

from __future__ import annotations

import textwrap
from collections.abc import Callable

from hurray_gpu.dialect.csubset import Call, Parser, Stmt
from hurray_gpu.dialect.kernel import KernelDef
from hurray_gpu.errors import UnsupportedOpError

__all__ = ["MAX_GROUP_BYTES", "render_group_entry"]

# Per-item copies and workgroup arrays live on the group function's stack: OpenMP and POSIX
# worker threads get the platform's default thread stack (2 MiB at the least on glibc), so a
# group's memory stays well under it.
MAX_GROUP_BYTES = 512 * 1024

_BYTES = {"u32": 4, "i32": 4, "f32": 4, "bool": 1}
_TYPES = (*_BYTES, "true", "false")


def _refuse(kernel: KernelDef, what: str) -> UnsupportedOpError:
    return UnsupportedOpError(f"kernel {kernel.name}: {what} in a work-group kernel on host C",
                              fix="write the body with one declaration per statement, unique "
                              "names, barriers only in blocks, if, for and while, and no "
                              "return/break/continue beside barriers, or run it on an opencl, "
                              "vulkan, cuda or rocm device.")


class _AnyCall(dict[str, str]):
    """Every call is known (as u32): region splitting needs the statements' shape and names,
    not the types of calls, which the host compiler checks."""

    def __contains__(self, key: object) -> bool:
        return True

    def __missing__(self, key: str) -> str:
        return "u32"


def _walk(stmts: list[Stmt]) -> list[Stmt]:
    """``stmts`` and the statements nested in their branches and bodies."""
    out = []
    for stmt in stmts:
        out += [stmt, *_walk([*stmt.body, *(stmt.other or [])])]
    return out


def _jumps(stmts: list[Stmt]) -> bool:
    """Whether ``stmts`` return, or break or continue the loop they are the body of."""
    return any(s.kind in ("break", "continue", "return")
               or (s.kind not in ("for", "while", "do") and _jumps([*s.body, *(s.other or [])]))
               or (s.kind in ("for", "while", "do") and _jumps_return(s.body))
               for s in stmts)


def _jumps_return(stmts: list[Stmt]) -> bool:
    return any(s.kind == "return" for s in _walk(stmts))


# A unit is a statement with the range of tokens that spell it. A flattened body is a list of
# pieces: ("items", units) runs every item of the group, ("sync",) is a barrier, and
# ("open", format, first, end), ("else",) and ("close",) are the group's control flow around
# them (the condition is tokens [first, end)).
_Unit = tuple[Stmt, int, int]
_Piece = tuple


class _Split:
    """A body's statements cut at its barriers, and the locals kept per item (``promoted``)."""

    def __init__(self, kernel: KernelDef, text: str) -> None:
        self.kernel, self.text = kernel, text
        buffers = dict.fromkeys([*(p.name for p in kernel.buffers),
                                 *(n for n, _ in kernel.shared)], "u32")
        self.parser = Parser(kernel.name, text, {p.name: p.dtype for p in kernel.scalars},
                             _AnyCall(), {}, buffers)
        self.tokens = self.parser.tokens
        tree = self.parser.statements()
        self.group: set[int] = set()  # ids of the barrier-free loops run as group control flow
        self.uniform = self.find_uniform(tree)
        self.sync: set[int] = set()  # ids of the statements that hold a barrier or group loop
        self.mark(tree)
        self.check_jumps(tree, 0)
        self.pieces: list[_Piece] = []
        self.flatten(tree)
        self.promoted = self.plan()  # name -> subset type

    def fail(self, what: str) -> UnsupportedOpError:
        return _refuse(self.kernel, what)

    def mark(self, stmts: list[Stmt]) -> bool:
        """Note the statements that hold a barrier; True if one of ``stmts`` does."""
        found = False
        for stmt in stmts:
            inner = self.mark(stmt.body) | self.mark(stmt.other or [])
            if inner or id(stmt) in self.group or (
                    stmt.kind == "call" and isinstance(stmt.expr, Call)
                    and stmt.expr.name == "BARRIER"):
                self.sync.add(id(stmt))
                found = True
        return found

    def find_uniform(self, tree: list[Stmt]) -> set[str]:
        """The locals every item of the group holds the same value of (pocl's uniformity):
        written only outside per-item control flow, from literals, scalar parameters and such
        locals. Barrier-free loops whose header is uniform join ``group``: run as the group's
        control flow with the items' loop inside, the compiler vectorizes over the items."""
        uniform = {s.name for t in _walk(tree) for s in [t, *t.init]
                   if s.kind in ("decl", "assign", "incr")}
        while True:
            self.group.clear()
            bad: set[str] = set()
            self.scan(tree, uniform, bad, True)
            if not bad & uniform:
                return uniform
            uniform -= bad

    def same(self, first: int, end: int, uniform: set[str]) -> bool:
        """Whether tokens [first, end) read only literals, scalar parameters and ``uniform``."""
        ok = uniform | {p.name for p in self.kernel.scalars} | set(_TYPES)
        return all(not (t[0].isalpha() or t[0] == "_") or t in ok
                   for t in self.tokens[first:end])

    def scan(self, stmts: list[Stmt], uniform: set[str], bad: set[str], top: bool) -> None:
        for stmt in stmts:
            first = stmt.at[0]
            if stmt.kind in ("decl", "assign", "incr"):
                if not top or not self.same(*stmt.at, uniform):
                    bad.add(stmt.name)
                continue
            loop = stmt.kind in ("for", "while") and len(stmt.init) <= 1
            if loop and top and self.same(first + 1, self.close(first + 1) + 1, uniform) \
                    and not _jumps(stmt.body):
                self.group.add(id(stmt))
            inner = top and (stmt.kind == "block" or id(stmt) in self.group
                             or (stmt.kind in ("if", "for", "while") and self.holds(stmt)))
            # A for's init and step carry no token range of their own: its header's.
            head = loop and inner and self.same(first + 1, self.close(first + 1) + 1, uniform)
            self.scan([*stmt.init, *stmt.step], uniform, bad, head)
            self.scan([*stmt.body, *(stmt.other or [])], uniform, bad, inner)

    def holds(self, stmt: Stmt) -> bool:
        """Whether ``stmt`` holds a barrier (is the group's control flow whatever its values)."""
        return any(s.kind == "call" and isinstance(s.expr, Call) and s.expr.name == "BARRIER"
                   for s in _walk([stmt]))

    def check_jumps(self, stmts: list[Stmt], loops: int) -> None:
        for stmt in stmts:
            if stmt.kind == "return" or (stmt.kind in ("break", "continue") and loops == 0):
                raise self.fail(f"'{stmt.kind}'")
            # A loop that holds a barrier becomes the group's control flow: a break in it would
            # leave a region's loop over the items, not the loop.
            inner = stmt.kind in ("for", "while", "do") and id(stmt) not in self.sync
            self.check_jumps([*stmt.body, *(stmt.other or [])], loops + inner)

    def close(self, k: int) -> int:
        """The index of the ``)`` that closes the ``(`` at token ``k``."""
        depth = 0
        while True:
            depth += {"(": 1, ")": -1}.get(self.tokens[k], 0)
            if depth == 0:
                return k
            k += 1

    def item(self, stmt: Stmt, first: int, end: int) -> None:
        if all(s.kind in ("decl", "assign", "incr") and s.name in self.uniform
               for s in (stmt.body if stmt.kind == "block" else [stmt])):
            self.pieces.append(("once", [(stmt, first, end)]))  # the same for every item
        elif self.pieces and self.pieces[-1][0] == "items":
            self.pieces[-1][1].append((stmt, first, end))
        else:
            self.pieces.append(("items", [(stmt, first, end)]))

    def flatten(self, stmts: list[Stmt]) -> None:
        for stmt in stmts:
            first = stmt.at[0]
            if id(stmt) not in self.sync:
                self.item(stmt, *stmt.at)
            elif stmt.kind == "call":
                self.pieces.append(("sync",))
            elif stmt.kind == "block":
                self.flatten(stmt.body)
            elif stmt.kind == "if":
                self.pieces.append(("open", "if ({})", first + 2, self.close(first + 1)))
                self.flatten(stmt.body)
                if stmt.other is not None:
                    self.pieces.append(("else",))
                    self.flatten(stmt.other)
                self.pieces.append(("close",))
            elif stmt.kind in ("for", "while") and len(stmt.init) <= 1:
                # A loop holding a barrier: the group steps every item's counter together.
                end = self.close(first + 1)
                cut = [k for k in range(first + 2, end) if self.tokens[k] == ";"] \
                    if stmt.kind == "for" else [first + 1, end]
                if stmt.init:
                    self.item(stmt.init[0], first + 2, cut[0] + 1)
                self.pieces.append(("open", "while ({})", cut[0] + 1, cut[1]))
                self.flatten(stmt.body)
                if stmt.step:
                    self.item(Stmt("block", body=stmt.step), cut[1] + 1, end)
                self.pieces.append(("close",))
            else:
                raise self.fail(f"a barrier inside '{stmt.kind}'")

    def plan(self) -> dict[str, str]:
        """The locals declared in one piece and used in another, with their types."""
        declared: dict[str, tuple[int, str]] = {}
        taken = {p.name for p in self.kernel.params} | {n for n, _ in self.kernel.shared}
        uses: list[set[str]] = []
        for unit, piece in enumerate(self.pieces):
            ranges = [u[1:] for u in piece[1]] if piece[0] in ("items", "once") else \
                [piece[2:]] if piece[0] == "open" else []
            uses.append({t for first, end in ranges for t in self.tokens[first:end]})
            for stmt in _walk([u[0] for u in piece[1]] if piece[0] in ("items", "once") else []):
                if stmt.op == "flat":
                    raise self.fail("several declarations in one statement")
                if stmt.kind != "decl":
                    continue
                if stmt.name in declared or stmt.name in taken or stmt.name.startswith("hg_"):
                    raise self.fail(f"a second declaration of {stmt.name!r}")
                declared[stmt.name] = (unit, stmt.type)
        self.types = {name: ty for name, (_, ty) in declared.items()}
        return {name: ty for name, (unit, ty) in declared.items() if name not in self.uniform
                and any(name in used for k, used in enumerate(uses) if k != unit)}

    def source(self, first: int, end: int) -> str:
        """Tokens [first, end) as written (lines dedented), each promoted local read as this
        item's copy."""
        spans, text = self.parser.spans, self.text
        out, pos = [], spans[first][0]
        for k in range(first, end):
            if self.tokens[k] in self.promoted:
                out += [text[pos:spans[k][0]], f"hg_s->{self.tokens[k]}[hg_li]"]
                pos = spans[k][1]
        out.append(text[pos:spans[end - 1][1]])
        indent = text[text.rfind("\n", 0, spans[first][0]) + 1:spans[first][0]]
        return textwrap.dedent((indent if indent.isspace() else "") + "".join(out)).strip()

    def region(self, units: list[_Unit]) -> str:
        lines = []
        for stmt, first, end in units:
            if stmt.kind == "decl" and (stmt.name in self.promoted or stmt.name in self.uniform):
                if stmt.expr is None:
                    continue
                first += 1  # the name and its value: the declaration is the per-item array
            line = self.source(first, end)
            lines.append(line if line.endswith((";", "}")) else line + ";")  # a loop's step
        return "\n".join(lines)


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
    plan = _Split(kernel, text)
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
    out += [f"    {type_of(plan.types[n])} {n} = 0;" for n in sorted(plan.uniform)
            if n in plan.types]
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
            code = translate(_items_loop(kernel, plan.region(piece[1])))
            out += ["    " * depth + line for line in code.splitlines()]
        elif piece[0] == "once":
            out.append("    " * depth + translate(plan.region(piece[1])))
        elif piece[0] == "open":
            cond = translate(plan.source(*piece[2:]) if piece[3] > piece[2] else "1")
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


# Groups are independent (their own workgroup arrays and per-item values), so OpenMP threads,
# or without OpenMP the POSIX thread team of the host prelude (hg_parallel, one group per
# chunk), take them one at a time; a launch of one group stays on the calling thread. Ids of
# items past the global size run like the padded tail of a GPU launch (bodies bounds-check).
_GROUP_ENTRY = """\
#if defined(HG_THREADS) && !defined(_OPENMP)
static void {name}_task(const hg_job_t *hg_job, int64_t hg_g) {{
    void **hg_bufs = hg_job->bufs;
    const uint32_t *hg_words = hg_job->words;
    int64_t hg_w0 = hg_job->n0, hg_w1 = hg_job->n1;
{unpack}
    {name}_group((uint32_t)(hg_g % hg_w0), (uint32_t)((hg_g / hg_w0) % hg_w1),
                 (uint32_t)(hg_g / (hg_w0 * hg_w1)){call});
}}
#endif

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
#elif defined(HG_THREADS)
    if (hg_groups > 1) {{
        hg_job_t hg_job = {{hg_bufs, hg_words, hg_w0, hg_w1, 1, hg_groups}};
        hg_parallel({name}_task, &hg_job, hg_groups);
        return;
    }}
#endif
    for (int64_t hg_g = 0; hg_g < hg_groups; hg_g++)
        {name}_group((uint32_t)(hg_g % hg_w0), (uint32_t)((hg_g / hg_w0) % hg_w1),
                     (uint32_t)(hg_g / (hg_w0 * hg_w1)){call});
}}"""
