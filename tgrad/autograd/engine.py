"""The backward pass: walk the graph from the roots in dependency order, without recursion.

1. Collect the nodes reachable from the roots and count, for each node, the edges that lead into
   it (only over nodes that matter when ``inputs`` restricts the pass).
2. Run a node once every node that feeds it has run (ready nodes by creation order, newest first,
   as PyTorch does), summing gradients that meet in a node's input buffer.
3. AccumulateGrad nodes add into ``.grad``; with ``inputs`` (``autograd.grad``) the gradients at
   those edges are captured instead.
"""
from __future__ import annotations

import heapq
import sys
import warnings

import torch

from .. import ops
from .._dtype import _BY_TORCH, Size
from ..modes import set_grad_enabled
from ..ops.common import sum_to_shape
from ..ops.pointwise import Copy
from ..tensor import Tensor
from . import anomaly_mode
from .function import AccumulateGrad, edge_of
from .hooks import run_post_accumulate_hooks, run_post_hooks, run_pre_hooks, run_tensor_hooks


def _validate_root(i, t, g):
    if g is None:
        if t.numel() != 1:
            raise RuntimeError("grad can be implicitly created only for scalar outputs")
        return ops.ones_like(t)
    if not isinstance(g, Tensor):
        raise TypeError(f"gradients can be either Tensors or None, but got {type(g).__name__}")
    if tuple(g.shape) != tuple(t.shape):
        raise RuntimeError(f"Mismatch in shape: grad_output[{i}] has a shape of {Size(g.shape)} and "
                           f"output[{i}] has a shape of {Size(t.shape)}.")
    if g.device != t.device:
        raise RuntimeError(f"invalid gradient at index {i} - expected device {t.device} but got {g.device}")
    return g.to(t.dtype) if g.dtype is not t.dtype else g


def _check_grads(node, grads):
    """Gradients a node returned: one per input, of the input's shape, cast to its dtype."""
    n_in = len(node._next)
    if not isinstance(grads, tuple):
        grads = (grads,)
    cls = node._forward_cls  # None on an AccumulateGrad
    if cls is not None and not cls.builtin:
        name = node.name()
        if len(grads) < n_in or any(g is not None for g in grads[n_in:]):
            raise RuntimeError(f"function {name} returned an incorrect number of gradients "
                               f"(expected {n_in}, got {len(grads)})")
        for i, (g, meta) in enumerate(zip(grads, node._input_meta)):
            if g is not None and not isinstance(g, Tensor):
                raise RuntimeError(f"expected Variable or None (got {type(g).__name__})")
            if g is not None and meta is None:
                raise RuntimeError(f"function {name} returned a gradient different than None at position "
                                   f"{i + 1}, but the corresponding forward input was not a Variable")
    out = []
    # (shapes compared as the storages' torch.Size: a tgrad Size per gradient costs per node)
    for i, (g, meta) in enumerate(zip(grads[:n_in], node._input_meta)):
        if g is not None and meta is not None:
            shape, dtype, _ = meta
            if g._data.shape != shape:
                # the one place where a gradient is fitted to its input: summed over the dims a
                # broadcast expanded (as PyTorch's engine does); any other shape is an error
                if not _expandable(shape, g.shape):
                    raise RuntimeError(f"Function {node.name()} returned an invalid gradient at index {i} - "
                                       f"got {list(g.shape)} but expected shape compatible with {list(shape)}")
                g = sum_to_shape(g, shape)
            if _BY_TORCH[g._data.dtype] is not dtype:
                g = g.to(dtype)
        out.append(g)
    return out


def _expandable(shape, to):
    """Whether ``shape`` broadcasts to ``to``."""
    if len(shape) > len(to):
        return False
    return all(s == t or s == 1 for s, t in zip(reversed(tuple(shape)), reversed(tuple(to))))


def _run_node(node, grads):
    """Call a node's backward and validate what it returns; in anomaly mode, also check for NaN
    and show where the failing node's forward ran before the error propagates."""
    if not anomaly_mode.is_anomaly_enabled():
        return _check_grads(node, node.apply(*grads))
    try:
        raw = node.apply(*grads)
        outs = _check_grads(node, raw)
        if anomaly_mode.is_anomaly_check_nan_enabled():
            anomaly_mode.check_nan(node, raw if isinstance(raw, tuple) else (raw,))
        return outs
    except Exception:
        anomaly_mode.warn_backward_error(node)
        raise


