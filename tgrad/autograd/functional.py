"""``tgrad.autograd.functional``: Jacobians, Hessians and their products, as
``torch.autograd.functional``, built on ``tgrad.autograd.grad``.

- ``vjp(f, x, v)``: v^T J (one backward pass); ``jvp(f, x, v)``: J v by the double-backward trick
  (J v = d/du (u^T J v) of the vjp taken with a dummy u that requires grad).
- ``jacobian(f, x)``: one backward pass per output element (reverse mode); ``hessian(f, x)``: the
  Jacobian of the gradient. ``vhp``/``hvp``: v^T H and H v of a scalar function.

As in PyTorch: ``inputs`` and ``v`` are a Tensor or a tuple of Tensors and results keep that
structure; with ``create_graph=False`` results are detached, with ``True`` they are differentiable
(also with respect to tensors the function closes over); ``strict=True`` raises when an output does
not depend on an input, where the default gives zeros. ``vectorize=True`` is accepted and gives
the same values (computed by the same loop: tgrad has no vmap); ``strategy="forward-mode"`` needs
``vectorize=True`` as in PyTorch and is then computed in reverse mode too.
"""
from __future__ import annotations

from .. import ops
from ..tensor import Tensor
from .engine import grad as _grad
from ..modes import enable_grad

__all__ = ["vjp", "jvp", "jacobian", "hessian", "vhp", "hvp"]


def _as_tuple(x, arg_name, fn_name):
    """(tuple of tensors, whether x was a tuple), or PyTorch's TypeError."""
    is_tuple = isinstance(x, (tuple, list))
    xs = tuple(x) if is_tuple else (x,)
    for i, el in enumerate(xs):
        if not isinstance(el, Tensor):
            if is_tuple:
                raise TypeError(f"The {arg_name} given to {fn_name} must be either a Tensor or a tuple of Tensors "
                                f"but the value at index {i} has type {type(el)}.")
            raise TypeError(f"The {arg_name} given to {fn_name} must be either a Tensor or a tuple of Tensors but "
                            f"the given {arg_name} has type {type(el)}.")
    return xs, is_tuple


def _prepare(inputs, create_graph):
    """Inputs the function is run on: views that keep the caller's graph (create_graph), or fresh
    leaves that require grad."""
    if create_graph:
        return tuple(x.view_as(x) if x.requires_grad else x.detach().requires_grad_(True) for x in inputs)
    return tuple(x.detach().requires_grad_(True) for x in inputs)


def _finish(xs, create_graph, is_tuple):
    out = tuple(x if create_graph else x.detach() for x in xs)
    return out if is_tuple else out[0]


def _check_v(v, other, is_other_tuple, what):
    if len(v) != len(other):
        raise RuntimeError(f"v is a tuple of invalid length: should be {len(other)} but got {len(v)}.")
    for i, (a, b) in enumerate(zip(v, other)):
        if a.shape != b.shape:
            where = f" at index {i}" if is_other_tuple else ""
            raise RuntimeError(f"Mismatch in shape: v{where} has shape {tuple(a.shape)} while the {what}{where} has "
                               f"shape {tuple(b.shape)}.")


def _grads(outputs, inputs, grad_outputs, create_graph, strict, kind):
    """d(sum grad_outputs * outputs)/d inputs with zeros (or strict's error) for unused inputs."""
    pairs = [(o, g) for o, g in zip(outputs, grad_outputs) if o.requires_grad]
    if pairs:
        got = _grad([o for o, _ in pairs], inputs, [g for _, g in pairs], retain_graph=True,
                    create_graph=create_graph, allow_unused=True)
    else:
        got = (None,) * len(inputs)
    res = []
    for i, (g, x) in enumerate(zip(got, inputs)):
        if g is None:
            if strict:
                raise RuntimeError(_strict_message(kind, i))
            g = x.new_zeros(x.shape)
        res.append(g)
    return tuple(res)


def _strict_message(kind, i):
    if kind == "double_back":
        return ("The jacobian of the user-provided function is independent of input {i}. This is not allowed in "
                "strict mode.".format(i=i))
    if kind == "back_trick":
        return ("The gradient with respect to the input is independent of entry {i} in the grad_outputs when using "
                "the double backward trick to compute forward mode gradients. This is not allowed in strict "
                "mode.".format(i=i))
    return (f"The output of the user-provided function is independent of input {i}. This is not allowed in strict "
            f"mode.")


