"""What the op table's rows (``table.py``) become: for each row a Function (one per node name
the row can show), the public function, the method, the in-place forms and, for activations, the
``tgrad.nn.functional`` entry with PyTorch's ``inplace=`` argument.

The backward of a row runs its derivative formula fused (one launch); under ``create_graph`` the
same formula runs traced on Tensors (``formula.derivative``): the derivative is written once.
"""
from __future__ import annotations

import numbers

import torch

from .. import _dtype
from ..autograd.function import BuiltinFunction, Node
from ..tensor import Tensor
from . import registry
from .call_plans import PLANS, call_key, plan_call
from .common import as_operand, check_runnable, constant, result_type, wrap
from .formula import derivative, fused
from .inplace import check_no_internal_overlap, write_inplace
from .table import ROWS


def _float(dtype):
    return dtype if dtype.is_floating_point else _dtype.get_default_dtype()


class RowFunction(BuiltinFunction):
    """A row's op: ``apply(*operands, *params)``; a number among the operands is a 0-d constant
    (not an edge). Gradients come out in the broadcast shape: the engine sums them back."""

    row = None
    n_operands = 1      # the row's tensor operands (a number among them stands for a 0-d tensor)
    constants = ()      # the constants this node's formulas get after the call's parameters
    saves_result = False  # the in-place node PyTorch computes from its result (EluBackward1): saved too

    @classmethod
    def forward(cls, ctx, *args):
        row, n = cls.row, cls.n_operands
        operands = args[:n]
        if row.bool_backward is not None and any(isinstance(args[i], Tensor) and args[i].dtype is _dtype.bool
                                                 for i in row.bool_backward[0]):
            raising = row.bool_backward[2] if len(row.bool_backward) > 2 else range(n)
            if any(ctx.needs_input_grad[i] for i in raising):
                ctx.bool_error = row.bool_backward[1]
        params = args[n:]
        operands, out_dtype, formula, fparams = cls._decide(operands, params, isinstance(ctx, Node))
        check_runnable(*operands)
        ctx.params = params + cls.constants
        y = fused(formula, operands, out_dtype, fparams)
        ctx.same = row.same_operand is not None and args[0] is args[1]
        if isinstance(ctx, Node):  # only a recorded call's node keeps them
            cls._save(ctx, operands, y)
        return y

    @classmethod
    def _save(cls, ctx, operands, y):
        """What the node of a recorded call saves for its derivative."""
        row = cls.row
        if row.derivative is None:
            return
        saved = list(operands) + [y] if row.saves == "xy" else operands if row.saves == "x" else \
            [y] if row.saves == "y" else []
        if row.reads is not None and row.saves in ("x", "xy"):  # only what a needed gradient reads
            read = {k for i, need in enumerate(ctx.needs_input_grad[:cls.n_operands]) if need for k in row.reads[i]}
            saved = [t if i in read else None for i, t in enumerate(saved)]
        # in place, a node PyTorch computes from its result (EluBackward1) saves it too: changing
        # it later breaks backward, as in PyTorch
        ctx.save_for_backward(*saved, *((y,) if cls._saves_result_too() else ()))

    @classmethod
    def _decide(cls, operands, params, recorded):
        """What a call decides from its operands' metadata: (the operands as the kernel reads them,
        the result's dtype, the formula, the formula's parameters)."""
        row = cls.row
        dtype = result_type(*operands)
        out_dtype = _float(dtype) if row.dtypes == "float" else dtype
        for a in operands:
            if not isinstance(a, Tensor):  # a number: a 0-d tensor of the result's dtype
                ref = next(a for a in operands if isinstance(a, Tensor))
                if recorded:  # saved for backward: a tensor of its own
                    operands = [as_operand(a, ref, dtype) for a in operands]
                else:
                    operands = [a if isinstance(a, Tensor) else constant(a, dtype, ref._data.device) for a in operands]
                break
        # the kernel keeps bool operands bool (masks): a formula on numbers needs them cast first
        if not row.keep_bools and out_dtype is not _dtype.bool:
            operands = [a.to(out_dtype) if a.dtype is _dtype.bool else a for a in operands]
        if row.bool_forward is not None and out_dtype is _dtype.bool:
            return operands, out_dtype, row.bool_forward, ()
        if row.plain is not None and (not params or all(v == d for v, (_, d) in zip(params, row.params))):
            return operands, out_dtype, row.plain, ()
        return operands, out_dtype, row.forward, params + cls.constants

    @classmethod
    def apply(cls, *args):
        # a call of operands only replays what its signature decided (call_plans.py)
        key = call_key(cls, args) if len(args) == cls.n_operands else None
        if key is None:
            return super().apply(*args)
        plan = PLANS.get(key)
        if plan is not None:
            return plan(args)
        y = super().apply(*args)
        plan_call(cls, key, args)
        return y

    @classmethod
    def backward(cls, ctx, g):
        if ctx.__dict__.get("bool_error"):  # (a node's missing attribute raises: costly per node)
            exc, message = ctx.bool_error
            raise exc(message)
        n, needs = 1 + len(cls.row.operands), ctx.needs_input_grad
        if cls.row.scales is not None:  # linear: g times a constant per operand
            grads = tuple(cls._scaled(g, scale, ctx.params) for scale in cls.row.scales)
        elif ctx.same and all(needs[:2]):  # x * x: both gradients reach x, one launch for their sum
            grads = (derivative(cls.row.same_operand, cls._saved_for_formula(ctx, g)[:1], g), None)
        elif cls.row.derivative is None:  # zero almost everywhere (sign, floor, ...)
            grads = (wrap(torch.zeros(g._data.shape, dtype=g._data.dtype, device=g.device)),) * n
        else:  # fused, or traced when the gradient is recorded: the row's one derivative
            grads = derivative(cls.row.derivative, cls._saved_for_formula(ctx, g), g, ctx.params, n_out=n,
                               zero_edges=cls.row.zero_edges)
            grads = grads if n > 1 else (grads,)
        return tuple(d if need else None for d, need in zip(grads, needs)) + (None,) * (len(needs) - n)

    @classmethod
    def _scaled(cls, g, scale, params):
        if isinstance(scale, str):
            name = scale.lstrip("-")
            i = next(k for k, (p, _) in enumerate(cls.row.params) if p == name)
            value = params[i] if i < len(params) else cls.row.params[i][1]
            scale = -value if scale.startswith("-") else value
        return g if scale == 1 else g * scale

    @classmethod
    def _saves_result_too(cls):
        return (cls.saves_result or cls.row.keeps_result) and cls.row.saves == "x"

    @classmethod
    def _saved_for_formula(cls, ctx, g):
        """The formula's inputs: what was saved, with g standing in for an input no needed gradient
        reads (any tensor of a broadcastable shape: the outputs that read it are dropped)."""
        saved = ctx.saved_tensors
        saved = saved[:-1] if cls._saves_result_too() else saved
        return [g if t is None else t for t in saved]


