"""Element arithmetic on lane vectors, one source for real and complex data.

The kernels of :mod:`.small` keep ``W`` batch members side by side in a scratch array of the
real type: element ``e`` of a real matrix is the lane vector at ``e * W``; of a complex matrix,
its real parts at ``e * 2W`` and its imaginary parts at ``e * 2W + W`` (split planes, so complex
arithmetic is plain SIMD with no shuffles). A complex *element value* is the pair
``(re, im)`` of lane vectors.

The functions here are written once and specialised by Numba on the type of a *prototype*
scalar ``z`` of the member dtype (``numpy.float64(0)``, ``numpy.complex64(0)``, ...), so the
kernels never test for complex data themselves. Each is a plain Python stub whose Numba
implementation is chosen by ``@overload``; calling them from Python raises.
"""

from __future__ import annotations

import numpy as np
from llvmlite import ir
from numba import carray, types
from numba.extending import intrinsic, overload, register_jitable

from .simd import (
    LaneVector,
    _width,
    vadd,
    vdiv,
    vfill,
    vfma,
    vfnma,
    vload,
    vmul,
    vneg,
    vsplat,
    vstore,
)

__all__ = ["as_array", "eadd", "econj", "efill", "efma", "efmac", "efmca", "efnma", "efnmac",
           "efromre", "eload", "emul", "emulre", "ere", "erecip", "estore", "ewidth", "from_parts",
           "itemsize", "lane_get", "mload", "mstore", "nlanes", "scratch"]


def _stub(name: str):
    def stub(*args):
        raise NotImplementedError(f"{name} runs only inside Numba-compiled kernels")

    stub.__name__ = name
    return stub


def _real_of(z: types.Type) -> types.Float:
    return z.underlying_float if isinstance(z, types.Complex) else z


def _is_cplx_value(v: types.Type) -> bool:
    return isinstance(v, types.BaseTuple) and len(v) == 2 and isinstance(v[0], LaneVector)


nlanes = _stub("nlanes")
ewidth = _stub("ewidth")
scratch = _stub("scratch")
itemsize = _stub("itemsize")


@overload(nlanes)
def _nlanes(z):
    """Lanes ``W`` of the member dtype of ``z``."""
    w = _width(_real_of(z))
    return lambda z: w


@overload(ewidth)
def _ewidth(z):
    """Reals per element in scratch: ``W`` (real) or ``2W`` (complex)."""
    w = _width(_real_of(z)) * (2 if isinstance(z, types.Complex) else 1)
    return lambda z: w


@overload(itemsize)
def _itemsize(z):
    """Bytes of one member element."""
    size = z.bitwidth // 8
    return lambda z: size


@overload(scratch)
def _scratch(addr, size, z):
    """The scratch array of ``size`` reals of the real type of ``z`` at byte address ``addr``
    (memory owned by the caller: no reference counting when passed around)."""
    re = np.float32(0) if _real_of(z).bitwidth == 32 else np.float64(0)
    return lambda addr, size, z: as_array(addr, size, re)


# --------------------------------------------------------------------- scratch access
eload = _stub("eload")
estore = _stub("estore")
lane_get = _stub("lane_get")


@overload(eload)
def _eload(s, off, z):
    """The element value at ``off`` in scratch."""
    if isinstance(z, types.Complex):
        w = _width(_real_of(z))
        return lambda s, off, z: (vload(s, off), vload(s, off + w))
    return lambda s, off, z: vload(s, off)


@overload(estore)
def _estore(s, off, v):
    """Store an element value at ``off`` in scratch."""
    if _is_cplx_value(v):
        w = v[0].count

        def impl(s, off, v):
            vstore(s, off, v[0])
            vstore(s, off + w, v[1])

        return impl
    return lambda s, off, v: vstore(s, off, v)


@overload(lane_get)
def _lane_get(s, off, lane, z):
    """Lane ``lane`` of the element at ``off``, as a scalar of the type of ``z``."""
    if isinstance(z, types.Complex):
        w = _width(_real_of(z))
        ctor = np.complex64 if z.bitwidth == 64 else np.complex128
        return lambda s, off, lane, z: ctor(complex(s[off + lane], s[off + w + lane]))
    return lambda s, off, lane, z: s[off + lane]


# ------------------------------------------------------------------- arithmetic
efnma = _stub("efnma")
efnmac = _stub("efnmac")
efma = _stub("efma")
efmac = _stub("efmac")
efmca = _stub("efmca")
emul = _stub("emul")
eadd = _stub("eadd")
emulre = _stub("emulre")
ere = _stub("ere")
efromre = _stub("efromre")
erecip = _stub("erecip")
efill = _stub("efill")
econj = _stub("econj")