def _vector_like(v, like, like_tuple, fn_name, what, single):
    """``v`` checked against ``like`` (a tuple of tensors; ``what`` names it in errors), or ones
    when None, which needs ``like`` to be one single-element tensor (``single`` says so)."""
    if v is None:
        if len(like) != 1 or like[0].numel() != 1:
            raise RuntimeError(f"The vector v can only be None if {single}.")
        return (like[0].new_ones(like[0].shape),)
    v, _ = _as_tuple(v, "v", fn_name)
    _check_v(v, like, like_tuple, what)
    return v


def _run(func, inputs, fn_name):
    outputs, out_tuple = _as_tuple(func(*inputs), "outputs of the user-provided function", fn_name)
    return outputs, out_tuple


def vjp(func, inputs, v=None, create_graph=False, strict=False):
    """(func(inputs), v^T J): ``v`` has the outputs' shapes (None for a single-element output)."""
    with enable_grad():
        inputs, in_tuple = _as_tuple(inputs, "inputs", "vjp")
        inputs = _prepare(inputs, create_graph)
        outputs, out_tuple = _run(func, inputs, "vjp")
        v = _vector_like(v, outputs, out_tuple, "vjp", "outputs of the user-provided function",
                         "the user-provided function returns a single Tensor with a single element")
        g = _grads(outputs, inputs, v, create_graph, strict, "back")
    return _finish(outputs, create_graph, out_tuple), _finish(g, create_graph, in_tuple)


def jvp(func, inputs, v=None, create_graph=False, strict=False):
    """(func(inputs), J v): ``v`` has the inputs' shapes (None for a single-element input)."""
    with enable_grad():
        inputs, in_tuple = _as_tuple(inputs, "inputs", "jvp")
        inputs = _prepare(inputs, create_graph)
        v = _vector(v, inputs, in_tuple, "jvp")
        outputs, out_tuple = _run(func, inputs, "jvp")
        # u^T J as a differentiable function of a dummy u, then its derivative along v is J v
        us = tuple(o.new_zeros(o.shape).requires_grad_(True) for o in outputs)
        g = _grads(outputs, inputs, us, True, strict, "back")
        jv = _grads(g, us, v, create_graph, strict, "back_trick")
    return _finish(outputs, create_graph, out_tuple), _finish(jv, create_graph, out_tuple)


def _check_strategy(strategy, vectorize):
    if strategy not in ("forward-mode", "reverse-mode"):
        raise ValueError('Expected strategy to be either "forward-mode" or "reverse-mode". Hint: If your '
                         'function has more outputs than inputs, "forward-mode" tends to be more performant. '
                         'Otherwise, prefer to use "reverse-mode".')
    if strategy == "forward-mode" and not vectorize:
        raise NotImplementedError("Computing Jacobian using forward-AD or forward-over-reverse Hessian is only "
                                  "implemented for `vectorize=True`.")


def _jacobian_rows(outputs, inputs, create_graph, strict):
    """J[i][j]: d outputs[i] / d inputs[j], shaped outputs[i].shape + inputs[j].shape."""
    rows = []
    for i, out in enumerate(outputs):
        n = out.numel()
        per_input = [[] for _ in inputs]
        basis = ops.eye(n, dtype=out.dtype, device=out.device) if n else None
        for k in range(n):
            e = basis[k].view(out.shape)
            if out.requires_grad:
                got = _grad(out, inputs, e, retain_graph=True, create_graph=create_graph, allow_unused=True)
            else:
                got = (None,) * len(inputs)
            for j, (g, x) in enumerate(zip(got, inputs)):
                if g is None:
                    if strict:
                        raise RuntimeError(f"Output {i} of the user-provided function is independent of input {j}. "
                                           f"This is not allowed in strict mode.")
                    g = x.new_zeros(x.shape)
                per_input[j].append(g)
        row = []
        for j, x in enumerate(inputs):
            if n:
                row.append(ops.stack(per_input[j], 0).view(tuple(out.shape) + tuple(x.shape)))
            else:
                row.append(x.new_zeros(tuple(out.shape) + tuple(x.shape)))
        rows.append(tuple(row))
    return rows


