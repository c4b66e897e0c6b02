"""Lane vectors for Numba: a few LLVM vector operations the auto-vectorizer cannot be trusted with.

A *lane vector* (:class:`LaneVector`) holds one value of a real type ``T`` (float32 or float64)
for each of ``W`` batch members processed side by side; ``W * sizeof(T)`` is
:data:`LANE_BYTES` (one AVX-512 register, two AVX2 ones). Its LLVM representation is the vector
``<W x T>``, so loop-carried accumulators stay in vector registers and every operation below is
one SIMD instruction whatever the surrounding loops look like.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.core.datamodel import models
from numba.extending import intrinsic, register_model

__all__ = ["LANE_BYTES", "LaneVector", "lanes", "prefetch", "tload", "tstore", "vadd", "vdiv",
           "vfill", "vfma", "vfnma", "vload", "vmul", "vneg", "vnotpos", "vsplat", "vsqrt",
           "vstore"]

#: Bytes of one lane vector.
LANE_BYTES = 64


def lanes(dtype: np.dtype) -> int:
    """Number of lanes for a real dtype (float32: 16, float64: 8)."""
    return LANE_BYTES // np.dtype(dtype).itemsize


def _width(real: types.Float) -> int:
    return LANE_BYTES // (real.bitwidth // 8)


class LaneVector(types.Type):
    """Numba type of a lane vector: ``W`` values of a real type, an LLVM ``<W x T>``."""

    def __init__(self, dtype: types.Float) -> None:
        self.dtype = dtype
        self.count = _width(dtype)
        super().__init__(name=f"LaneVector({dtype} x {self.count})")


@register_model(LaneVector)
class _LaneModel(models.PrimitiveModel):
    def __init__(self, dmm, fe_type: LaneVector) -> None:
        element = dmm.lookup(fe_type.dtype).get_value_type()
        super().__init__(dmm, fe_type, ir.VectorType(element, fe_type.count))


def _is_real_array(arr: types.Type) -> bool:
    return isinstance(arr, types.Array) and isinstance(arr.dtype, types.Float)


def _pointer(context, builder, arr_type, arr, off, lane_type: LaneVector):
    ary = context.make_array(arr_type)(context, builder, arr)
    ptr = builder.gep(ary.data, [off])
    return builder.bitcast(ptr, ir.PointerType(context.get_value_type(lane_type)))


@intrinsic
def vload(typingctx, arr, off):
    """The lane vector ``arr[off:off+W]`` of a contiguous 1-D real array."""
    if not _is_real_array(arr):
        return None
    lane = LaneVector(arr.dtype)

    def codegen(context, builder, sig, args):
        return builder.load(_pointer(context, builder, sig.args[0], args[0], args[1], lane),
                            align=1)

    return lane(arr, off), codegen


@intrinsic
def vstore(typingctx, arr, off, value):
    """Store the lane vector ``value`` into ``arr[off:off+W]``."""
    if not (_is_real_array(arr) and value == LaneVector(arr.dtype)):
        return None

    def codegen(context, builder, sig, args):
        builder.store(args[2], _pointer(context, builder, sig.args[0], args[0], args[1], value),
                      align=1)
        return context.get_dummy_value()

    return types.void(arr, off, value), codegen


def _splat(context, builder, lane: LaneVector, value):
    vec = ir.Constant(context.get_value_type(lane), ir.Undefined)
    for i in range(lane.count):
        vec = builder.insert_element(vec, value, cgutils.int32_t(i))
    return vec


@intrinsic
def vfill(typingctx, arr, x):
    """A lane vector of the element type of the real array ``arr``, every lane ``x``."""
    if not (_is_real_array(arr) and isinstance(x, (types.Float, types.Integer))):
        return None
    lane = LaneVector(arr.dtype)

    def codegen(context, builder, sig, args):
        return _splat(context, builder, lane,
                      context.cast(builder, args[1], sig.args[1], arr.dtype))

    return lane(arr, x), codegen


@intrinsic
def vsplat(typingctx, like, x):
    """A lane vector of the type of ``like`` with every lane ``x``."""
    if not (isinstance(like, LaneVector) and isinstance(x, (types.Float, types.Integer))):
        return None

    def codegen(context, builder, sig, args):
        return _splat(context, builder, like, context.cast(builder, args[1], sig.args[1],
                                                           like.dtype))

    return like(like, x), codegen


def _lanewise(nargs: int, emit: Callable, doc: str):
    """An intrinsic over ``nargs`` lane vectors of one type, built by ``emit(builder, vecs)``."""

    def check(args):
        return all(isinstance(a, LaneVector) and a == args[0] for a in args)

    def codegen(context, builder, sig, llargs):
        return emit(builder, list(llargs))

    if nargs == 1:
        def typer(typingctx, a):
            return (a(a), codegen) if check([a]) else None
    elif nargs == 2:
        def typer(typingctx, a, b):
            return (a(a, b), codegen) if check([a, b]) else None
    else:
        def typer(typingctx, a, b, c):
            return (a(a, b, c), codegen) if check([a, b, c]) else None
    typer.__doc__ = doc
    return intrinsic(typer)


def _call_llvm(name: str, builder, vecs):
    vt = vecs[0].type
    suffix = f"v{vt.count}{'f64' if isinstance(vt.element, ir.DoubleType) else 'f32'}"
    fn = cgutils.get_or_insert_function(builder.module, ir.FunctionType(vt, [vt] * len(vecs)),
                                        f"llvm.{name}.{suffix}")
    return builder.call(fn, vecs)


vadd = _lanewise(2, lambda b, v: b.fadd(v[0], v[1]), "``a + b`` lane by lane.")
vmul = _lanewise(2, lambda b, v: b.fmul(v[0], v[1]), "``a * b`` lane by lane.")
vdiv = _lanewise(2, lambda b, v: b.fdiv(v[0], v[1]), "``a / b`` lane by lane.")
vneg = _lanewise(1, lambda b, v: b.fneg(v[0]), "``-a`` lane by lane.")
vsqrt = _lanewise(1, lambda b, v: _call_llvm("sqrt", b, v), "Square root lane by lane.")
vfma = _lanewise(3, lambda b, v: _call_llvm("fma", b, v), "``a * b + c`` with one rounding.")
vfnma = _lanewise(3, lambda b, v: _call_llvm("fma", b, [b.fneg(v[0]), v[1], v[2]]),
              "``c - a * b`` with one rounding.")


@intrinsic
def vnotpos(typingctx, a):
    """Bit mask (an int64) of the lanes of ``a`` that are not positive: ``<= 0`` or NaN."""
    if not isinstance(a, LaneVector):
        return None

    def codegen(context, builder, sig, args):
        vt = args[0].type
        bits = builder.fcmp_unordered("<=", args[0], ir.Constant(vt, [0.0] * vt.count))
        return builder.zext(builder.bitcast(bits, ir.IntType(vt.count)), ir.IntType(64))

    return types.int64(a), codegen


# ----------------------------------------------------------------- lane transposes
def _transpose(builder, rows: list) -> list:
    """Transpose ``W`` vectors of ``W`` values: output ``t`` holds element ``t`` of every row.

    ``log2(W)`` butterfly stages; at stage ``b`` rows ``i`` and ``i + b`` (bit ``b`` of ``i``
    clear) exchange their off-diagonal ``b``-blocks, one ``shufflevector`` each.
    """
    w = len(rows)
    rows = list(rows)
    b = 1
    while b < w:
        lo = ir.Constant(ir.VectorType(ir.IntType(32), w),
                         [i if i & b == 0 else w + i - b for i in range(w)])
        hi = ir.Constant(ir.VectorType(ir.IntType(32), w),
                         [i + b if i & b == 0 else w + i for i in range(w)])
        for i in range(w):
            if i & b == 0:
                x, y = rows[i], rows[i + b]
                rows[i] = builder.shuffle_vector(x, y, lo)
                rows[i + b] = builder.shuffle_vector(x, y, hi)
        b *= 2
    return rows


def _masked(builder, name: str, vt: ir.VectorType, args: list):
    suffix = f"v{vt.count}{'f64' if isinstance(vt.element, ir.DoubleType) else 'f32'}.p0"
    mask_t = ir.VectorType(ir.IntType(1), vt.count)
    if name == "load":
        fnty = ir.FunctionType(vt, [args[0].type, ir.IntType(32), mask_t, vt])
    else:
        fnty = ir.FunctionType(ir.VoidType(), [vt, args[1].type, ir.IntType(32), mask_t])
    fn = cgutils.get_or_insert_function(builder.module, fnty, f"llvm.masked.{name}.{suffix}")
    return builder.call(fn, args)


def _prefix_mask(builder, w: int, count):
    """``<w x i1>``: lane ``k`` set where ``k < count``."""
    idx = ir.Constant(ir.VectorType(ir.IntType(64), w), list(range(w)))
    cnt = _splat_int(builder, w, count)
    return builder.icmp_unsigned("<", idx, cnt)


def _splat_int(builder, w: int, value):
    vec = ir.Constant(ir.VectorType(ir.IntType(64), w), ir.Undefined)
    for k in range(w):
        vec = builder.insert_element(vec, value, cgutils.int32_t(k))
    return vec


def _scratch_ptrs(context, builder, arr_type, arr, dst, step, epr: int, lane: LaneVector):
    """Pointers to the ``W`` lane vectors of a block in scratch: vector ``t`` (real ``t`` of
    every member) belongs to element ``t // epr`` (``epr`` reals per element), at
    ``dst + (t // epr) * step + (t % epr) * W`` reals."""
    ary = context.make_array(arr_type)(context, builder, arr)
    vptr = ir.PointerType(context.get_value_type(lane))
    out = []
    for t in range(lane.count):
        off = builder.add(builder.add(dst, builder.mul(step, ir.Constant(step.type, t // epr))),
                          ir.Constant(dst.type, (t % epr) * lane.count))
        out.append(builder.bitcast(builder.gep(ary.data, [off]), vptr))
    return out


def _member_ptr(context, builder, addrs_type, addrs, first, k, off, vt):
    ary = context.make_array(addrs_type)(context, builder, addrs)
    idx = builder.add(first, ir.Constant(first.type, k))
    addr = builder.load(builder.gep(ary.data, [idx]))
    return builder.inttoptr(builder.add(addr, off), ir.PointerType(vt))


def _check_block(s, z, addrs) -> bool:
    return (_is_real_array(s) and isinstance(z, (types.Float, types.Complex))
            and isinstance(addrs, types.Array))


def _reals_per_element(z) -> int:
    return 2 if isinstance(z, types.Complex) else 1


def _conj_part(builder, vec, t: int, epr: int, conj):
    """``-vec`` if it holds imaginary parts (``t`` odd for complex) and ``conj`` is set."""
    if epr == 1 or t % 2 == 0:
        return vec
    flag = conj if conj.type == ir.IntType(1) else builder.icmp_unsigned(
        "!=", conj, ir.Constant(conj.type, 0))
    return builder.select(flag, builder.fneg(vec), vec)


@intrinsic
def tload(typingctx, s, dst, step, z, conj, addrs, first, nl, off, count):
    """Load a block of ``count <= W`` reals of ``W`` members into scratch, transposed.

    Member ``first + k`` (``k < nl``) is read at ``addrs[first + k] + off`` bytes into lane
    ``k``; after the register transpose, vector ``t < count`` (real ``t`` of every member) is
    stored at ``s[dst + (t // epr) * step + (t % epr) * W]``: element ``t // epr`` of a run of
    elements ``step`` reals apart, its imaginary plane ``W`` reals after its real one for
    complex data (``epr = 2`` reals per element when ``z``, a zero of the member dtype, is
    complex), negated if ``conj``. Lanes ``k >= nl`` get zeros. Memory outside the block is
    not read.
    """
    if not _check_block(s, z, addrs):
        return None
    lane = LaneVector(s.dtype)
    e = _reals_per_element(z)

    def codegen(context, builder, sig, args):
        sa, ds, st, _, cj, ad, fi, nlv, of, cnt = args
        vt = context.get_value_type(lane)
        w = lane.count
        zero = ir.Constant(vt, [0.0] * w)
        mask = _prefix_mask(builder, w, cnt)
        full = builder.icmp_unsigned("==", cnt, ir.Constant(cnt.type, w))
        rows = []
        for k in range(w):
            active = builder.icmp_signed(">", nlv, ir.Constant(nlv.type, k))
            with builder.if_else(active) as (then, otherwise):
                with then:
                    ptr = _member_ptr(context, builder, sig.args[5], ad, fi, k, of, vt)
                    with builder.if_else(full) as (all_, part):
                        with all_:
                            v_all = builder.load(ptr, align=1)
                            b_all = builder.block
                        with part:
                            v_part = _masked(builder, "load", vt,
                                             [ptr, ir.Constant(ir.IntType(32), 1), mask, zero])
                            b_part = builder.block
                    loaded = builder.phi(vt)
                    loaded.add_incoming(v_all, b_all)
                    loaded.add_incoming(v_part, b_part)
                    b_then = builder.block
                with otherwise:
                    b_else = builder.block
            row = builder.phi(vt)
            row.add_incoming(loaded, b_then)
            row.add_incoming(zero, b_else)
            rows.append(row)
        ptrs = _scratch_ptrs(context, builder, sig.args[0], sa, ds, st, e, lane)
        for t, vec in enumerate(_transpose(builder, rows)):
            inside = builder.icmp_signed(">", cnt, ir.Constant(cnt.type, t))
            with builder.if_then(inside):
                builder.store(_conj_part(builder, vec, t, e, cj), ptrs[t], align=1)
        return context.get_dummy_value()

    return types.void(s, dst, step, z, conj, addrs, first, nl, off, count), codegen


@intrinsic
def tstore(typingctx, s, src, step, z, conj, addrs, first, lanes, off, keep):
    """The inverse of :func:`tload`, for the reals set in the bit mask ``keep``.

    Vector ``t`` (bit ``t`` of ``keep`` set) is read at ``s[src + (t // epr) * step + (t % epr)
    * W]`` (negated if it is an imaginary plane and ``conj``); after the transpose, member
    ``first + k`` gets its reals ``t`` at ``addrs[first + k] + off + t * sizeof(T)`` bytes, for
    each bit ``k`` set in ``lanes`` (a masked store: memory outside the kept reals is not
    touched).
    """
    if not _check_block(s, z, addrs):
        return None
    lane = LaneVector(s.dtype)
    e = _reals_per_element(z)

    def codegen(context, builder, sig, args):
        sa, sr, st, _, cj, ad, fi, lanes_, of, kp = args
        vt = context.get_value_type(lane)
        w = lane.count
        rows = []
        for t, ptr in enumerate(_scratch_ptrs(context, builder, sig.args[0], sa, sr, st, e,
                                              lane)):
            bit = builder.and_(kp, ir.Constant(kp.type, 1 << t))
            inside = builder.icmp_unsigned("!=", bit, ir.Constant(kp.type, 0))
            with builder.if_else(inside) as (then, otherwise):
                with then:
                    v_in = _conj_part(builder, builder.load(ptr, align=1), t, e, cj)
                    b_in = builder.block
                with otherwise:
                    b_out = builder.block
            row = builder.phi(vt)
            row.add_incoming(v_in, b_in)
            row.add_incoming(ir.Constant(vt, [0.0] * w), b_out)
            rows.append(row)
        rows = _transpose(builder, rows)
        mask = builder.bitcast(builder.trunc(kp, ir.IntType(w)), ir.VectorType(ir.IntType(1), w))
        for k in range(w):
            bit = builder.and_(lanes_, ir.Constant(lanes_.type, 1 << k))
            active = builder.icmp_unsigned("!=", bit, ir.Constant(lanes_.type, 0))
            with builder.if_then(active):
                ptr = _member_ptr(context, builder, sig.args[5], ad, fi, k, of, vt)
                _masked(builder, "store", vt, [rows[k], ptr, ir.Constant(ir.IntType(32), 1), mask])
        return context.get_dummy_value()

    return types.void(s, src, step, z, conj, addrs, first, lanes, off, keep), codegen


@intrinsic
def prefetch(typingctx, addr):
    """Ask for the cache line at byte address ``addr`` (an int64) to be read into the second
    level cache (a hint: no fault, whatever the address)."""
    if not isinstance(addr, types.Integer):
        return None

    def codegen(context, builder, sig, args):
        i8p, i32 = ir.IntType(8).as_pointer(), ir.IntType(32)
        fnty = ir.FunctionType(ir.VoidType(), [i8p, i32, i32, i32])
        fn = cgutils.get_or_insert_function(builder.module, fnty, "llvm.prefetch.p0")
        # read (0), locality 2 (prefetcht1: L2 and beyond), data cache (1)
        builder.call(fn, [builder.inttoptr(args[0], i8p), ir.Constant(i32, 0),
                          ir.Constant(i32, 2), ir.Constant(i32, 1)])
        return context.get_dummy_value()

    return types.void(addr), codegen
