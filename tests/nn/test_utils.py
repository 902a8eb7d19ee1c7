"""tgrad.nn.utils against torch.nn.utils: clip_grad_norm_ for every kind of norm (one launch for the
norm over all gradients and one for the scaling), error_if_nonfinite, clip_grad_value_,
get_total_norm, parameters_to_vector / vector_to_parameters (with gradients), and the
ParameterList / ParameterDict containers (state-dict keys, repr, errors)."""
import math
import warnings

import pytest
import torch
import triton
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource

import tgrad
import tgrad.nn as nn
from support.launches import record_launches
from support.reference import uniform64
from support.torch_audit import AtenRecorder
from tgrad.kernels.runtime.launch import count_launches, launch_observers
from tgrad.kernels.runtime.target import as_cuda

SHAPES = [(5, 3), (7,), (), (1, 4), (0,)]


def pairs(dtype=torch.float64, seed=0, scale=1.0):
    """(torch params, tgrad params) with equal values and gradients; the third one has none, the
    last gradient is a transposed (non-contiguous) view."""
    tp, gp = [], []
    for i, shape in enumerate(SHAPES + [(3, 4)]):
        a = uniform64(shape, -1, 1, seed + i).to(dtype)
        t, g = a.clone().requires_grad_(), tgrad.from_torch(a.clone()).requires_grad_()
        if i != 2:
            grad = (uniform64(shape, -2, 2, seed + 50 + i) * scale).to(dtype)
            if i == len(SHAPES):
                grad = grad.t().contiguous().t()  # non-contiguous strides on both sides
            t.grad, g.grad = grad.clone(), tgrad.from_torch(grad.clone())
        tp.append(t)
        gp.append(g)
    return tp, gp


def assert_grads(tp, gp, rtol, atol):
    for a, b in zip(tp, gp):
        if a.grad is None:
            assert b.grad is None
            continue
        torch.testing.assert_close(b.grad.torch(), a.grad, rtol=rtol, atol=atol, equal_nan=True)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=str)
@pytest.mark.parametrize("norm_type", [2, 1, 2.0, math.inf, -math.inf, 0, 3.5, 0.5, -1.0], ids=str)
@pytest.mark.parametrize("max_norm", [0.7, 1e4], ids=["clips", "no-clip"])
def test_clip_grad_norm_matches_torch(norm_type, dtype, max_norm):
    tp, gp = pairs(dtype)
    if norm_type < 0 or norm_type == math.inf:  # no identity: PyTorch refuses an empty gradient
        with pytest.raises(RuntimeError) as ref:
            torch.nn.utils.clip_grad_norm_(tp, max_norm, norm_type)
        with pytest.raises(RuntimeError) as got:
            nn.utils.clip_grad_norm_(gp, max_norm, norm_type)
        assert str(got.value) == str(ref.value)
        tp, gp = [p for p in tp if p.numel()], [p for p in gp if p.numel()]
    ref = torch.nn.utils.clip_grad_norm_(tp, max_norm, norm_type)
    with count_launches() as c:
        got = nn.utils.clip_grad_norm_(gp, max_norm, norm_type, foreach=True)
    assert sum(c.values()) == 2  # the norm over all gradients, then the scaling
    tol = dict(rtol=1e-12, atol=1e-14) if dtype is torch.float64 else dict(rtol=2e-6, atol=1e-7)
    assert got.dtype.torch == ref.dtype and got.shape == ()
    torch.testing.assert_close(got.torch(), ref, **tol)
    assert_grads(tp, gp, **tol)


def test_mixed_dtypes_and_a_single_tensor():
    tp, gp = pairs(torch.float32)
    tgrad_, ggrad = tp[0].grad.double(), gp[0].grad.double()
    tp[0].grad = gp[0].grad = None
    tp[0].data, gp[0].data = tp[0].data.double(), gp[0].data.double()
    tp[0].grad, gp[0].grad = tgrad_, ggrad
    ref = torch.nn.utils.clip_grad_norm_(tp, 0.5)
    got = nn.utils.clip_grad_norm_(gp, 0.5)
    assert got.dtype is tgrad.float64
    torch.testing.assert_close(got.torch(), ref, rtol=1e-6, atol=1e-7)
    assert_grads(tp, gp, rtol=2e-6, atol=1e-7)
    # one tensor (not a list), and max_norm as an int
    ref = torch.nn.utils.clip_grad_norm_(tp[1], 1)
    got = nn.utils.clip_grad_norm_(gp[1], 1)
    torch.testing.assert_close(got.torch(), ref, rtol=2e-6, atol=1e-7)
    assert_grads(tp[1:2], gp[1:2], rtol=2e-6, atol=1e-7)


