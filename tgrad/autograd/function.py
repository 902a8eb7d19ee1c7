"""Graph nodes and ``Function``: the one mechanism behind every differentiable op.

Built-in ops and users' custom Functions are the same thing: a ``Function`` subclass with static
``forward(ctx, *args)`` and ``backward(ctx, *grads)``. ``apply`` runs forward with grad off and, when
an input requires grad, makes ``ctx`` the new outputs' ``grad_fn``: the context object *is* the
graph node (as in PyTorch), an instance of a per-Function node class named ``<Name>Backward``
(built-ins pin PyTorch's exact names, e.g. ``AddBackward0``).
"""
from __future__ import annotations

import inspect
import itertools
import weakref
from collections import OrderedDict

from ..modes import _inference_mode_enabled, _set as _set_grad_enabled, is_anomaly_enabled, is_grad_enabled
from .._dtype import _BY_TORCH
from ..tensor import Tensor
from .inplace_checks import check_inplace
from .removable_handle import RemovableHandle, add_hook
from . import anomaly_mode
from .saved import FREED, FREED_MESSAGE, Saved, op_name

_sequence = itertools.count()
_LAST = 2 ** 64 - 1  # PyTorch's UINT64_MAX: the sequence number of every AccumulateGrad



class Node:
    """A vertex of the backward graph. ``next_functions[i]`` is where the gradient of this node's
    i-th differentiable input goes: ``(node, output_nr)``, or ``(None, 0)`` for an input that needs none."""

    _next: tuple = ()
    _num_outputs = 1
    _pre_hooks = None   # {handle id: hook(grad_outputs)}, made by the first register_prehook
    _post_hooks = None  # {handle id: hook(grad_inputs, grad_outputs)}, made by the first register_hook
    _forward_cls = None  # a Function's node: the Function (a built-in's gradients go unchecked)
    _materialize_grads = True  # an output without a gradient gets zeros (set_materialize_grads)

    def __init__(self):
        self._seq = next(_sequence)
        self._tensor_hooks = {}      # output_nr -> {handle id: hook(grad)} registered through Tensor.register_hook
        self._retained = {}          # output_nr -> weakref of a tensor that called retain_grad()
        self._output_meta = ()       # (shape, dtype, device) per output: zero grads for unused outputs
        self._input_meta = ()        # (shape, dtype, device) or None per input: gradient validation
        self.metadata = {}
        if is_anomaly_enabled() and is_grad_enabled():
            anomaly_mode.record_forward_stack(self)

    @property
    def next_functions(self):
        return self._next

    def name(self):
        return type(self).__name__

    def register_prehook(self, fn) -> RemovableHandle:
        """``fn(grad_outputs) -> None or a tuple replacing them``, run before this node's backward
        (after the hooks of the tensors it produced); PyTorch's ``Node.register_prehook``."""
        if self._pre_hooks is None:
            self._pre_hooks = OrderedDict()
        return add_hook(self._pre_hooks, fn)

    def register_hook(self, fn) -> RemovableHandle:
        """``fn(grad_inputs, grad_outputs) -> None or a tuple replacing grad_inputs``, run after this
        node's backward; ``grad_inputs`` line up with ``next_functions``."""
        if self._post_hooks is None:
            self._post_hooks = OrderedDict()
        return add_hook(self._post_hooks, fn)

    def __repr__(self):
        return f"<{type(self).__name__} object at {hex(id(self))}>"

    def _release(self):
        pass


class AccumulateGrad(Node):
    """The node of a leaf that requires grad: sums incoming gradients into ``variable.grad``.
    One per leaf while any graph holds it (the leaf keeps only a weak reference)."""

    def __init__(self, variable):
        super().__init__()
        # PyTorch's engine runs a ready leaf's accumulation before any other ready node (its
        # sequence number is the largest): a backward that raises later has already filled .grad
        self._seq = _LAST
        self.variable = variable
        data = variable._data
        self._input_meta = ((data.shape, _BY_TORCH[data.dtype], data.device),)

    def name(self):
        return "torch::autograd::AccumulateGrad"


def accumulator_of(t) -> AccumulateGrad:
    node = t._accumulator() if t._accumulator is not None else None
    if node is None:
        node = AccumulateGrad(t)
        t._accumulator = weakref.ref(node)
    return node


def _view_requires_grad(t):
    """A view that did not require grad may since have taken its base's history, gained in place."""
    t._refresh_view()
    return t._requires_grad


