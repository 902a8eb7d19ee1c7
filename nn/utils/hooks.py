"""``tgrad.utils.hooks``, as ``torch.utils.hooks``: the handle every ``register_*hook`` returns, and
``BackwardHook``, which gives a module's full backward hooks the gradients of its inputs and outputs.

How a full backward hook sees those gradients (PyTorch's mechanism, on tgrad's ``Function``): the
module's tensor inputs and its tensor outputs each pass through one identity ``Function``
(``BackwardHookFunction``, whose node is ``BackwardHookFunctionBackward``). In backward, the
output node receives the gradients of the outputs first: it runs the backward pre-hooks (which may
replace them) and keeps them; the input node, reached once the module's own graph has run,
receives the gradients of the inputs and runs the full backward hooks with both (they may replace
the input gradients). Hence, as in PyTorch, ``forward`` receives views of its tensor inputs and
the caller views of the outputs.
"""
from __future__ import annotations

import warnings

import tgrad
from tgrad.autograd import Function
from tgrad.autograd.function import records
from tgrad.autograd.hooks import RemovableHandle
from tgrad.tensor import Tensor

__all__ = ["RemovableHandle", "unserializable_hook", "BackwardHook", "BackwardHookFunction"]


def unserializable_hook(f):
    """Mark ``f`` as a hook that is not serialized (PyTorch's decorator; tgrad never serializes hooks)."""
    f.__torch_unserializable__ = True
    return f


class BackwardHookFunction(Function):
    """Identity on tensors; its backward hands the gradients to ``ctx.on_backward(grads)``, set by
    :class:`BackwardHook` on the node, which returns the gradients to pass on."""

    @staticmethod
    def forward(ctx, *args):
        ctx.mark_non_differentiable(*[a for a in args if not a.requires_grad])
        # a gradient that did not arrive stays None: the hooks see None, as in PyTorch
        ctx.set_materialize_grads(False)
        return args

    @staticmethod
    def backward(ctx, *grads):
        on_backward = ctx.__dict__.get("on_backward")
        return tuple(grads) if on_backward is None else on_backward(ctx, grads)


def _zeros_where_none(ctx, grads):
    """The gradients a PyTorch node materializes before its backward: zeros for those that did not arrive."""
    return tuple(tgrad.zeros(meta[0], dtype=meta[1], device=meta[2]) if g is None and meta is not None else g
                 for g, meta in zip(grads, ctx._output_meta))


class BackwardHook:
    """The full backward (pre-)hooks of one call of ``module``: ``setup_input_hook(args)`` and
    ``setup_output_hook(result)`` wrap the tensors and return what forward and the caller get."""

    def __init__(self, module, user_hooks, user_pre_hooks):
        self.user_hooks = user_hooks
        self.user_pre_hooks = user_pre_hooks
        self.module = module
        self.grad_outputs = None
        self.n_outputs = -1
        self.output_tensors_index = None
        self.n_inputs = -1
        self.input_tensors_index = None

    @staticmethod
    def _pack_with_none(indices, values, size):
        res = [None] * size
        for idx, val in zip(indices, values):
            res[idx] = val
        return tuple(res)

    @staticmethod
    def _unpack_none(indices, values):
        return tuple(values[idx] for idx in indices)

    def _input_backward(self, ctx, grads):
        grad_input = _zeros_where_none(ctx, grads)
        if self.grad_outputs is None:
            # the gradient reached the inputs without passing through the outputs (double backward)
            return grad_input
        res = self._pack_with_none(self.input_tensors_index, grad_input, self.n_inputs)
        for hook in self.user_hooks:
            out = hook(self.module, res, self.grad_outputs)
            if out is None:
                continue
            if len(out) != len(res):
                raise RuntimeError("Backward hook returned an invalid number of grad_input, "
                                   f"got {len(out)}, but expected {len(res)}")
            res = out
        self.grad_outputs = None
        return self._unpack_none(self.input_tensors_index, res)

    def _output_backward(self, ctx, grads):
        self.grad_outputs = self._pack_with_none(self.output_tensors_index, grads, self.n_outputs)
        for pre_hook in self.user_pre_hooks:
            new = pre_hook(self.module, self.grad_outputs)
            if new is None:
                continue
            if len(new) != len(self.grad_outputs):
                raise RuntimeError("Backward pre hook returned an invalid number of grad_output, "
                                   f"got {len(new)}, but expected {len(self.grad_outputs)}")
            self.grad_outputs = new
        local_grad_outputs = self.grad_outputs
        if self.input_tensors_index is None:
            # no input requires grad: the full hooks fire here, with no input gradients
            warnings.warn("Full backward hook is firing when gradients are computed with respect to module outputs "
                          "since no inputs require gradients. See "
                          "https://docs.pytorch.org/docs/main/generated/torch.nn.Module.html#torch.nn.Module."
                          "register_full_backward_hook for more details.", stacklevel=5)
            grad_inputs = self._pack_with_none([], [], self.n_inputs)
            for hook in self.user_hooks:
                res = hook(self.module, grad_inputs, self.grad_outputs)
                if res is not None and not (isinstance(res, tuple) and all(el is None for el in res)):
                    raise RuntimeError("Backward hook for Modules where no input requires gradient should always "
                                       "return None or None for all gradients.")
            self.grad_outputs = None
        return tuple(local_grad_outputs[i] for i in self.output_tensors_index)

    def _apply_on_tensors(self, on_backward, args):
        tensors_idx = [i for i, a in enumerate(args) if isinstance(a, Tensor)]
        tensors = [args[i] for i in tensors_idx]
        if not records(*tensors):  # nothing recorded: no node to hook
            return args, None
        new_tensors = BackwardHookFunction.apply(*tensors)
        node = next((t.grad_fn for t in new_tensors if t.grad_fn is not None), None)
        if node is None:
            raise RuntimeError("Error while setting up backward hooks: no output of the hook function has a grad_fn")
        node.on_backward = on_backward
        arg_list = list(args)
        for idx, val in zip(tensors_idx, new_tensors):
            arg_list[idx] = val
        return (tuple(arg_list) if type(args) is tuple else type(args)(*arg_list)), tensors_idx

    def setup_input_hook(self, args):
        res, self.input_tensors_index = self._apply_on_tensors(self._input_backward, args)
        self.n_inputs = len(args)
        return res

    def setup_output_hook(self, args):
        is_tuple = isinstance(args, tuple)
        if not is_tuple:
            args = (args,)
        res, self.output_tensors_index = self._apply_on_tensors(self._output_backward, args)
        self.n_outputs = len(args)
        return res if is_tuple else res[0]