def test_nonfinite_norms():
    tp, gp = pairs()
    tp[0].grad[1, 1], gp[0].grad[1, 1] = math.inf, math.inf
    with pytest.raises(RuntimeError) as ref:
        torch.nn.utils.clip_grad_norm_(tp, 1.0, error_if_nonfinite=True)
    before = [None if p.grad is None else p.grad.torch().clone() for p in gp]
    with pytest.raises(RuntimeError) as got:
        nn.utils.clip_grad_norm_(gp, 1.0, error_if_nonfinite=True)
    assert str(got.value) == str(ref.value)
    for b, p in zip(before, gp):  # nothing was scaled
        assert b is None or torch.equal(b, p.grad.torch())
    # without the check, the non-finite norm scales as PyTorch's does (NaN/zero gradients)
    ref = torch.nn.utils.clip_grad_norm_(tp, 1.0)
    got = nn.utils.clip_grad_norm_(gp, 1.0)
    assert math.isinf(got.item()) and math.isinf(ref.item())
    assert_grads(tp, gp, rtol=0, atol=0)
    tp, gp = pairs()
    tp, gp = tp[:-2] + tp[-1:], gp[:-2] + gp[-1:]  # no empty gradient: the inf norm has no identity
    tp[1].grad[0], gp[1].grad[0] = math.nan, math.nan
    ref = torch.nn.utils.clip_grad_norm_(tp, 1.0, norm_type=math.inf)
    got = nn.utils.clip_grad_norm_(gp, 1.0, norm_type=math.inf)
    assert math.isnan(got.item()) == math.isnan(ref.item())
    assert_grads(tp, gp, rtol=0, atol=0)


def test_no_gradients_and_empty_generator():
    p = tgrad.ones(3, requires_grad=True)
    assert nn.utils.clip_grad_norm_([p], 1.0).item() == torch.nn.utils.clip_grad_norm_(
        [torch.ones(3, requires_grad=True)], 1.0).item() == 0.0
    with pytest.warns(UserWarning, match="^`parameters` is an empty generator, no gradient clipping will occur.$"):
        nn.utils.clip_grad_norm_((q for q in []), 1.0)
    with pytest.warns(FutureWarning, match="clip_grad_norm` is now deprecated"):
        nn.utils.clip_grad_norm([p], 1.0)


def test_get_total_norm_configured_as_on_a_gpu():
    """One program per row on a GPU, and with no rows to scale no program ran, so the total was
    never stored (uninitialised memory came back); found by running the suite --as-cuda."""
    tp, gp = pairs()
    tgrads = [p.grad for p in tp if p.grad is not None and p.numel()]
    ggrads = [p.grad for p in gp if p.grad is not None and p.numel()]
    with as_cuda():
        for norm_type in (2.0, math.inf, 1.5):
            got = nn.utils.get_total_norm(ggrads, norm_type)
            torch.testing.assert_close(got.torch(), torch.nn.utils.get_total_norm(tgrads, norm_type), rtol=1e-12, atol=0)


def test_get_total_norm_and_clip_grads_with_norm():
    tp, gp = pairs()
    tgrads = [p.grad for p in tp if p.grad is not None and p.numel()]
    ggrads = [p.grad for p in gp if p.grad is not None and p.numel()]
    for norm_type in (2.0, math.inf, 1.5):
        ref = torch.nn.utils.get_total_norm(tgrads, norm_type)
        with count_launches() as c:
            got = nn.utils.get_total_norm(ggrads, norm_type)
        assert sum(c.values()) == 2
        torch.testing.assert_close(got.torch(), ref, rtol=1e-12, atol=0)
    assert_grads(tp, gp, rtol=0, atol=0)  # untouched
    torch.nn.utils.clip_grads_with_norm_(tp, 0.3, ref)
    nn.utils.clip_grads_with_norm_(gp, 0.3, got)
    assert_grads(tp, gp, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=str)
def test_clip_grad_value_matches_torch(dtype):
    tp, gp = pairs(dtype)
    tp[0].grad[0, 0], gp[0].grad[0, 0] = math.nan, math.nan
    torch.nn.utils.clip_grad_value_(tp, 0.75)
    with count_launches() as c:
        assert nn.utils.clip_grad_value_(gp, 0.75, foreach=False) is None
    assert sum(c.values()) == 1
    assert_grads(tp, gp, rtol=0, atol=0)


@pytest.mark.filterwarnings("ignore:grad and param do not obey the gradient layout contract")
def test_parameters_to_vector_and_back():
    tp, gp = pairs()
    tvec = torch.nn.utils.parameters_to_vector(tp)
    gvec = nn.utils.parameters_to_vector(gp)
    torch.testing.assert_close(gvec.torch(), tvec.detach(), rtol=0, atol=0)
    up = uniform64(tuple(tvec.shape), -1, 1, 99)
    (tvec * up).sum().backward()
    (gvec * tgrad.from_torch(up)).sum().backward()  # gradients reach every parameter
    assert_grads(tp, gp, rtol=1e-12, atol=1e-14)
    new = uniform64(tuple(tvec.shape), -3, 3, 7)
    torch.nn.utils.vector_to_parameters(new.clone(), tp)
    gnew = tgrad.from_torch(new.clone())
    nn.utils.vector_to_parameters(gnew, gp)
    for a, b in zip(tp, gp):
        assert tuple(b.shape) == tuple(a.shape)
        torch.testing.assert_close(b.torch(), a.detach(), rtol=0, atol=0)
    with pytest.raises(TypeError, match="^expected torch.Tensor, but got: list$"):
        nn.utils.vector_to_parameters([1.0], gp)