def _fused(conj_a: bool, conj_b: bool, negate: bool):
    """``c -/+ op(a) op(b)`` where op conjugates or not; real data ignore the conjugates."""

    def ov(a, b, c):
        if not _is_cplx_value(a):
            if negate:
                return lambda a, b, c: vfnma(a, b, c)
            return lambda a, b, c: vfma(a, b, c)
        # (ar + i sa ai)(br + i sb bi) = ar br - sa sb ai bi + i (sa ai br + sb ar bi)
        sa, sb = (-1 if conj_a else 1), (-1 if conj_b else 1)
        f_rr = vfnma if negate else vfma                   # c.re -+ ar br
        f_ii = vfma if (negate == (sa * sb == 1)) else vfnma  # c.re -+ (-sa sb) ai bi
        f_ir = vfma if (negate == (sa == -1)) else vfnma   # c.im -+ sa ai br
        f_ri = vfma if (negate == (sb == -1)) else vfnma   # c.im -+ sb ar bi

        def impl(a, b, c):
            re = f_ii(a[1], b[1], f_rr(a[0], b[0], c[0]))
            im = f_ri(a[0], b[1], f_ir(a[1], b[0], c[1]))
            return (re, im)

        return impl

    return ov


overload(efnma)(_fused(False, False, True))
overload(efnmac)(_fused(False, True, True))
overload(efma)(_fused(False, False, False))
overload(efmac)(_fused(False, True, False))
overload(efmca)(_fused(True, False, False))


@overload(emul)
def _emul(a, b):
    """``a * b``."""
    if _is_cplx_value(a):
        def impl(a, b):
            return (vfnma(a[1], b[1], vmul(a[0], b[0])), vfma(a[1], b[0], vmul(a[0], b[1])))

        return impl
    return lambda a, b: vmul(a, b)


@overload(eadd)
def _eadd(a, b):
    """``a + b``."""
    if _is_cplx_value(a):
        return lambda a, b: (vadd(a[0], b[0]), vadd(a[1], b[1]))
    return lambda a, b: vadd(a, b)


@overload(emulre)
def _emulre(a, r):
    """``a * r`` for a real lane vector ``r``."""
    if _is_cplx_value(a):
        return lambda a, r: (vmul(a[0], r), vmul(a[1], r))
    return lambda a, r: vmul(a, r)


@overload(ere)
def _ere(a):
    """The real part, as a real lane vector."""
    if _is_cplx_value(a):
        return lambda a: a[0]
    return lambda a: a


@overload(efromre)
def _efromre(r, z):
    """The element value with real part ``r`` and zero imaginary part."""
    if isinstance(z, types.Complex):
        return lambda r, z: (r, vsplat(r, 0.0))
    return lambda r, z: r


@overload(erecip)
def _erecip(a):
    """``1 / a`` (complex: ``conj(a) / |a|^2``)."""
    if _is_cplx_value(a):
        def impl(a):
            inv = vdiv(vsplat(a[0], 1.0), vfma(a[0], a[0], vmul(a[1], a[1])))
            return (vmul(a[0], inv), vneg(vmul(a[1], inv)))

        return impl
    return lambda a: vdiv(vsplat(a, 1.0), a)


@overload(efill)
def _efill(s, x):
    """The element value with every lane ``x`` (a scalar of the member type) for scratch ``s``."""
    if isinstance(x, types.Complex):
        return lambda s, x: (vfill(s, x.real), vfill(s, x.imag))
    return lambda s, x: vfill(s, x)


@overload(econj)
def _econj(a):
    """The complex conjugate (the identity for real data)."""
    if _is_cplx_value(a):
        return lambda a: (a[0], vneg(a[1]))
    return lambda a: a


# ---------------------------------------------------------------- member memory
from_parts = _stub("from_parts")


@overload(from_parts)
def _from_parts(re, im, z):
    """The scalar of the type of ``z`` with real part ``re`` and imaginary part ``im``."""
    if isinstance(z, types.Complex):
        ctor = np.complex64 if z.bitwidth == 64 else np.complex128
        return lambda re, im, z: ctor(complex(re, im))
    ctor = np.float32 if z.bitwidth == 32 else np.float64
    return lambda re, im, z: ctor(re)


@intrinsic
def _pointer(typingctx, addr, z):
    """The address ``addr`` as a pointer to the type of ``z``."""
    if not isinstance(addr, types.Integer):
        return None

    def codegen(context, builder, sig, args):
        return builder.inttoptr(args[0], context.get_value_type(sig.return_type))

    return types.CPointer(z)(addr, z), codegen


@register_jitable
def as_array(addr, count, z):
    """The ``count`` elements of the type of ``z`` at byte address ``addr``, as a 1-D array."""
    return carray(_pointer(addr, z), count)


@intrinsic
def mload(typingctx, addr, z):
    """The scalar of the type of ``z`` stored at byte address ``addr``."""
    if not isinstance(addr, types.Integer):
        return None

    def codegen(context, builder, sig, args):
        ptr = builder.inttoptr(args[0], ir.PointerType(context.get_data_type(z)))
        return builder.load(ptr, align=1)

    return z(addr, z), codegen


@intrinsic
def mstore(typingctx, addr, x):
    """Store the scalar ``x`` at byte address ``addr``."""
    if not isinstance(addr, types.Integer):
        return None

    def codegen(context, builder, sig, args):
        ptr = builder.inttoptr(args[0], ir.PointerType(context.get_data_type(x)))
        builder.store(args[1], ptr, align=1)
        return context.get_dummy_value()

    return types.void(addr, x), codegen
