"""GPU tests of the replay of repeated dense calls (tricov._calls): every operation replayed on
new data, its failures raised from the replay, and the calls a replay must not take."""

from __future__ import annotations

import numpy as np
import pytest

import tricov as tc
from tricov import _calls, _plans

pytestmark = pytest.mark.gpu

N = 150  # above the leaf sizes set below: the recursions run several levels


@pytest.fixture
def cp():
    return pytest.importorskip("cupy")


@pytest.fixture
def small_leaves():
    tc.set_cuda_graphs(True)  # no plan of an earlier test on the same memory
    for op in ("trsm", "trmm", "syrk", "potrf", "trtri", "lauum"):
        tc.set_leaf_size("gpu", op, np.float64, 48)
    yield
    tc.set_leaf_size("gpu", "trsm", np.float64, None)


def _spd(rng, n):
    x = rng.standard_normal((n, n))
    return x @ x.T / n + np.eye(n)


def _factor(rng, n):
    return np.linalg.cholesky(_spd(rng, n))


def _slow_paths(monkeypatch) -> list[int]:
    """A list that grows by one for every call that takes the slow path."""
    from tricov import _frontend

    seen: list[int] = []
    init = _frontend.Operands.__init__

    def counted(self, *items, **kw):
        seen.append(1)
        init(self, *items, **kw)

    monkeypatch.setattr(_frontend.Operands, "__init__", counted)
    return seen


def _conversions(cp, monkeypatch) -> list[int]:
    """A list that grows by one for every ``cupy.from_dlpack`` call."""
    seen: list[int] = []
    convert = cp.from_dlpack

    def counted(*args, **kw):
        seen.append(1)
        return convert(*args, **kw)

    monkeypatch.setattr(cp, "from_dlpack", counted)
    return seen


def _case(op: str, rng, order: str):
    """(call, expected result, host inputs) of one operation on new data."""
    if op in ("trsm", "trmm"):
        a, b = _factor(rng, N), rng.standard_normal((N, 9))
        want = np.linalg.solve(a, b) if op == "trsm" else a @ b
        return (lambda A, B: getattr(tc, op)(A, B)), want, (a, b)
    if op == "syrk":
        a, c = rng.standard_normal((N, 20)), rng.standard_normal((N, N))
        return (lambda A, C: tc.syrk(A, C, beta=0.5)), np.tril(a @ a.T + 0.5 * c), (a, c)
    if op in ("potrf", "poti"):
        s = _spd(rng, N)
        want = np.linalg.cholesky(s) if op == "potrf" else np.tril(np.linalg.inv(s))
        return getattr(tc, op), want, (s,)
    if op in ("trtri", "lauum", "potri"):
        f = _factor(rng, N)
        want = {"trtri": np.linalg.inv(f), "lauum": np.tril(f.T @ f),
                "potri": np.tril(np.linalg.inv(f @ f.T))}[op]
        return getattr(tc, op), want, (f,)
    s, b = _spd(rng, N), rng.standard_normal((N, 9))
    if op == "potrs":
        return tc.potrs, np.linalg.solve(s, b), (np.linalg.cholesky(s), b)
    return tc.posv, np.linalg.solve(s, b), (s, b)


OPS = ("trsm", "trmm", "syrk", "potrf", "trtri", "lauum", "potri", "poti", "potrs", "posv")