def requires_grad(a) -> bool:
    """Whether ``a`` is a tensor an op's node would have an edge to."""
    return isinstance(a, Tensor) and (a._requires_grad or a._base is not None and _view_requires_grad(a))


def records(*args) -> bool:
    """Whether an op on ``args`` is recorded: grad mode is on and one of them requires grad. The
    rule ``Function.apply`` records by (inference mode aside, where apply records nothing); ops
    with a cheaper path for an unrecorded call (an in-place kernel writing straight into its
    target) ask here, so the decision stays with the autograd machinery."""
    return is_grad_enabled() and any(requires_grad(a) for a in args)


def edge_of(t):
    """Where the gradient of tensor ``t`` enters the graph."""
    if t._base is not None:  # a view whose base changed in place takes a fresh history first
        t._refresh_view()
    if t._grad_fn is not None:
        return (t._grad_fn, t._output_nr)
    if t._requires_grad:
        return (accumulator_of(t), 0)
    return (None, 0)


_OP_NAMES: dict = {}  # node class -> its op name (a node's name is its class's)


def _op_name_of(node):
    cls = type(node)
    name = _OP_NAMES.get(cls)
    if name is None:
        name = op_name(node)
        if cls.name is Node.name:  # the class's name, not one a subclass computes
            _OP_NAMES[cls] = name
    return name


def recording_backward() -> bool:
    """Whether a backward running now is itself recorded: ``create_graph`` runs the backward with
    grad mode on. A derivative formula then runs traced on Tensors instead of fused
    (``ops/formula.derivative``); the decision is made here, never in an op."""
    return is_grad_enabled()


class FunctionCtx:
    """What ``forward`` and ``backward`` receive as ``ctx``."""

    def save_for_backward(self, *tensors):
        for i, t in enumerate(tensors):
            if t is not None and not isinstance(t, Tensor):
                raise TypeError(f"save_for_backward can only save variables, but argument {i} is of type "
                                f"{type(t).__name__}")
        self._to_save = tensors

    @property
    def saved_tensors(self):
        saved = self.__dict__.get("_saved")  # (a node's missing attribute raises: costly per node)
        if saved is FREED:
            raise RuntimeError(FREED_MESSAGE)
        if saved is None:
            return tuple(self.__dict__.get("_to_save", ()))
        return tuple(None if s is None else s.unpack() for s in saved)

    def mark_non_differentiable(self, *tensors):
        self._non_differentiable = set(map(id, tensors))

    def mark_dirty(self, *tensors):
        self._dirty = set(map(id, tensors))

    def set_materialize_grads(self, value: bool):
        self._materialize_grads = bool(value)


class BackwardNode(Node, FunctionCtx):
    """Node class of a Function: ``apply`` calls the Function's ``backward`` with this node as ctx."""

    _forward_cls = None
    _materialize_grads = True
    _edge_pos = None  # built-ins: the argument positions PyTorch shows in next_functions

    def apply(self, *grads):
        # one way to differentiate: a backward that must be differentiable again (create_graph)
        # is written with differentiable ops or Functions (``fused_backward.FusedBackward``)
        return self._forward_cls.backward(self, *grads)

    @property
    def next_functions(self):
        # The engine keeps one edge per forward argument; a built-in op's public edges are only its
        # differentiable arguments (dims, dtypes and flags are not edges in PyTorch).
        if self._edge_pos is None:
            return self._next
        return tuple(self._next[i] for i in self._edge_pos)

    def __getattr__(self, name):
        # PyTorch's saved-variable accessors: _saved_self/_saved_other are the saved inputs,
        # _saved_result the saved output; after the graph is freed they raise the item 16 error.
        if name in ("_saved_self", "_saved_other", "_saved_result"):
            saved = self.__dict__.get("_saved")
            if saved is FREED:
                raise RuntimeError(FREED_MESSAGE)
            if saved:
                if name == "_saved_result":
                    picks = [s for s in saved if s is not None and s.producer is not None]
                else:
                    picks = [s for s in saved if s is None or s.producer is None]
                k = 1 if name == "_saved_other" else 0
                if k < len(picks):
                    return None if picks[k] is None else picks[k].unpack()
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def _release(self):
        if self.__dict__.get("_saved") is not None:
            self._saved = FREED


class _FunctionMeta(type):
    def __init__(cls, name, bases, attrs):
        super().__init__(name, bases, attrs)
        node_name = attrs.get("node_name") or f"{name}Backward"
        cls._backward_cls = type(node_name, (BackwardNode,), {"_forward_cls": cls})