def _retain(node, nr, grad, create_graph):
    ref = node._retained.get(nr)
    t = ref() if ref is not None else None
    if t is None:
        return
    g = grad if create_graph else grad.detach()
    if t._grad is None:
        t._grad = g.clone() if not create_graph else g
    else:
        t._grad = t._grad + g


def _new_grad(grad, create_graph, steal=False):
    """What a first accumulation stores in ``.grad``: a copy, which under create_graph keeps its
    history through a copy node (``grad_fn=<CopyBackwards>``, as PyTorch shows it). With ``steal``
    (the caller holds the only other reference) a gradient that nothing else can reach becomes
    ``.grad`` as it is, as PyTorch's AccumulateGrad steals it: no copy of every parameter's
    gradient each step."""
    if not create_graph:
        if steal and _unreachable(grad):
            return Tensor._wrap(grad._data)
        # a storage copy, not a kernel: one interpreted launch per parameter per step otherwise
        return Tensor._wrap(grad._data.clone(memory_format=torch.contiguous_format))
    if not grad._requires_grad:
        return grad
    return Copy.apply(ops.empty_like(grad), grad)


# references to a gradient nothing else holds, inside _unreachable: the engine's, _accumulate's,
# _new_grad's and _unreachable's own parameter, and getrefcount's argument
_OWN_REFS = 5


def _unreachable(grad, own_refs=_OWN_REFS) -> bool:
    """Whether ``grad`` (a tgrad Tensor) and its storage are held by nobody but the engine: no other
    Python reference to the wrapper or its torch tensor, no other tensor or view on the storage."""
    if sys.getrefcount(grad) > own_refs or grad._requires_grad:
        return False
    data = grad._data
    # the wrapper's attribute, `data` and getrefcount's argument; the storage: its tensor and the
    # temporary storage object asked about
    return (sys.getrefcount(data) <= 3 and data._base is None and data.is_contiguous()
            and torch._C._storage_Use_Count(data.untyped_storage()._cdata) <= 2)


# references to a buffered gradient nothing else holds: the buffer's slot, _sum_into's `old`,
# _unreachable's parameter and getrefcount's argument
_BUFFER_REFS = 4


def _sum_into(buf, nr, g, create_graph):
    """``buf[nr] += g`` where gradients meet in a node's input buffer: in place when nothing but the
    buffer holds the sum so far and no graph is being recorded (as PyTorch's InputBuffer does),
    else a new tensor (a full op: an allocation and a node when create_graph records it)."""
    old = buf[nr]
    if old is None:
        buf[nr] = g
    elif not create_graph and old._data.shape == g._data.shape and old._data.dtype == g._data.dtype \
            and _unreachable(old, _BUFFER_REFS):
        old._accumulate_(g)
    else:
        buf[nr] = old + g


def _accumulate(node: AccumulateGrad, grad, create_graph, steal=False):
    var = node.variable
    # a hook may keep what it was given, or return it
    hooked = bool(node._tensor_hooks.get(0) or node._pre_hooks or node._post_hooks)
    grad = run_tensor_hooks(node, 0, grad)
    if node._pre_hooks:
        (grad,) = run_pre_hooks(node, [grad])
    if grad is not None:  # (a pre-hook may drop it)
        if var._grad is None:
            var._grad = _new_grad(grad, create_graph, steal and not hooked)
        elif create_graph or var._grad._requires_grad:
            var._grad = var._grad + grad
        else:
            var._grad._accumulate_(grad)
        run_post_accumulate_hooks(var)
    if node._post_hooks:  # the node has no inputs: grad_inputs is ()
        run_post_hooks(node, [], [grad])