@pytest.mark.parametrize("order", ["F", "C"])
@pytest.mark.parametrize("op", OPS)
def test_replayed_calls_follow_the_data(cp, small_leaves, monkeypatch, op, order):
    """Calls 1 and 2 take the slow path (eager, then captured), later ones replay; every
    result is checked against the host."""
    rng = np.random.default_rng(3)
    slow = _slow_paths(monkeypatch)
    _, _, host = _case(op, rng, order)
    dev = [cp.asarray(np.asarray(h, order=order)) for h in host]
    for trial in range(5):
        call, want, host = _case(op, rng, order)
        for d, h in zip(dev, host, strict=True):
            d[...] = cp.asarray(h)
        call(*dev)
        got = cp.asnumpy(dev[-1] if op in ("trsm", "trmm", "syrk", "potrs", "posv") else dev[0])
        if op in ("potrf", "trtri", "lauum", "potri", "poti", "syrk"):
            got = np.tril(got)
        scale = max(1.0, np.abs(want).max())
        assert np.abs(got - want).max() < 1e-9 * scale, (op, trial)
        assert len(slow) == min(trial + 1, 2), (op, trial)


def test_replayed_failures_raise_as_the_slow_path(cp, small_leaves):
    """Failures raised from replays as from the slow path, with LAPACK's order or index."""
    rng = np.random.default_rng(5)
    S = cp.empty((N, N), order="F")
    s = _spd(rng, N)
    s[100, 100] = -1.0
    for op in (tc.potrf, tc.poti):
        for _ in range(3):
            S[...] = cp.asarray(_spd(rng, N))
            op(S)
        S[...] = cp.asarray(s)
        with pytest.raises(tc.NotPositiveDefiniteError) as err:
            op(S)
        assert err.value.order == 101
        good = _spd(rng, N)  # the failure's status does not outlive its call
        S[...] = cp.asarray(good)
        op(S)
        want = np.linalg.cholesky(good) if op is tc.potrf else np.tril(np.linalg.inv(good))
        assert np.abs(np.tril(cp.asnumpy(S)) - want).max() < 1e-9
    # POTRI: the zero-diagonal test runs before any launch, and L is left unchanged
    for _ in range(3):
        S[...] = cp.asarray(_factor(rng, N))
        tc.potri(S)
    f = _factor(rng, N)
    f[77, 77] = 0.0
    S[...] = cp.asarray(f)
    with pytest.raises(tc.SingularMatrixError) as err:
        tc.potri(S)
    assert err.value.index == 78
    assert np.array_equal(cp.asnumpy(S), f)


def test_calls_not_replayed(cp, small_leaves, monkeypatch):
    rng = np.random.default_rng(9)
    slow = _slow_paths(monkeypatch)
    # complex data whose layouts need a conjugation around the recursion
    a = _factor(rng, N) + 0j
    A = cp.asarray(a, order="C")
    B = cp.empty((N, 4), np.complex128, order="F")
    for _ in range(4):
        b = rng.standard_normal((N, 4)) + 1j * rng.standard_normal((N, 4))
        B[...] = cp.asarray(b)
        tc.trsm(A, B, trans="C")
        assert np.abs(a.conj().T @ cp.asnumpy(B) - b).max() < 1e-9
    assert len(slow) == 4
    # a strided operand copied to a working layout
    slow.clear()
    big = cp.empty((2 * N, N), order="F")
    for _ in range(4):
        s = _spd(rng, N)
        big[::2] = cp.asarray(s)
        tc.potrf(big[::2])
        assert np.abs(np.tril(cp.asnumpy(big[::2])) - np.linalg.cholesky(s)).max() < 1e-9
    assert len(slow) == 4
    # replay off
    slow.clear()
    tc.set_cuda_graphs(False)
    try:
        S = cp.empty((N, N), order="F")
        for _ in range(4):
            S[...] = cp.asarray(_spd(rng, N))
            tc.potrf(S)
        assert len(slow) == 4
    finally:
        tc.set_cuda_graphs(True)


def test_forgotten_plans_and_new_settings_take_the_slow_path(cp, small_leaves, monkeypatch):
    rng = np.random.default_rng(13)
    slow = _slow_paths(monkeypatch)
    a = _factor(rng, N)
    A = cp.asarray(a, order="F")
    B = cp.empty((N, 5), order="F")

    def solve():
        b = rng.standard_normal((N, 5))
        B[...] = cp.asarray(b)
        tc.trsm(A, B)
        assert np.abs(a @ cp.asnumpy(B) - b).max() < 1e-9

    for _ in range(3):
        solve()
    assert len(slow) == 2
    with _plans._lock:
        _plans._plans.clear()  # as if the plans had been dropped to make room
    solve()
    assert len(slow) == 3 and not _calls._kept
    tc.set_leaf_size("gpu", "trsm", np.float64, 64)  # another key: the slow path, correct
    solve()
    assert len(slow) == 4