def test_nn_utils_resolves_as_torch_nn_utils():
    import importlib
    mod = importlib.import_module("tgrad.nn.utils")
    assert mod is nn.utils and mod.clip_grad_norm_ is nn.utils.clip_grad_norm_
    assert importlib.import_module("tgrad.nn.utils.clip_grad").clip_grad_value_ is nn.utils.clip_grad_value_
    import tgrad.utils.data  # torch.utils stays the data package
    assert hasattr(tgrad.utils, "data") and not hasattr(tgrad.utils, "clip_grad_norm_")


# ----------------------------------------------------------------------------- containers

def _model(lib):
    class Model(lib.nn.Module):
        def __init__(self):
            super().__init__()
            P = lib.nn.Parameter
            self.plist = lib.nn.ParameterList([P(lib.ones(2, 3)), lib.zeros(4)])
            self.plist.append(P(lib.ones(1)))
            self.pdict = lib.nn.ParameterDict({"weight": P(lib.ones(3)), "bias": lib.zeros(2)})
            self.pdict["extra"] = P(lib.ones(2, 2))
            self.pdict.update([("z", lib.ones(1))])
    return Model()


def test_parameter_containers_match_torch():
    t, g = _model(torch), _model(tgrad)
    assert list(g.state_dict()) == list(t.state_dict())
    assert [n for n, _ in g.named_parameters()] == [n for n, _ in t.named_parameters()]
    assert all(isinstance(p, nn.Parameter) for p in g.plist) and isinstance(g.pdict["bias"], nn.Parameter)
    assert len(g.plist) == 3 and len(g.pdict) == 4 and list(g.pdict) == list(t.pdict)
    assert repr(g).replace("tgrad", "torch") == repr(t)
    assert [tuple(p.shape) for p in g.plist[1:]] == [(4,), (1,)]
    assert g.plist[-1] is g.plist[2]
    assert g.pdict.pop("z").shape == (1,) and "z" not in g.pdict
    assert g.pdict.get("nope", 5) == 5 and g.pdict.setdefault("w2", tgrad.ones(1)).shape == (1,)
    k, _ = g.pdict.popitem()
    assert k == "w2"
    merged = g.pdict | nn.ParameterDict({"q": tgrad.ones(1)})
    assert list(merged) == ["bias", "weight", "extra", "q"]
    sd = g.state_dict()
    fresh = _model(tgrad)
    del fresh.pdict["z"]
    fresh.load_state_dict(sd)
    with pytest.raises(IndexError, match="^index 3 is out of range$"):
        g.plist[3]
    with pytest.raises(TypeError, match="^ParameterList.extend should be called with an iterable, but got Tensor$"):
        g.plist.extend(tgrad.ones(2))
    with pytest.raises(TypeError, match="cannot be used as a key as it is not a string"):
        g.pdict[1] = tgrad.ones(1)
    with pytest.raises(RuntimeError, match="^ParameterList should not be called.$"):
        g.plist(1)
    with pytest.raises(RuntimeError, match="^ParameterDict should not be called.$"):
        g.pdict(1)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        opt = tgrad.optim.SGD(g.parameters(), lr=0.1)
    assert len(opt.param_groups[0]["params"]) == 6


def test_clip_kernels_compile_for_sm90():
    """The pointer-table kernels compile for a CUDA target in the configurations launched here."""
    launches = {}
    observer = record_launches(launches)
    launch_observers.append(observer)
    try:
        for norm_type in (2.0, math.inf, -math.inf, 0, 1.5):
            _, gp = pairs(torch.float32)
            gp = [p for p in gp if p.numel()]
            nn.utils.clip_grad_norm_(gp, 0.5, norm_type, error_if_nonfinite=norm_type == 2.0)
        nn.utils.clip_grad_value_(gp, 0.1)
    finally:
        launch_observers.remove(observer)
    kernels = [v for k, v in launches.items() if k[0] in ("_norm_partials_kernel", "_clip_scale_kernel", "_clamp_kernel")]
    assert len(kernels) >= 11
    for kernel, signature, constants, options in kernels:
        compiled = triton.compile(ASTSource(kernel, signature, {**constants, "BLOCK": 1024}),
                                  target=GPUTarget("cuda", 90, 32), options=options)
        assert compiled.asm["cubin"]


def test_clipping_computes_nothing_in_torch():
    _, gp = pairs(torch.float32)
    with AtenRecorder() as rec:
        total = nn.utils.clip_grad_norm_(gp, 0.5, error_if_nonfinite=True)
        nn.utils.clip_grads_with_norm_(gp, 0.5, total)
        nn.utils.clip_grad_value_(gp, 0.2)
        nn.utils.vector_to_parameters(nn.utils.parameters_to_vector(gp), gp)
    assert rec.computed() == {}, f"torch computed: {rec.computed()}"