FUNCTIONS = {}  # (row name, node name) -> Function class


def _row_attrs(row, node):
    """What a row's Function for ``node`` reads on every call, worked out once."""
    return {"n_operands": 1 + len(row.operands), "constants": row.node_constants.get(node, row.constants)}


def function_class(row, node=None):
    """The Function of ``row`` that shows ``node`` (its default node when None)."""
    node = node or row.node
    cls = FUNCTIONS.get((row.name, node))
    if cls is None:
        name = node[: -len("Backward0")] if node[-1].isdigit() else node
        attrs = {"node_name": node, "row": row, "__module__": __name__, **_row_attrs(row, node)}
        if row.number_edges:  # a number operand shows (None, 0), as PyTorch's wrapped number
            attrs["edge_args"] = tuple(range(1 + len(row.operands)))
        cls = FUNCTIONS[(row.name, node)] = type(name, (RowFunction,), attrs)
    return cls


class _NoDerivative(RowFunction):
    """The in-place form of an op whose in-place derivative PyTorch does not implement."""

    @classmethod
    def backward(cls, ctx, g):
        raise NotImplementedError(f"the derivative for 'inplace version of {cls.row.name}' is not implemented.")


def _inplace_class(row):
    if row.inplace_derivative:
        cls = function_class(row, row.inplace_node)
        cls.saves_result = True
        return cls
    key = (row.name, row.inplace_node)
    if key not in FUNCTIONS:
        FUNCTIONS[key] = type(row.inplace_node[:-1], (_NoDerivative,), {"node_name": row.inplace_node, "row": row,
                                                                      "__module__": __name__,
                                                                      **_row_attrs(row, row.inplace_node)})
    return FUNCTIONS[key]