def test_a_plan_dropped_before_its_replay_is_not_captured_again(cp, small_leaves, monkeypatch):
    """Two operands alternating where the budget keeps one plan: the first plan to go before
    its replay makes its key run eagerly from then on, so captures (dearer than eager runs)
    stop at two, and every result is right."""
    monkeypatch.setattr(_plans, "WORKSPACE", 0)  # a plan with workspace pushes the others out
    captures = []
    capture = _plans._capture
    monkeypatch.setattr(_plans, "_capture", lambda *args: captures.append(1) or capture(*args))
    rng = np.random.default_rng(5)
    a = _factor(rng, N)
    A = cp.asarray(a, order="F")
    stacks = [cp.empty((N, 5), order="F") for _ in range(2)]
    for step in range(10):
        b = rng.standard_normal((N, 5))
        B = stacks[step % 2]
        B[...] = cp.asarray(b)
        tc.trsm(A, B)
        assert np.abs(a @ cp.asnumpy(B) - b).max() < 1e-9
    assert len(captures) == 2 and len(_plans._futile) == 1


def test_no_replay_into_a_callers_capture(cp, small_leaves):
    """While the caller's stream captures a graph of its own, no call has a replay key."""
    A = cp.eye(N, order="F")
    B = cp.ones((N, 3), order="F")
    assert _calls.key("trsm", (A, B), ()) is not None
    stream = cp.cuda.Stream(non_blocking=True)
    with stream:
        stream.begin_capture()
        try:
            assert _calls.key("trsm", (A, B), ()) is None
        finally:
            stream.end_capture()


@pytest.mark.parametrize("name", ["potrf", "trtri", "potri", "poti", "posv", "batched.potrf",
                                  "batched.posv", "batched.potri"])
def test_checked_calls_refuse_a_callers_capture(cp, small_leaves, name):
    """A call that reads its status on the host at its end raises RuntimeError inside the
    caller's stream capture, before any work: the capture stays valid (it ends without error)
    and the operands are unchanged."""
    rng = np.random.default_rng(7)
    s = _spd(rng, N)
    a0 = cp.asfortranarray(cp.asarray(np.linalg.cholesky(s) if name.endswith("potri") else s))
    if name.startswith("batched"):
        a0 = cp.stack([a0, a0])
    a = a0.copy()
    b = cp.ones(a.shape[:-1] + (2,))
    fn = getattr(tc.batched, name[8:]) if name.startswith("batched") else getattr(tc, name)
    args = (a, b) if name.endswith("posv") else (a,)
    stream = cp.cuda.Stream(non_blocking=True)
    with stream:
        stream.begin_capture()
        try:
            with pytest.raises(RuntimeError, match="capture"):
                fn(*args)
        finally:
            stream.end_capture()
    assert (a == a0).all() and (b == 1).all()


