"""The audit that torch computes nothing inside tgrad: every value comes from a Triton kernel.

A ``TorchDispatchMode`` records every aten op torch executes while tgrad runs a forward and a
backward pass; anything outside the storage allow-list (allocate, view, copy, fill, metadata) fails
the test. The recorder is shown to see ops at all (so the check cannot pass vacuously) and to catch
a torch-computed op when one runs. A static pass over the sources then checks that no module-level
``torch.<fn>(...)`` call outside the storage functions appears anywhere in tgrad, kernels or nn, so
paths the dynamic test does not exercise are covered too."""
import ast
import pathlib

import pytest
import torch

import tgrad
from support.reference import DEVICES
from support.torch_audit import AtenRecorder


def _mlp_and_more(device, seed=0):
    """An MLP step plus a handful of other ops; returns (recorded ops, grads, loss value)."""
    g = torch.Generator().manual_seed(seed)
    data = {k: torch.randn(*s, generator=g, dtype=torch.float64) for k, s in
            {"x": (6, 5), "W1": (5, 7), "b1": (7,), "W2": (7, 3), "b2": (3,)}.items()}
    t = {k: tgrad.tensor(v.float(), device=device, requires_grad=(k != "x")) for k, v in data.items()}
    with AtenRecorder() as rec:
        h = (t["x"] @ t["W1"] + t["b1"]).relu()
        out = h @ t["W2"] + t["b2"]
        loss = -out.log_softmax(dim=1).mean()
        extra = (tgrad.cat([out.exp(), out.tanh()], dim=1).reshape(-1)[::3].sum()
                 + out.softmax(dim=1).max() + h[1:, 2].mean() + out.sum(dim=0).mean())
        total = loss + 0.1 * extra
        total.backward()
        value = total.item()
    grads = {k: t[k].grad.torch().cpu().double() for k in ("W1", "b1", "W2", "b2")}
    return rec, grads, value, data


def _reference(data):
    r = {k: v.clone().requires_grad_(k != "x") for k, v in data.items()}
    h = (r["x"] @ r["W1"] + r["b1"]).relu()
    out = h @ r["W2"] + r["b2"]
    loss = -out.log_softmax(dim=1).mean()
    extra = (torch.cat([out.exp(), out.tanh()], dim=1).reshape(-1)[::3].sum()
             + out.softmax(dim=1).max() + h[1:, 2].mean() + out.sum(dim=0).mean())
    total = loss + 0.1 * extra
    total.backward()
    return total.item(), {k: r[k].grad for k in ("W1", "b1", "W2", "b2")}


@pytest.mark.parametrize("device", DEVICES)
def test_forward_and_backward_run_no_torch_compute(device):
    rec, grads, value, data = _mlp_and_more(device)
    # the recorder really sees tgrad's storage traffic, so an empty "computed" set means something
    assert rec.ops["empty"] > 0 and sum(rec.ops.values()) > 20, rec.ops
    assert rec.ops["_local_scalar_dense"] == 1  # .item() is the only read-out
    assert rec.computed() == {}, f"torch computed: {rec.computed()}"
    # and the kernels did compute the right thing
    ref_value, ref_grads = _reference({k: v.float().double() for k, v in data.items()})
    assert abs(value - ref_value) < 1e-4 * max(1.0, abs(ref_value))
    for k in grads:
        torch.testing.assert_close(grads[k], ref_grads[k], rtol=1e-4, atol=1e-5, msg=k)


def test_the_recorder_catches_a_torch_computed_op():
    x = tgrad.tensor([1.0, 2.0])
    with AtenRecorder() as rec:
        y = tgrad.from_torch(torch.add(x.torch(), 1.0))  # a deliberate cheat: torch does the add
        s = x.torch().sum()
        z = x + 1  # the honest way: a kernel
    assert y.tolist() == z.tolist() == [2.0, 3.0] and s.item() == 3.0
    assert set(rec.computed()) == {"add", "sum"}


# ------------------------------------------------------------------------------ static audit

ROOT = pathlib.Path(__file__).resolve().parents[2]
# module-level torch functions that only allocate, wrap, convert or describe storage
TORCH_STORAGE_FUNCTIONS = {
    "empty", "empty_strided", "empty_like", "zeros", "zeros_like", "ones", "ones_like", "full", "full_like",
    "tensor", "as_tensor", "from_numpy", "from_dlpack", "as_strided", "device", "Size", "dtype", "finfo",
    "iinfo", "is_tensor", "get_default_dtype", "is_grad_enabled", "is_floating_point", "promote_types",
    "result_type", "can_cast", "broadcast_shapes", "set_printoptions", "get_printoptions", "no_grad",
    "utils.dlpack.to_dlpack", "utils.dlpack.from_dlpack", "save", "load",
    "_C._storage_Use_Count",  # metadata: whether a gradient's storage is shared (engine, .grad stealing)
    "nn.Parameter",  # tgrad.to_torch: the same storage handed to PyTorch as its Parameter class
    # graph capture's per-thread dispatch-mode stack (what records launches; computes nothing)
    "utils._python_dispatch._push_mode", "utils._python_dispatch._pop_mode",
}
# device management and queries (torch.cuda.*, torch.backends.*)
TORCH_STORAGE_PREFIXES = ("cuda.", "backends.", "_C._dlpack")


def _dotted(node):
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return None


def _torch_calls(path):
    tree = ast.parse(path.read_text(), str(path))
    aliases, imported = set(), {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            aliases |= {a.asname or a.name for a in node.names if a.name == "torch"}
        elif isinstance(node, ast.ImportFrom) and node.module and (node.module == "torch" or node.module.startswith("torch.")):
            prefix = node.module[len("torch"):].lstrip(".")
            for a in node.names:
                imported[a.asname or a.name] = f"{prefix}.{a.name}" if prefix else a.name
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        name = _dotted(node.func)
        if name is None:
            continue
        head, _, rest = name.partition(".")
        if head in aliases and rest:
            yield node.lineno, rest
        elif head in imported:
            yield node.lineno, imported[head] + (f".{rest}" if rest else "")


def test_sources_call_no_torch_compute_function():
    files = [p for d in ("tgrad", "kernels", "nn") for p in sorted((ROOT / d).rglob("*.py"))]
    assert len(files) > 10
    seen, bad = set(), []
    for p in files:
        for line, fn in _torch_calls(p):
            seen.add(fn)
            if fn not in TORCH_STORAGE_FUNCTIONS and not fn.startswith(TORCH_STORAGE_PREFIXES):
                bad.append(f"{p.relative_to(ROOT)}:{line}: torch.{fn}")
    assert "empty" in seen  # the scan does find tgrad's (storage) torch calls
    assert not bad, "torch compute calls in the sources:\n" + "\n".join(bad)


def test_static_audit_flags_a_compute_call(tmp_path):
    f = tmp_path / "cheat.py"
    f.write_text("import torch as T\nfrom torch import where\nx = T.empty(2)\ny = T.exp(x)\nz = where(x > 0, x, y)\n")
    assert list(_torch_calls(f)) == [(3, "empty"), (4, "exp"), (5, "where")]
