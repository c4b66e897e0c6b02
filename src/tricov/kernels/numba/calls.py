"""One BLAS/LAPACK call per batch member, from a parallel Numba loop.

SciPy exports its BLAS and LAPACK as C function pointers with the Fortran calling convention
(every argument by address). :func:`for_members` calls one such routine for every active member
of a batch, in parallel over the batch: argument ``i`` of the call is either a fixed address
(an option letter, a size, a scalar) or a byte offset added to the member's address in one of
the operands' pointer arrays. The function address is an argument, not a constant, so the
compiled loop is cached and shared by every routine and dtype.
"""

from __future__ import annotations

import numpy as np
from llvmlite import ir
from numba import njit, prange, types
from numba.extending import get_cython_function_address, intrinsic

__all__ = ["ARITIES", "FIXED", "INFO", "address", "claim", "for_members", "for_threads"]

#: Argument kinds besides an operand slot (>= 0): a fixed address, or the member's info cell.
FIXED = -1
INFO = -2
#: Numbers of arguments of the routines called (potrf/lauum, trtri, herk, trsm/trmm, gemm).
ARITIES = (5, 6, 10, 11, 13)


def address(name: str) -> int:
    """Address of the BLAS or LAPACK routine ``name`` (e.g. ``'dgemm'``) of SciPy."""
    for module in ("scipy.linalg.cython_blas", "scipy.linalg.cython_lapack"):
        try:
            return get_cython_function_address(module, name)
        except ValueError:
            continue
    raise ValueError(f"SciPy has no BLAS/LAPACK routine named {name!r}")


@intrinsic
def _fcall(typingctx, fn, argv, nargs):
    """Call the routine at address ``fn`` with the ``nargs`` addresses in ``argv``."""
    if not isinstance(nargs, types.IntegerLiteral):
        return None
    count = nargs.literal_value

    def codegen(context, builder, sig, args):
        ptr_t = ir.IntType(8).as_pointer()
        fnty = ir.FunctionType(ir.VoidType(), [ptr_t] * count)
        ary = context.make_array(sig.args[1])(context, builder, args[1])
        values = [builder.inttoptr(builder.load(builder.gep(ary.data, [ir.Constant(
            ir.IntType(64), k)])), ptr_t) for k in range(count)]
        builder.call(builder.inttoptr(args[0], fnty.as_pointer()), values)
        return context.get_dummy_value()

    return types.void(fn, argv, nargs), codegen


@njit(cache=True)
def _call(fn, argv, nargs):
    if nargs == 5:
        _fcall(fn, argv, 5)
    elif nargs == 6:
        _fcall(fn, argv, 6)
    elif nargs == 10:
        _fcall(fn, argv, 10)
    elif nargs == 11:
        _fcall(fn, argv, 11)
    elif nargs == 13:
        _fcall(fn, argv, 13)


@njit(cache=True, parallel=True)
def for_members(fn, args, kinds, ptrs, active, info, threads):
    """Call the routine at ``fn`` once for each member ``b`` with ``active[b]``.

    Parameters
    ----------
    fn : int
        Address of the routine.
    args : int64 array
        Per argument: a fixed address, or a byte offset within a member.
    kinds : int64 array
        Per argument: :data:`FIXED`, :data:`INFO` (the address of ``info[b]``, an int32), or
        the operand slot ``k`` whose member address ``ptrs[k, b]`` the offset is added to.
    ptrs : int64 array (slots, members)
    active : uint8 array (members)
    info : int32 array (members)
        LAPACK's info of each member's call (for routines that return one).
    threads : int
        Number of threads to split the batch over.
    """
    nb = active.shape[0]
    nargs = args.shape[0]
    nt = max(1, min(threads, nb))
    info_base = info.ctypes.data
    for t in prange(nt):
        argv = np.empty(nargs, np.int64)
        for b in range(t * nb // nt, (t + 1) * nb // nt):
            if not active[b]:
                continue
            for k in range(nargs):
                kind = kinds[k]
                if kind == FIXED:
                    argv[k] = args[k]
                elif kind == INFO:
                    argv[k] = info_base + 4 * b
                else:
                    argv[k] = ptrs[kind, b] + args[k]
            _call(fn, argv, nargs)


@intrinsic
def _call_thread(typingctx, fn, t, nt, arg):
    """Call ``void f(int64 t, int64 nt, int64 arg)`` at address ``fn``."""
    if not all(isinstance(x, types.Integer) for x in (fn, t, nt, arg)):
        return None

    def codegen(context, builder, sig, args):
        i64 = ir.IntType(64)
        fnty = ir.FunctionType(ir.VoidType(), [i64, i64, i64])
        values = [context.cast(builder, v, ty, types.int64)
                  for v, ty in zip(args[1:], sig.args[1:], strict=True)]
        builder.call(builder.inttoptr(args[0], fnty.as_pointer()), values)
        return context.get_dummy_value()

    return types.void(fn, t, nt, arg), codegen


@njit(cache=True, parallel=True)
def _in_parallel(fn, arg, nt):
    for t in prange(nt):
        _call_thread(fn, t, nt, arg)


@njit(cache=True)
def _in_caller(fn, arg):
    _call_thread(fn, 0, 1, arg)


def for_threads(fn: int, arg: int, nt: int) -> None:
    """Call ``fn(t, nt, arg)`` for ``t`` in ``range(nt)``, one call per thread.

    ``fn`` is the address of a C callback (a Numba ``cfunc``) taking three int64; each call
    does the ``t``-th share of some work described at address ``arg``. Compiled once for all
    callbacks, so the parallel region never recompiles the work itself. With ``nt == 1`` the
    call runs in the calling thread: no parallel region is entered, so nothing waits for
    Numba's worker threads to wake up (on a busy machine that wait can take milliseconds).
    """
    if nt <= 1:
        _in_caller(fn, arg)
    else:
        _in_parallel(fn, arg, nt)


@intrinsic
def claim(typingctx, addr, count):
    """Atomically add ``count`` to the int64 at byte address ``addr``; its previous value.

    The threads of :func:`for_threads` take their work from one such counter, ``count`` items
    at a time, so a thread that starts late (its core busy with another process) takes less
    work instead of delaying the whole call by its full static share.
    """
    if not (isinstance(addr, types.Integer) and isinstance(count, types.Integer)):
        return None

    def codegen(context, builder, sig, args):
        i64 = ir.IntType(64)
        ptr = builder.inttoptr(args[0], i64.as_pointer())
        value = context.cast(builder, args[1], sig.args[1], types.int64)
        return builder.atomic_rmw("add", ptr, value, "monotonic")

    return types.int64(addr, count), codegen