def run_backward(tensors, grad_tensors, retain_graph, create_graph, inputs=None, accumulate=True):
    """Backpropagate from ``tensors``. With ``accumulate`` (``backward``) gradients land in ``.grad``
    (only of ``inputs`` when given); without it (``autograd.grad``) the gradients at ``inputs`` are
    returned, in order, and no ``.grad`` is touched."""
    roots = []
    for i, (t, g) in enumerate(zip(tensors, grad_tensors)):
        if not t._requires_grad:
            raise RuntimeError(f"element {i} of tensors does not require grad and does not have a grad_fn")
        roots.append((edge_of(t), _validate_root(i, t, g)))

    targets = None
    if inputs is not None:
        targets = {}
        for k, x in enumerate(inputs):
            if not x._requires_grad:
                raise RuntimeError("One of the differentiated Tensors does not require grad")
            node, nr = edge_of(x)
            targets.setdefault((node, nr), []).append(k)

    # 1. reachable nodes and, in the same pass, the edges into each
    root_nodes = list(dict.fromkeys(e[0][0] for e in roots))
    order, stack = [], [n for n in root_nodes if n is not None]
    deps = dict.fromkeys(stack, 0)
    seen = set(stack)
    while stack:
        n = stack.pop()
        order.append(n)
        for nx, _ in n._next:
            if nx is None:
                continue
            if nx in seen:
                deps[nx] += 1
            else:
                seen.add(nx)
                deps[nx] = 1
                stack.append(nx)
    if targets is not None:  # only the nodes that matter, and the edges among them
        target_nodes = {n for n, _ in targets}
        useful = set()
        # a node matters if it is a target or leads to one; children come after parents in `order`
        # only loosely, so iterate to a fixed point over the (finite) reverse order
        changed = True
        while changed:
            changed = False
            for n in reversed(order):
                if n in useful:
                    continue
                if n in target_nodes or any(nx in useful for nx, _ in n._next):
                    useful.add(n)
                    changed = True
        deps = dict.fromkeys(useful, 0)
        for n in useful:
            for nx, _ in n._next:
                if nx in deps:
                    deps[nx] += 1
    else:
        useful = deps

    # 2. execute
    buffers = {}
    for (node, nr), g in roots:
        if node not in useful:
            continue
        buf = buffers.setdefault(node, [None] * node._num_outputs)
        buf[nr] = g if buf[nr] is None else buf[nr] + g
    # nothing leads into a node with no dependencies: only a root can be one
    ready = [(-n._seq, id(n), n) for n in root_nodes
             if n in useful and deps[n] == 0 and n in buffers]
    heapq.heapify(ready)
    captured = [None] * (len(inputs) if inputs is not None else 0)
    with set_grad_enabled(create_graph):
        while ready:
            node = heapq.heappop(ready)[2]
            grads = buffers.pop(node, None) or [None] * node._num_outputs
            leaf = type(node) is AccumulateGrad
            if not leaf and (node._tensor_hooks or node._retained):
                for nr in range(len(grads)):
                    if grads[nr] is not None:
                        grads[nr] = run_tensor_hooks(node, nr, grads[nr])
                        _retain(node, nr, grads[nr], create_graph)
            if targets is not None:
                for nr in range(len(grads)):
                    for k in targets.get((node, nr), ()):
                        g = grads[nr]
                        if leaf and g is not None:
                            g = run_tensor_hooks(node, 0, g)
                        captured[k] = g
            if leaf:
                if accumulate and grads[0] is not None:
                    # drop the loop's other references, so that the engine holds the gradient once
                    # and a fresh one can become .grad without a copy (_new_grad)
                    g0, grads, buf, outs, g = grads[0], None, None, None, None
                    _accumulate(node, g0, create_graph, steal=targets is None)
                    g0 = None
                continue
            nexts = node._next
            if targets is not None and not accumulate and not any(nx in useful for nx, _ in nexts):
                continue
            if node._pre_hooks:
                grads = run_pre_hooks(node, grads)
            # (None by identity: a tensor compared to None with == would be an op)
            if len(grads) == 1:  # most nodes: no list scans
                if grads[0] is None:
                    outs = [None] * len(nexts)
                else:
                    outs = _run_node(node, grads)
            elif all(g is None for g in grads):
                outs = [None] * len(nexts)
            else:
                given = grads  # the post hooks see the gradients as they came (None for an unused output)
                if node._materialize_grads and any(g is None for g in grads):
                    given = _materialize(node, grads)
                outs = _run_node(node, given)
            if node._post_hooks:
                outs = run_post_hooks(node, outs, grads)
            if not retain_graph:
                node._release()
            for (nx, nr), g in zip(nexts, outs):
                if nx is None or nx not in deps:
                    continue
                if g is not None:
                    buf = buffers.get(nx)
                    if buf is None:
                        buf = buffers[nx] = [None] * nx._num_outputs
                    _sum_into(buf, nr, g, create_graph)
                n_deps = deps[nx] - 1
                deps[nx] = n_deps
                if n_deps == 0:
                    heapq.heappush(ready, (-nx._seq, id(nx), nx))
    return captured