def _arg_names(row):
    return ("input",) + row.operands + tuple(name for name, _ in row.params)


def _bind(row, args, kwargs):
    """The call's arguments in the row's order, defaults filled (PyTorch's errors for the rest)."""
    names = _arg_names(row)
    if len(args) > len(names):
        raise TypeError(f"{row.name}() takes {len(names)} arguments but {len(args)} were given")
    values = list(args) + [None] * (len(names) - len(args))
    given = [True] * len(args) + [False] * (len(names) - len(args))
    for key, value in kwargs.items():
        if key not in names:
            raise TypeError(f"{row.name}() got an unexpected keyword argument '{key}'")
        i = names.index(key)
        if given[i]:
            raise TypeError(f"{row.name}() got multiple values for argument '{key}'")
        values[i], given[i] = value, True
    defaults = dict(row.params)
    for i, name in enumerate(names):
        if not given[i]:
            if name not in defaults:
                raise TypeError(f"{row.name}() missing required argument '{name}' (pos {i + 1})")
            values[i] = defaults[name]
    return values


def _select(row, operands):
    """The Function for these operands: numbers standing for tensors pick the row's number node."""
    numbers_at = [i for i, a in enumerate(operands) if not isinstance(a, Tensor)]
    if not numbers_at:
        return function_class(row)
    names = _arg_names(row)
    for i in numbers_at:
        a = operands[i]
        if not isinstance(a, numbers.Number) or len(numbers_at) > 1 or i not in row.numbers:
            raise TypeError(f"{row.name}(): argument '{names[i]}' (position {i + 1}) must be Tensor, not "
                            f"{type(a).__name__}")
    return function_class(row, row.numbers[numbers_at[0]])


def _refuse(row, operands):
    """PyTorch's error for a dtype it has no kernel for (after promotion)."""
    dtype = result_type(*operands)
    if dtype.is_floating_point:
        return
    if dtype is _dtype.bool and row.no_bool is not None:
        raise row.no_bool[0](row.no_bool[1])
    if row.no_ints is not None:
        raise NotImplementedError(f'"{row.no_ints}" not implemented for \'{dtype.scalar_type}\'')


def make_function(row):
    n = 1 + len(row.operands)
    defaults = tuple(default for _, default in row.params)
    integer_copy = row.dtypes == "floor"
    checks_dtype = row.no_ints is not None or row.no_bool is not None

    plain = []  # the row's Function for tensor operands, once made

    def op(*args, **kwargs):
        if kwargs or len(args) != n + len(defaults):
            args = _bind(row, args, kwargs) if kwargs or len(args) < n or len(args) > n + len(defaults) else \
                list(args) + list(defaults[len(args) - n:])
        x = args[0]
        if n == 1 and isinstance(x, Tensor) and x._data.dtype.is_floating_point:
            # one float tensor: nothing below refuses or copies it (a small op's time is its layers)
            if not plain:
                plain.append(function_class(row))
            return plain[0].apply(*args)
        cls = _select(row, args[:n])  # PyTorch's TypeError for a refused number comes first
        if checks_dtype:
            _refuse(row, args[:n])
        if integer_copy and isinstance(x, Tensor) and not x.dtype.is_floating_point:
            if x.dtype is _dtype.bool:  # PyTorch's type and text
                raise NotImplementedError(f'"{row.name}" not implemented for \'Bool\'')
            return x.clone()  # an integer is its own floor (a copy, as torch)
        return cls.apply(*args)

    op.__name__ = op.__qualname__ = row.name
    op.__doc__ = f"tgrad.{row.name}: {row.forward.fn.__name__} of kernels/{'/'.join(row.forward.fn.__module__.split('.')[2:])}" \
                 f" (PyTorch's {row.node})"
    return op