class Function(metaclass=_FunctionMeta):
    """Base of differentiable operations: subclass with static ``forward`` and ``backward``, call
    with ``YourFunction.apply(*args)``."""

    edge_args = None  # built-ins: argument positions shown in next_functions (default: the tensors)
    builtin = False   # tgrad's own ops (BuiltinFunction): PyTorch's node names, no user-facing checks
    # built-ins: (PyTorch's op name, {position: argument name}) of tensor arguments the op has no
    # derivative for, refused (PyTorch's error) when the call is recorded and one requires grad
    no_grad_args = None

    def __init__(self, *args, **kwargs):
        pass

    def __call__(self, *args, **kwargs):
        raise RuntimeError(
            "Legacy autograd function with non-static forward method is deprecated. Please use new-style "
            "autograd function with static forward method. (Example: "
            "https://pytorch.org/docs/stable/autograd.html#torch.autograd.Function)")

    @staticmethod
    def forward(ctx, *args, **kwargs):
        raise NotImplementedError("You must implement the forward function for custom autograd.Function.")

    @staticmethod
    def backward(ctx, *grads):
        raise NotImplementedError(
            "You must implement either the backward or vjp method for your custom autograd.Function to use "
            "it with backward mode AD.")

    @classmethod
    def apply(cls, *args, **kwargs):
        builtin = cls.builtin
        if kwargs and not builtin:  # keyword arguments count as forward arguments (needs_input_grad, grads)
            bound = inspect.signature(cls.forward).bind(None, *args, **kwargs)
            args, kwargs = bound.args[1:], bound.kwargs
        needs = tuple([isinstance(a, Tensor) and (a._requires_grad or a._base is not None and _view_requires_grad(a))
                       for a in args])  # requires_grad(a) of each, inline: asked on every op
        enabled = is_grad_enabled()
        # inference mode records no graph even under a nested enable_grad()
        track = enabled and True in needs and not _inference_mode_enabled()
        if track and cls.no_grad_args is not None:
            _refuse_grad(cls.no_grad_args, needs)
        # a graph node only when something is recorded; otherwise forward gets a plain context
        ctx = cls._backward_cls() if track else FunctionCtx()
        ctx.needs_input_grad = needs
        if enabled or not builtin:  # (a built-in forward run with grad off leaves it off: nothing to switch)
            _set_grad_enabled(False)  # no_grad(), without building a context manager per op
            try:
                outputs = cls.forward(ctx, *args, **kwargs)
            finally:
                _set_grad_enabled(enabled)
        else:
            outputs = cls.forward(ctx, *args, **kwargs)
        if not track:
            if builtin:
                return outputs
            # a user's Function hands back a new tensor for an input returned unchanged, graph or not
            ids, dirty = {id(a) for a in args if isinstance(a, Tensor)}, ctx.__dict__.get("_dirty", ())
            fresh = tuple(o._alias() if isinstance(o, Tensor) and id(o) in ids and id(o) not in dirty else o
                          for o in (outputs if isinstance(outputs, tuple) else (outputs,)))
            return fresh if isinstance(outputs, tuple) else fresh[0]
        return record(cls, ctx, args, needs, outputs)


def record(cls, ctx, args, needs, outputs):
    """The graph of a recorded call of ``cls`` (ctx: its node, after forward): the node's edges to
    ``args`` (those ``needs`` marks), the inputs' and outputs' metadata, the outputs' history and
    what forward saved. Returns the outputs (inputs returned unchanged become new tensors)."""
    builtin = cls.builtin
    marks = ctx.__dict__  # what forward set, read from __dict__: a node's __getattr__ raises for a missing name
    if builtin and type(outputs) is Tensor and "_dirty" not in marks and "_non_differentiable" not in marks:
        fresh = _record_fresh(cls, ctx, args, needs, outputs, marks)
        if fresh is not None:
            return fresh
    single = not isinstance(outputs, tuple)
    outs = (outputs,) if single else outputs
    non_diff = marks.get("_non_differentiable", ())
    dirty = marks.get("_dirty", ())
    inputs_by_id = _link_inputs(cls, ctx, args, needs)
    new_outs = []
    for i, o in enumerate(outs):
        if isinstance(o, Tensor):
            if id(o) in inputs_by_id and id(o) not in dirty:
                o = o._alias()  # an input returned unchanged still gets a fresh output with history
            if id(o) in dirty:
                if not builtin and o._grad_fn is None and o._requires_grad and o._base is None:
                    raise RuntimeError("a leaf Variable that requires grad has been used in an in-place "
                                       "operation.")  # PyTorch's wording for a dirty leaf
                check_inplace(o)
            if id(outs[i]) in non_diff or not o._data.dtype.is_floating_point:
                o._requires_grad = False  # integer results (argmax, .long()) are never differentiable
            else:
                o._grad_fn, o._output_nr, o._requires_grad = ctx, i, True
        new_outs.append(o)
    ctx._num_outputs = len(outs)
    ctx._output_meta = tuple([(o._data.shape, _BY_TORCH[o._data.dtype], o._data.device, id(outs[i]) in non_diff)
                              if isinstance(o, Tensor) else None for i, o in enumerate(new_outs)])
    out_ids = {id(o): i for i, o in enumerate(outs) if isinstance(o, Tensor)}
    to_save = marks.get("_to_save")
    if to_save is not None:
        _save(ctx, to_save, new_outs, out_ids)
    return new_outs[0] if single else tuple(new_outs)


