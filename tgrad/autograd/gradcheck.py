"""gradcheck / gradgradcheck: analytical gradients against central finite differences (spec J).

The Jacobian of each (output, input) pair is built twice: numerically, one input element at a time,
``(f(x + eps e_j) - f(x - eps e_j)) / 2 eps``; analytically, one output element at a time, as the
vector-Jacobian product with a one-hot ``grad_output``. ``fast_mode`` compares a single random
projection ``v^T J u`` of both instead, which is much cheaper. All arithmetic runs in tgrad ops.
"""
from __future__ import annotations

import warnings

import numpy as np

from .. import ops
from ..tensor import Tensor

from .engine import grad as autograd_grad
from ..modes import enable_grad, no_grad


class GradcheckError(RuntimeError):
    pass


def _as_tuple(x):
    return (x,) if isinstance(x, Tensor) else tuple(x)


def _outputs(func, inputs):
    out = func(*inputs)
    return _as_tuple(out)


def _differentiable(inputs):
    return [i for i, t in enumerate(inputs) if isinstance(t, Tensor) and t.requires_grad]


def _numerical_column(func, inputs, i, j, eps):
    """d outputs / d inputs[i].flat[j], by central differences (perturbing the storage in place)."""
    # through .data: its own version counter, so the graph the analytical side saved stays valid
    x = inputs[i].data
    at = tuple(int(k) for k in np.unravel_index(j, tuple(x.shape)))
    with no_grad():
        orig = float(x[at].item())
        x[at] = orig + eps
        plus = [o.detach().clone() for o in _outputs(func, inputs)]
        x[at] = orig - eps
        minus = [o.detach().clone() for o in _outputs(func, inputs)]
        x[at] = orig
        return [((p - m) / (2 * eps)).reshape(-1) for p, m in zip(plus, minus)]


def _jacobians(func, inputs, eps):
    """numerical[o][i] and analytical[o][i]: (numel(input i), numel(output o)) Jacobians."""
    diff = _differentiable(inputs)
    outputs = _outputs(func, inputs)
    numerical = [[None] * len(inputs) for _ in outputs]
    analytical = [[None] * len(inputs) for _ in outputs]
    for i in diff:
        cols = [_numerical_column(func, inputs, i, j, eps) for j in range(inputs[i].numel())]
        for o, out in enumerate(outputs):
            numerical[o][i] = (ops.stack([c[o] for c in cols]) if cols else
                               ops.zeros(0, out.numel(), dtype=out.dtype))
    for o, out in enumerate(outputs):
        rows = {i: [] for i in diff}
        for m in range(out.numel()):
            onehot = ops.zeros(out.numel(), dtype=out.dtype, device=out.device)
            onehot[m] = 1.0
            grads = autograd_grad(out, [inputs[i] for i in diff], onehot.reshape(out.shape), retain_graph=True,
                                  allow_unused=True) if out.requires_grad else [None] * len(diff)
            for i, g in zip(diff, grads):
                rows[i].append(g.reshape(-1) if g is not None else ops.zeros(inputs[i].numel(), dtype=out.dtype))
        for i in diff:
            analytical[o][i] = (ops.stack(rows[i], dim=1) if rows[i] else
                                ops.zeros(inputs[i].numel(), 0, dtype=out.dtype))
    return outputs, numerical, analytical


def _close(a, b, atol, rtol):
    if a.numel() == 0:
        return True
    return bool(((a - b).abs() <= atol + rtol * b.abs()).all().item())


def _fail(message, raise_exception):
    if raise_exception:
        raise GradcheckError(message)
    return False


def _check_inputs(inputs):
    diff = _differentiable(inputs)
    if not diff:
        raise ValueError("gradcheck expects at least one input tensor to require gradient, but none of them have "
                         "requires_grad=True.")
    for i, t in enumerate(inputs):
        if isinstance(t, Tensor) and t.requires_grad and t.dtype.name != "float64":
            warnings.warn(f"Input #{i} requires gradient and is not a double precision floating point or complex. "
                          "This check will likely fail if all the inputs are not of double precision floating point "
                          "or complex. ", UserWarning, stacklevel=3)