def check_cast(self, *others, division=False):
    """PyTorch refuses an in-place result that the target's dtype cannot hold (a float into a Long)."""
    rt = result_type(self, *others)
    if division and not rt.is_floating_point:
        rt = _dtype.get_default_dtype()
    if _dtype.category(rt) > _dtype.category(self.dtype):
        raise RuntimeError(f"result type {rt.scalar_type} can't be cast to the desired output type "
                           f"{self.dtype.scalar_type}")


def make_inplace(row, op):
    n = 1 + len(row.operands)

    def op_(self, *args, **kwargs):
        if row.dtypes == "floor" and isinstance(self, Tensor) and not self.dtype.is_floating_point and not args:
            if self.dtype is _dtype.bool:
                raise NotImplementedError(f'"{row.name}" not implemented for \'Bool\'')
            check_no_internal_overlap(self)  # PyTorch checks the write it then has nothing to do for
            return self  # an integer is its own floor: nothing to write
        values = _bind(row, (self,) + args, kwargs)
        others, params = values[1:n], values[n:]
        cls = _select(row, values[:n])  # PyTorch's TypeError for a number it refuses
        # before the kernel's refusal, as PyTorch; an op with no integer kernel does not promote them
        check_cast(self, *others, division=row.dtypes == "float" and row.no_ints is None)
        if row.no_ints is not None or row.no_bool is not None:
            _refuse(row, values[:n])
        if row.inplace_node is not None and cls is function_class(row):
            cls = _inplace_class(row)
        return write_inplace(self, lambda t, *o: cls.apply(t, *o, *params), *others, formula=row.forward,
                             params=tuple(params) + cls.constants)

    op_.__name__ = op_.__qualname__ = row.name + "_"
    return op_


def make_nn_functional(row, op, op_):
    if op_ is None:
        return op

    n_params = len(row.params)

    def functional(input, *args, inplace=False, **kwargs):  # noqa: A002
        # PyTorch's order: the input, the parameters, then ``inplace`` (positional too)
        if len(args) > n_params + len(row.operands):
            *args, inplace = args
        return op_(input, *args, **kwargs) if inplace else op(input, *args, **kwargs)

    functional.__name__ = functional.__qualname__ = row.name
    return functional


def build(row):
    """Register ``row``'s public names; returns (function, in-place function or None)."""
    op = make_function(row)
    op_ = make_inplace(row, op) if row.inplace else None
    in_torch, in_tensor, in_nn = "torch" in row.where, "Tensor" in row.where, "F" in row.where
    registry.op(*row.names, function=in_torch or in_nn and row.name in _CORE_ACTIVATIONS, method=in_tensor)(op)
    if in_nn:
        registry.op(row.name, function=False, method=False, nn_functional=True)(make_nn_functional(row, op, op_))
    if op_ is not None:
        registry.op(*(name + "_" for name in row.names), function=in_torch or in_nn, method=in_tensor,
                    nn_functional=in_nn)(op_)
    return op, op_


# activations tgrad has always had at top level too (tgrad.silu ...), beside tgrad.nn.functional
_CORE_ACTIVATIONS = {"silu", "softplus", "leaky_relu", "elu"}

PUBLIC = {row.name: build(row) for row in ROWS if row.where}