def test_unchecked_calls_run_in_a_callers_capture(cp, small_leaves):
    """TRSM, TRMM, SYRK, POTRS and LAUUM, and batched POTRF with check=False (its info left on
    the device), record into the caller's graph: replayed on new data they give the right
    results."""
    rng = np.random.default_rng(8)
    s = _spd(rng, N)
    low = np.linalg.cholesky(s)
    L = cp.asfortranarray(cp.asarray(low))
    B = cp.asfortranarray(cp.asarray(rng.standard_normal((N, 3))))
    X = cp.empty_like(B)
    C = cp.zeros((N, N), order="F")
    W = cp.empty_like(B)
    U = cp.empty_like(L)
    S = cp.stack([cp.asarray(s)] * 3)
    S[1, 5, 5] = -1.0
    F = cp.empty_like(S)
    stream = cp.cuda.Stream(non_blocking=True)
    with stream:
        cp.copyto(X, B)
        cp.copyto(F, S)
        tc.potrs(L, X)
        tc.syrk(L, C)
        cp.copyto(W, B)
        tc.trmm(L, W)
        cp.copyto(U, L)
        tc.lauum(U)
        tc.batched.potrf(F, check=False)  # warm: compiled, workspaces in the pool
        stream.synchronize()
        stream.begin_capture()
        cp.copyto(X, B)
        tc.potrs(L, X)
        tc.trsm(L, X, trans="T", alpha=2.0)
        tc.syrk(L, C, alpha=1.0, beta=0.0)
        cp.copyto(W, B)
        tc.trmm(L, W, side="L", trans="N")
        cp.copyto(U, L)
        tc.lauum(U)
        cp.copyto(F, S)
        info = tc.batched.potrf(F, check=False)
        graph = stream.end_capture()
        for out in (X, C, W, U, F):
            out.fill(0)
        graph.launch(stream=stream)
        stream.synchronize()
    x = np.linalg.solve(low.T, 2.0 * np.linalg.solve(s, cp.asnumpy(B)))
    assert np.allclose(cp.asnumpy(X), x, rtol=1e-10, atol=1e-10)
    assert np.allclose(np.tril(cp.asnumpy(C)), np.tril(low @ low.T), rtol=1e-12, atol=1e-12)
    assert np.allclose(cp.asnumpy(W), low @ cp.asnumpy(B), rtol=1e-12, atol=1e-12)
    assert np.allclose(np.tril(cp.asnumpy(U)), np.tril(low.T @ low), rtol=1e-12, atol=1e-12)
    assert cp.asnumpy(info).tolist() == [0, 6, 0]
    for k in (0, 2):
        assert np.allclose(np.tril(cp.asnumpy(F[k])), low, rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("dt", [np.float32, np.float64, np.complex64, np.complex128])
def test_zero_pivot_on_any_strides(cp, dt):
    """The one-kernel zero-diagonal test against NumPy's, on views of every layout."""
    from tricov.backends.cuda import zero_pivot

    rng = np.random.default_rng(21)
    big = rng.standard_normal((90, 80)).astype(dt) + 3
    if np.dtype(dt).kind == "c":
        big[10, 10] = 1e-30j  # a zero real part alone is not a zero
    for where in (None, 33, 0, 39):
        host = big.copy()
        if where is not None:
            host[2 * where, where] = 0  # on the diagonal of the strided view below
            host[5 + where, 7 + where] = 0  # on that of the sub-block
            host[where, where] = 0
        dev = cp.asarray(host)
        for view, ref in ((dev[:40, :40], host[:40, :40]), (dev[::2, :40], host[::2, :40]),
                          (dev[5:45, 7:47], host[5:45, 7:47]),
                          (cp.asfortranarray(dev[:40, :40]), host[:40, :40]),
                          (dev[:40, :40].T, host[:40, :40].T), (dev[:1, :1], host[:1, :1]),
                          (dev[:0, :0], host[:0, :0])):
            zeros = np.flatnonzero(np.diagonal(ref) == 0)
            assert zero_pivot(view) == (int(zeros[0]) + 1 if zeros.size else 0), (where, view)


def test_torch_tensors_replay(cp, small_leaves, monkeypatch):
    """PyTorch tensors (DLPack) replay as the CuPy arrays over their memory, results in the
    caller's tensors; POTRI's zero-diagonal test runs on them from a replay."""
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("torch without CUDA")
    rng = np.random.default_rng(23)
    slow = _slow_paths(monkeypatch)
    converted = _conversions(cp, monkeypatch)
    t_a = torch.empty((N, N), dtype=torch.float64, device="cuda")
    t_b = torch.empty((N, 6), dtype=torch.float64, device="cuda")
    for trial in range(4):
        a, b = _factor(rng, N), rng.standard_normal((N, 6))
        t_a.copy_(torch.from_numpy(a)), t_b.copy_(torch.from_numpy(b))
        converted.clear()
        assert tc.trsm(t_a, t_b) is t_b
        assert np.abs(a @ t_b.cpu().numpy() - b).max() < 1e-9, trial
        assert len(slow) == min(trial + 1, 2), trial
        assert len(converted) == (2 if trial < 2 else 0), trial  # keyed from torch's attributes
    slow.clear()
    for trial in range(4):
        f = _factor(rng, N)
        if trial == 3:
            f[40, 40] = 0.0
        t_a.copy_(torch.from_numpy(f))
        if trial < 3:
            tc.potri(t_a)
            got = np.tril(t_a.cpu().numpy())
            assert np.abs(got - np.tril(np.linalg.inv(f @ f.T))).max() < 1e-9, trial
        else:
            with pytest.raises(tc.SingularMatrixError) as err:
                tc.potri(t_a)
            assert err.value.index == 41
    assert len(slow) == 2


def test_torch_on_another_stream_is_converted(cp, small_leaves, monkeypatch):
    """With torch on a stream of its own, the key converts each tensor as the slow path does
    (cupy.from_dlpack, which orders torch's stream before CuPy's); replays stay correct."""
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("torch without CUDA")
    rng = np.random.default_rng(29)
    converted = _conversions(cp, monkeypatch)
    t_a = torch.empty((N, N), dtype=torch.float64, device="cuda")
    t_b = torch.empty((N, 6), dtype=torch.float64, device="cuda")
    side = torch.cuda.Stream()
    for trial in range(4):
        a, b = _factor(rng, N), rng.standard_normal((N, 6))
        with torch.cuda.stream(side):
            t_a.copy_(torch.from_numpy(a)), t_b.copy_(torch.from_numpy(b))
            converted.clear()
            tc.trsm(t_a, t_b)
            assert len(converted) >= 2, trial
        torch.cuda.synchronize()
        assert np.abs(a @ t_b.cpu().numpy() - b).max() < 1e-9, trial


def test_plans_on_two_streams_run_one_after_the_other(cp, small_leaves):
    """Plans share the capture handle's cuBLAS workspace: a plan launched on a second stream
    waits for the first stream's queue (here a kernel that spins for a second), and every
    result of plans alternating between two streams is right."""
    spin = cp.RawKernel(r"""
    extern "C" __global__ void spin(long long cycles) {
        long long start = clock64();
        while (clock64() - start < cycles) {}
    }""", "spin")
    rng = np.random.default_rng(11)
    a = [_factor(rng, N) for _ in range(2)]
    A = [cp.asarray(x, order="F") for x in a]
    B = [cp.empty((N, 5), order="F") for _ in range(2)]
    streams = [cp.cuda.Stream(non_blocking=True) for _ in range(2)]
    for _ in range(8):
        b = [rng.standard_normal((N, 5)) for _ in range(2)]
        for i in range(2):
            with streams[i]:
                B[i].set(np.asfortranarray(b[i]), stream=streams[i])
                tc.trsm(A[i], B[i])
        for i in range(2):
            streams[i].synchronize()
            assert np.abs(a[i] @ cp.asnumpy(B[i]) - b[i]).max() < 1e-9
    assert _plans._plans and _calls._kept  # the later steps replayed
    with streams[0]:
        spin((1,), (1,), (np.int64(2_000_000_000),))  # about a second
        tc.trsm(A[0], B[0])
    with streams[1]:
        tc.trsm(A[1], B[1])
        done = streams[1].record()
    assert not done.done  # the second stream waits for the spinning one
    streams[1].synchronize()
    assert streams[0].done
