"""Labels that tell kernels apart where their short names collide.

PyTorch runs most of its elementwise ops through one template, so a top-kernels list can hold nine
rows of `vectorized_elementwise_kernel`. What tells them apart is in the demangled name's template
arguments: the functor or the op's lambda host (`addcdiv_cuda_kernel`, `CUDAFunctor_add`,
`BUnaryFunctor<MulFunctor>`). A colliding short name gets as many of those identifiers as it takes
to make the labels of its group distinct; a name that is unique keeps its short name.
"""

from __future__ import annotations

import re

# Identifiers inside template arguments that name no op: scalar types, wrappers, the lambda
# scaffolding of demangled names, and common argument types.
NOISE = frozenset("""
void const unsigned signed int long short char bool float double half size_t operator lambda instance
at native c10 std cuda detail memory templates anonymous unnamed array Array T1 T2 T3 T4 T5 T6 T7 T8 T9 T10 T11
TensorIteratorBase TensorIterator TensorBase Tensor Scalar GeluType OffsetCalculator IntDivider
func_wrapper_t ReduceOp gpu_kernel_impl gpu_kernel_impl_nocast binary_internal LoadWithoutCast StoreWithoutCast
LoadWithCast StoreWithCast TrivialOffsetCalculator
""".split())
# functors that wrap the op they apply: named with it, `BUnaryFunctor<MulFunctor>`
WRAPPERS = frozenset({"AUnaryFunctor", "BUnaryFunctor", "BinaryFunctor", "UnaryFunctor"})
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
MAX_PARTS = 3


def template_args(name: str, short: str) -> str:
    """The text of the template argument list that follows the short name, or ''."""
    i = name.find(short + "<")
    if i < 0:
        return ""
    i += len(short) + 1
    depth, j = 1, i
    while j < len(name) and depth:
        depth += {"<": 1, ">": -1}.get(name[j], 0)
        j += 1
    return name[i: j - 1]


_CAST = re.compile(r"\(([A-Za-z_][\w: ]*)\)(?=-?\d)")   # "(int)4", "(cudnnKernelDataType_t)2"
_LITERAL = re.compile(r"\((?:[A-Za-z_][\w: ]*)\)(-?\d+)")


def literals(name: str, short: str) -> list[str]:
    """The numbers among the template arguments (tile sizes, flags, enum values), in order."""
    return _LITERAL.findall(template_args(name, short))


def parts(name: str, short: str) -> list[str]:
    """The identifiers that say what a template instance runs, in order, each once."""
    seen: list[str] = []
    for ident in _IDENT.findall(_CAST.sub("", template_args(name, short))):
        if ident not in NOISE and ident != short and ident not in seen and not ident.isdigit():
            seen.append(ident)
    if len(seen) > 1 and seen[0] in WRAPPERS:
        seen[:2] = [f"{seen[0]}<{seen[1]}>"]
    return seen


def labels(rows: list[tuple[str, str]]) -> dict[str, str]:
    """(full name, display name) pairs -> full name -> a label unique among them where it can be."""
    groups: dict[str, list[str]] = {}
    for name, display in rows:
        groups.setdefault(display, [])
        if name not in groups[display]:
            groups[display].append(name)
    out: dict[str, str] = {}
    for display, names in groups.items():
        if len(names) == 1:
            out[names[0]] = display
            continue
        short = display.split("<", 1)[0]
        found = {n: parts(n, short) for n in names}
        chosen = {n: display for n in names}
        for k in range(1, MAX_PARTS + 1):
            chosen = {n: f"{short}<{', '.join(p[:k])}>" if p else display for n, p in found.items()}
            if len(set(chosen.values())) == len(names):
                break
        else:  # the ops alike: the numbers tell them apart (reduce_kernel<sum_functor, 512, 1, 4, 4>)
            chosen = {n: f"{short}<{', '.join(p[:MAX_PARTS] + literals(n, short))}>" for n, p in found.items()}
        counts: dict[str, int] = {}
        for n in names:  # still equal: number them, in the rows' order
            label = chosen[n]
            if list(chosen.values()).count(label) > 1:
                counts[label] = counts.get(label, 0) + 1
                label = f"{label} #{counts[label]}"
            out[n] = label
    return out


SHORT_LABEL_CHARS = 48


def short_label(name: str, limit: int = SHORT_LABEL_CHARS) -> str:
    """One kernel's name in a few characters, for a one-line headline: its short name (no return
    type, namespace or argument list) with the first identifier of its template arguments, as
    labels() tells kernels apart (`vectorized_elementwise_kernel<CUDAFunctor_add>`); a name still
    longer than `limit` is cut at an underscore and ends with an ellipsis."""
    text = name.strip()
    head = text.split("<", 1)[0].split("(", 1)[0]
    short = head.split()[-1].rsplit("::", 1)[-1] if head.split() else head
    found = parts(text[text.find(short):] if short else text, short) if short else []
    label = f"{short}<{found[0]}>" if found else short or text
    if len(label) <= limit:
        return label
    cut = label[:limit - 1]
    cut = cut[: cut.rfind("_")] if cut.rfind("_") > limit // 2 else cut
    return cut + "\u2026"
