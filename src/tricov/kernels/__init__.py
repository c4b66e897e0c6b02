"""Kernels: CUDA templates (``cuda/*.cu``, compiled at run time) and Numba CPU kernels."""

from __future__ import annotations

__all__ = ["BATCHED_HEAVY", "TRI_ORDERS", "batched_small", "definitions", "instantiations",
           "tri_columns", "tri_orders"]

_TYPES = {"float": 4, "double": 8, "tricov::cplx<float>": 8, "tricov::cplx<double>": 16}
_REAL = {"float": "float", "double": "double", "tricov::cplx<float>": "float",
         "tricov::cplx<double>": "double"}

_TAGS = {"float": "s", "double": "d", "tricov::cplx<float>": "c", "tricov::cplx<double>": "z"}

#: Operations of ``batched_small.cu`` whose widest instantiation holds the most registers
#: (two full tiles): with the narrowest width of every operation, what the CI compile check
#: builds (every code path, spills where they would be, at a CI-sized compile time).
BATCHED_HEAVY = (0, 9)  # TRSM, POSV


def batched_small(ctype: str, width: int, op: int) -> tuple[str, str]:
    """Name and defining line of the register kernel of ``batched_small.cu`` for a scalar type,
    a group width and an operation code (``TRICOV_BATCHED_SMALL``, a C-linkage kernel)."""
    name = f"tricov_batched_small_{_TAGS[ctype]}{width}_{op}"
    return name, f"TRICOV_BATCHED_SMALL({name}, {ctype}, {width}, {op})"


def definitions(source: str) -> dict[str, list[str]]:
    """Kernel-defining lines the executors append to ``source``, for the CI compile check.

    Grouped by scalar type. For ``batched_small.cu``: every operation at the narrowest group
    width (every code path) and :data:`BATCHED_HEAVY` at the widest (where registers run short).
    """
    if source != "batched_small.cu":
        return {}
    out: dict[str, list[str]] = {}
    for t in _TYPES:
        widest = 16 if "cplx" in t else 32
        kernels = [(4, op) for op in range(10)] + [(widest, op) for op in BATCHED_HEAVY]
        out[t] = [batched_small(t, w, op)[1] for w, op in kernels]
    return out

#: Leaf orders the warp-per-column triangular kernel is compiled for.
TRI_ORDERS = (32, 64, 128, 256)


def tri_orders(itemsize: int) -> tuple[int, ...]:
    """Leaf orders of ``tri_small`` for an item size: a lane's column of T (``order / 32``
    values, twice over for prefetching) must stay in registers, so 16-byte types stop at 128."""
    return tuple(k for k in TRI_ORDERS if k * itemsize <= 2048)


def tri_columns(order: int, itemsize: int, mult: bool) -> int:
    """Right-hand-side columns per warp of ``tri_small``: as many as fit ~48 registers of data.

    Each lane keeps ``order / 32`` values per column (twice that when multiplying).
    """
    per_column = (order // 32) * (2 if mult else 1) * itemsize // 4
    cols = 4
    while cols > 1 and cols * per_column > 48:
        cols //= 2
    return cols


def instantiations(source: str, orders: tuple[int, ...] = TRI_ORDERS) -> dict[str, list[str]]:
    """Explicit-instantiation declarations of what the executors launch from ``source``.

    Grouped by scalar type, for the CI compile check; ``orders`` picks the leaf orders of
    ``triangular.cu``. For ``batched_small.cu``: every operation at the narrowest group width
    (every code path) and :data:`BATCHED_HEAVY` at the widest (where registers run short).
    """
    out: dict[str, list[str]] = {}
    if source == "batched_small.cu":
        for t in _TYPES:
            out[t] = [f"__global__ void tricov::batched::zero_pivots<{t}>(long long, long long, "
                      "int, const long long*, long long, long long, long long, long long, int*)",
                      f"__global__ void tricov::batched::conjugate<{t}>(long long, long long, "
                      "int, int, int, const long long*, long long, long long, long long, "
                      "long long, const int*)"]
        return out
    if source == "triangular.cu":
        for t, size in _TYPES.items():
            decls = out.setdefault(t, [])
            allowed = tri_orders(size)
            for order in sorted({min(k, allowed[-1]) for k in orders}):
                for mult in (False, True):
                    cols = tri_columns(order, size, mult)
                    for lower in ("false", "true"):
                        decls.append(
                            f"__global__ void tricov::tri_small<{t}, {order}, {cols}, "
                            f"{str(mult).lower()}, {lower}>(int, int, {t}, const {t}*, "
                            f"long long, int, {t}*, long long, int, int)")
            for lower in ("false", "true"):
                for zero in ("false", "true"):
                    decls.append(f"__global__ void tricov::tri_copy<{t}, {lower}, {zero}>(int, "
                                 f"const {t}*, long long, {t}*, long long)")
                decls.append(f"__global__ void tricov::tri_update<{t}, {lower}>(int, {t}, "
                             f"const {t}*, long long, {t}, {t}*, long long, int)")
    return out