def _structure(rows, out_tuple, in_tuple, create_graph):
    fin = [tuple(r if create_graph else r.detach() for r in row) for row in rows]
    if out_tuple and in_tuple:
        return tuple(fin)
    if out_tuple:
        return tuple(row[0] for row in fin)
    if in_tuple:
        return fin[0]
    return fin[0][0]


def jacobian(func, inputs, create_graph=False, strict=False, vectorize=False, strategy="reverse-mode"):
    """The Jacobian of ``func`` at ``inputs`` (nested tuples when inputs/outputs are tuples)."""
    _check_strategy(strategy, vectorize)
    if strict and (vectorize or strategy == "forward-mode"):
        raise RuntimeError("torch.autograd.functional.jacobian: `strict=True` and `vectorized=True` are not "
                           "supported together. Please either set `strict=False` or `vectorize=False`.")
    with enable_grad():
        inputs, in_tuple = _as_tuple(inputs, "inputs", "jacobian")
        inputs = _prepare(inputs, create_graph)
        outputs, out_tuple = _run(func, inputs, "jacobian")
        rows = _jacobian_rows(outputs, inputs, create_graph, strict)
    return _structure(rows, out_tuple, in_tuple, create_graph)


def _scalar_output(func, inputs, fn_name):
    out, out_tuple = _as_tuple(func(*inputs), "outputs of the user-provided function", fn_name)
    if out_tuple or len(out) != 1:
        raise RuntimeError(f"The function given to {fn_name} should return a single Tensor")
    if out[0].numel() != 1:
        raise RuntimeError(f"The Tensor returned by the function given to {fn_name} should contain a single "
                           f"element")
    return out[0].reshape(())


def hessian(func, inputs, create_graph=False, strict=False, vectorize=False, outer_jacobian_strategy="reverse-mode"):
    """The Hessian of a scalar ``func``: H[i][j] shaped inputs[i].shape + inputs[j].shape."""
    _check_strategy(outer_jacobian_strategy, vectorize)
    inputs_t, in_tuple = _as_tuple(inputs, "inputs", "hessian")

    def gradient(*xs):
        out = _scalar_output(func, xs, "hessian")
        return _grads((out,), xs, (out.new_ones(()),), True, strict, "double_back")

    with enable_grad():
        xs = _prepare(inputs_t, create_graph)
        grads = gradient(*xs)
        rows = _jacobian_rows(grads, xs, create_graph, strict)
    return _structure(rows, in_tuple, in_tuple, create_graph)


def _gradient_at(func, inputs, v, create_graph, strict, fn_name):
    """What vhp and hvp start from: the inputs as a tuple (and whether they were one), the vector,
    the scalar output and its gradient, differentiable."""
    inputs, in_tuple = _as_tuple(inputs, "inputs", fn_name)
    inputs = _prepare(inputs, create_graph)
    v = _vector(v, inputs, in_tuple, fn_name)
    out = _scalar_output(func, inputs, fn_name)
    return inputs, in_tuple, v, out, _grads((out,), inputs, (out.new_ones(()),), True, strict, "double_back")


def vhp(func, inputs, v=None, create_graph=False, strict=False):
    """(func(inputs), v^T H) of a scalar ``func``."""
    with enable_grad():
        inputs, in_tuple, v, out, g = _gradient_at(func, inputs, v, create_graph, strict, "vhp")
        res = _grads(g, inputs, v, create_graph, strict, "double_back")
    return (out if create_graph else out.detach()), _finish(res, create_graph, in_tuple)


def hvp(func, inputs, v=None, create_graph=False, strict=False):
    """(func(inputs), H v) of a scalar ``func`` (H is symmetric, so this is v^T H transposed)."""
    with enable_grad():
        inputs, in_tuple, v, out, g = _gradient_at(func, inputs, v, create_graph, strict, "hvp")
        # H v = d/du (u^T H) v ... by the double-backward trick on the gradient
        us = tuple(x.new_zeros(x.shape).requires_grad_(True) for x in inputs)
        ug = _grads(g, inputs, us, True, strict, "double_back")
        res = _grads(ug, us, v, create_graph, strict, "back_trick")
    return (out if create_graph else out.detach()), _finish(res, create_graph, in_tuple)


def _vector(v, inputs, in_tuple, fn_name):
    return _vector_like(v, inputs, in_tuple, fn_name, "input",
                        "the input to the user-provided function is a single Tensor with a single element")