def _record_fresh(cls, ctx, args, needs, out, marks):
    """``record`` of a built-in's one output that is none of its inputs, forward having marked
    nothing dirty or non-differentiable (most recorded calls): the same graph, in one pass. None,
    having changed nothing, when ``out`` is one of ``args``."""
    if _link_inputs(cls, ctx, args, needs, out) is None:
        return None
    data = out._data
    if data.dtype.is_floating_point:
        out._grad_fn, out._output_nr, out._requires_grad = ctx, 0, True
    else:
        out._requires_grad = False  # integer results (argmax, .long()) are never differentiable
    ctx._num_outputs = 1
    ctx._output_meta = ((data.shape, _BY_TORCH[data.dtype], data.device, False),)
    to_save = marks.get("_to_save")
    if to_save is not None:
        _save(ctx, to_save, (out,), {id(out): 0})
    return out


def _link_inputs(cls, ctx, args, needs, out=None):
    """The node's edges to ``args`` (those ``needs`` marks) and the inputs' (shape, dtype, device), in
    one pass; returns the ids of the tensor arguments, or None, having set nothing, when ``out`` is
    one of them."""
    ids, edges, meta, tensor_pos = set(), [], [], []
    for i, a in enumerate(args):
        if isinstance(a, Tensor):
            if a is out:
                return None
            data = a._data
            ids.add(id(a))
            tensor_pos.append(i)
            edges.append(edge_of(a) if needs[i] else (None, 0))
            meta.append((data.shape, _BY_TORCH[data.dtype], data.device))
        else:
            edges.append((None, 0))
            meta.append(None)
    ctx._next = tuple(edges)
    # next_functions shows the tensor arguments only (PyTorch: non-tensors are not edges)
    ctx._edge_pos = cls.edge_args if cls.builtin and cls.edge_args is not None else tuple(tensor_pos)
    ctx._input_meta = tuple(meta)
    return ids


def _save(ctx, to_save, outs, out_ids):
    """What forward saved, with the versions it had: ``outs`` (the call's outputs, by ``out_ids``:
    id of what forward returned -> position) are saved as outputs of ``ctx``."""
    if any(t is not None and t._is_inference for t in to_save):  # only when saved (a + t is fine)
        raise RuntimeError(
            "Inference tensors cannot be saved for backward. Please do not use Tensors created in "
            "inference mode in computation tracked by autograd. To work around this, you can make a "
            "clone to get a normal tensor and use it in autograd, or use `tgrad.no_grad()` instead of "
            "`tgrad.inference_mode()`.")
    # Outputs are saved by what produced them: a later in-place change is reported as
    # "output 0 of Exp" even after the tensor's own grad_fn moved on.
    producer = _op_name_of(ctx)
    ctx._saved = tuple(None if t is None else
                       Saved(outs[out_ids[id(t)]], producer) if id(t) in out_ids else Saved(t)
                       for t in to_save)
    del ctx._to_save


def _refuse_grad(no_grad_args, needs):
    op, names = no_grad_args
    for i, name in names.items():
        if needs[i]:
            raise RuntimeError(f"The function '{op}' is not differentiable with respect to argument '{name}'. This "
                               "input cannot have requires_grad True.")


class BuiltinFunction(Function):
    """Base of tgrad's own ops."""

    builtin = True


class once_differentiable:  # pragma: no cover - kept for API parity; tgrad backward is always plain
    def __new__(cls, fn):
        return fn