def _materialize(node, grads):
    out = list(grads)
    for i, g in enumerate(out):
        if g is None and i < len(node._output_meta) and node._output_meta[i] is not None:
            shape, dtype, device, _ = node._output_meta[i]
            out[i] = ops.zeros(shape, dtype=dtype, device=device)
    return out


def backward(tensors, grad_tensors=None, retain_graph=None, create_graph=False, inputs=None):
    if isinstance(tensors, Tensor):
        tensors = (tensors,)
    tensors = tuple(tensors)
    if grad_tensors is None:
        grad_tensors = (None,) * len(tensors)
    elif isinstance(grad_tensors, Tensor) or not isinstance(grad_tensors, (tuple, list)):
        grad_tensors = (grad_tensors,)
    if len(grad_tensors) != len(tensors):
        raise RuntimeError(f"got {len(tensors)} tensors and {len(grad_tensors)} gradients")
    if retain_graph is None:
        retain_graph = create_graph
    if inputs is not None:
        inputs = (inputs,) if isinstance(inputs, Tensor) else tuple(inputs)
        if len(inputs) == 0:
            raise RuntimeError("`inputs` argument to `backward()` cannot be empty.")
        for x in inputs:  # as PyTorch: a non-leaf input's .grad is its retained gradient
            x.retain_grad()
    if create_graph:
        warnings.warn(
            "Using backward() with create_graph=True will create a reference cycle between the parameter and "
            "its gradient which can cause a memory leak. We recommend using autograd.grad when creating the "
            "graph to avoid this. If you have to use this function, make sure to reset the .grad fields of "
            "your parameters to None after use to break the cycle and avoid the leak.", UserWarning,
            stacklevel=3)
    if inputs is None:
        run_backward(tensors, grad_tensors, retain_graph, create_graph)
        return
    grads = run_backward(tensors, grad_tensors, retain_graph, create_graph, inputs=inputs, accumulate=False)
    for x, g in zip(inputs, grads):
        if g is not None and x._grad_fn is None:  # non-leaves got theirs as retained gradients
            _accumulate_into(x, g, create_graph)


def _accumulate_into(x, g, create_graph):
    if x._grad is None:
        x._grad = _new_grad(g, create_graph)
    elif create_graph or x._grad._requires_grad:
        x._grad = x._grad + g
    else:
        x._grad._accumulate_(g)
    run_post_accumulate_hooks(x)


def grad(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph=False, only_inputs=True,
         allow_unused=None, is_grads_batched=False, materialize_grads=False):
    if materialize_grads and allow_unused is False:
        raise ValueError("Expected allow_unused to be True or not passed when materialize_grads=True, "
                         "but got: allow_unused=False.")
    allow_unused = bool(allow_unused) or materialize_grads
    outputs = (outputs,) if isinstance(outputs, Tensor) else tuple(outputs)
    inputs = (inputs,) if isinstance(inputs, Tensor) else tuple(inputs)
    if grad_outputs is None:
        grad_outputs = (None,) * len(outputs)
    elif isinstance(grad_outputs, Tensor):
        grad_outputs = (grad_outputs,)
    grad_outputs = tuple(grad_outputs)
    if len(grad_outputs) != len(outputs):
        raise RuntimeError(f"got {len(outputs)} tensors and {len(grad_outputs)} gradients")
    if retain_graph is None:
        retain_graph = create_graph
    grads = run_backward(outputs, grad_outputs, retain_graph, create_graph, inputs=inputs, accumulate=False)
    result = []
    for k, (x, g) in enumerate(zip(inputs, grads)):
        if g is None:
            if not allow_unused:
                raise RuntimeError(f"The differentiated Tensor at index {k} appears to not have been used in the "
                                   "graph. Set allow_unused=True if this is the desired behavior.")
            if materialize_grads:
                g = ops.zeros_like(x, requires_grad=create_graph)
        elif not create_graph:
            g = g.detach()
        result.append(g)
    return tuple(result)


def tensor_backward(self, gradient=None, retain_graph=None, create_graph=False, inputs=None):
    """``Tensor.backward``."""
    if gradient is not None and not isinstance(gradient, Tensor):
        raise TypeError(f"gradient must be a Tensor or None, but got {type(gradient).__name__}")
    backward(self, gradient, retain_graph, create_graph, inputs=inputs)