def gradcheck(func, inputs, *, eps=1e-06, atol=1e-05, rtol=0.001, raise_exception=True, nondet_tol=0.0,
              check_undefined_grad=True, check_grad_dtypes=False, check_batched_grad=False,
              check_batched_forward_grad=False, check_forward_ad=False, check_backward_ad=True,
              fast_mode=False, masked=None):
    inputs = _as_tuple(inputs)
    _check_inputs(inputs)
    if fast_mode:
        return _fast_gradcheck(func, inputs, eps, atol, rtol, raise_exception)
    outputs, numerical, analytical = _jacobians(func, inputs, eps)
    for o in range(len(outputs)):
        for i in _differentiable(inputs):
            n, a = numerical[o][i], analytical[o][i]
            if not _close(a, n, atol, rtol):
                return _fail(f"Jacobian mismatch for output {o} with respect to input {i},\nnumerical:{n}\n"
                             f"analytical:{a}\n", raise_exception)
    return True


def _fast_gradcheck(func, inputs, eps, atol, rtol, raise_exception):
    """v^T J u for random u (input space) and v (output space), numerically and analytically."""
    diff = _differentiable(inputs)
    us = {i: ops.rand(inputs[i].shape, dtype=inputs[i].dtype, device=inputs[i].device) for i in diff}
    outputs = _outputs(func, inputs)
    vs = [ops.rand(o.shape, dtype=o.dtype, device=o.device) for o in outputs]
    for i in diff:
        x = inputs[i].data
        with no_grad():
            orig = x.clone()
            x.add_(us[i] * eps)
            plus = [o.detach().clone() for o in _outputs(func, inputs)]
            x.copy_(orig - us[i] * eps)
            minus = [o.detach().clone() for o in _outputs(func, inputs)]
            x.copy_(orig)
        for o, out in enumerate(outputs):
            numeric = (((plus[o] - minus[o]) / (2 * eps)) * vs[o]).sum()
            if out.requires_grad:
                g, = autograd_grad(out, inputs[i], vs[o], retain_graph=True, allow_unused=True)
            else:
                g = None
            analytic = (g * us[i]).sum() if g is not None else ops.zeros((), dtype=out.dtype)
            if not _close(analytic.reshape(1), numeric.reshape(1), atol, rtol):
                return _fail(f"Jacobian mismatch for output {o} with respect to input {i},\n"
                             f"numerical:{numeric}\nanalytical:{analytic}\n\nThe above quantities relating the "
                             "numerical and analytical jacobians are computed in fast mode.", raise_exception)
    return True


def gradgradcheck(func, inputs, grad_outputs=None, *, eps=1e-06, atol=1e-05, rtol=0.001, gen_non_contig_grad_outputs=False,
                  raise_exception=True, nondet_tol=0.0, check_undefined_grad=True, check_grad_dtypes=False,
                  check_batched_grad=False, check_fwd_over_rev=False, check_rev_over_rev=True, fast_mode=False,
                  masked=False):
    """gradcheck of the function (inputs, grad_outputs) -> d(func)/d(inputs) . grad_outputs, built with
    create_graph=True: second derivatives against finite differences of first derivatives."""
    inputs = _as_tuple(inputs)
    _check_inputs(inputs)
    outputs = _outputs(func, inputs)
    if grad_outputs is None:
        grad_outputs = tuple(ops.randn(o.shape, dtype=o.dtype, device=o.device, requires_grad=True) for o in outputs)
    else:
        grad_outputs = _as_tuple(grad_outputs)
    n_in = len(inputs)
    diff = _differentiable(inputs)

    def first_derivatives(*args):
        ins, gos = args[:n_in], args[n_in:]
        with enable_grad():  # the numerical side calls this under no_grad; first derivatives need a graph
            outs = [o for o in _outputs(func, ins)]
            pairs = [(o, g) for o, g in zip(outs, gos) if o.requires_grad]
            grads = autograd_grad([o for o, _ in pairs], [ins[i] for i in diff], [g for _, g in pairs],
                                  create_graph=True, allow_unused=True)
        return tuple(g if g is not None else ops.zeros(ins[i].shape, dtype=ins[i].dtype) for i, g in zip(diff, grads))

    return gradcheck(first_derivatives, inputs + grad_outputs, eps=eps, atol=atol, rtol=rtol,
                     raise_exception=raise_exception, fast_mode=fast_mode)
