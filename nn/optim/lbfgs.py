"""L-BFGS (PyTorch's algorithm, after minFunc), with its closure and the optional strong-Wolfe line
search.

The parameters are handled as one flat vector (the concatenated gradients). The vector work --
dot products, ``axpy`` updates, the gradient's max and sum -- runs as tgrad ops (one kernel each;
adding the step to every parameter is one fused launch, ``tgrad.kernels.optim.updates``' axpy);
the scalar recurrences between them (``rho = 1 / y.s``, the two-loop coefficients, ``H_diag``) are
host numbers kept in the parameters' dtype (numpy float32 for float32 parameters), because PyTorch
keeps them as 0-d tensors of that dtype: the two agree to the last bit. The state stores them as
0-d tensors, as PyTorch does. The sequential two-loop recursion (each coefficient needs a full
reduction before the next update) does not fuse into one launch per step.
"""
from __future__ import annotations

import numpy as np

import tgrad
from tgrad.kernels.optim.step import fused_step
from tgrad.tensor import Tensor
from .lbfgs_line_search import strong_wolfe
from .hyperparameters import check_hyperparameters
from .optimizer import Optimizer

__all__ = ["LBFGS"]

_NUMPY = {tgrad.float32: np.float32, tgrad.float64: np.float64, tgrad.float16: np.float16}


class LBFGS(Optimizer):
    def __init__(self, params, lr=1, max_iter=20, max_eval=None, tolerance_grad=1e-7, tolerance_change=1e-9,
                 history_size=100, line_search_fn=None):
        check_hyperparameters(lr=lr)
        if max_eval is None:
            max_eval = max_iter * 5 // 4
        defaults = dict(lr=lr, max_iter=max_iter, max_eval=max_eval, tolerance_grad=tolerance_grad,
                        tolerance_change=tolerance_change, history_size=history_size, line_search_fn=line_search_fn)
        super().__init__(params, defaults)
        if len(self.param_groups) != 1:
            raise ValueError("LBFGS doesn't support per-parameter options (parameter groups)")
        self._params = self.param_groups[0]["params"]
        self._numel_cache = None

    # ------------------------------------------------------------------ the flat vector
    def _numel(self) -> int:
        if self._numel_cache is None:
            self._numel_cache = sum(p.numel() for p in self._params)
        return self._numel_cache

    def _scalar(self, x):
        """``x`` (a 0-d tensor or number) as a host number of the parameters' dtype."""
        if isinstance(x, Tensor):
            x = x.item()
        return _NUMPY.get(self._params[0].dtype, np.float64)(x)

    def _gather_flat_grad(self) -> Tensor:
        views = [tgrad.zeros(p.numel(), dtype=p.dtype, device=p.device) if p.grad is None else p.grad.reshape(-1)
                 for p in self._params]
        return tgrad.cat(views, 0) if len(views) > 1 else views[0].clone()

    def _add_grad(self, step_size, update: Tensor):
        """p += step_size * (p's slice of ``update``) for every parameter, in one launch."""
        pieces, offset = [], 0
        for p in self._params:
            numel = p.numel()
            pieces.append(update._data[offset:offset + numel].view(tuple(p.shape)))
            offset += numel
        fused_step("axpy", [p._data for p in self._params], pieces, [[] for _ in pieces], (float(step_size),))
        for p in self._params:
            p._version.value += 1

    def _clone_param(self):
        return [p.clone() for p in self._params]

    def _set_param(self, params_data):
        for p, data in zip(self._params, params_data):
            p.copy_(data)

    def _directional_evaluate(self, closure, x, t, d):
        self._add_grad(t, d)
        loss = float(closure())
        flat_grad = self._gather_flat_grad()
        self._set_param(x)
        return loss, flat_grad

    def _state_scalar(self, x):
        """A host number as the 0-d tensor PyTorch's state holds (ints and Python floats stay)."""
        if isinstance(x, np.generic):
            return tgrad.tensor(float(x), dtype=self._params[0].dtype)
        return x

    # ------------------------------------------------------------------ the step
    @tgrad.no_grad()
    def step(self, closure):
        """One L-BFGS step of up to ``max_iter`` iterations; ``closure`` re-evaluates the loss (and
        its gradients). Returns the loss of the first evaluation."""
        closure = tgrad.enable_grad()(closure)
        group = self.param_groups[0]
        lr, max_iter, max_eval = float(group["lr"]), group["max_iter"], group["max_eval"]
        tolerance_grad, tolerance_change = group["tolerance_grad"], group["tolerance_change"]
        line_search_fn, history_size = group["line_search_fn"], group["history_size"]
        state = self.state[self._params[0]]
        state.setdefault("func_evals", 0)
        state.setdefault("n_iter", 0)

        orig_loss = closure()
        loss = float(orig_loss)
        current_evals = 1
        state["func_evals"] += 1
        flat_grad = self._gather_flat_grad()
        if float(flat_grad.abs().max()) <= tolerance_grad:  # already optimal
            return orig_loss

        d, t = state.get("d"), state.get("t")
        old_dirs, old_stps = state.get("old_dirs"), state.get("old_stps")
        ro = [self._scalar(r) for r in state["ro"]] if "ro" in state else None
        H_diag = state.get("H_diag")  # noqa: N806 - PyTorch's name
        if isinstance(H_diag, Tensor):
            H_diag = self._scalar(H_diag)  # noqa: N806
        if isinstance(t, Tensor):
            t = self._scalar(t)
        prev_flat_grad, prev_loss = state.get("prev_flat_grad"), state.get("prev_loss")
        al = [None if a is None else self._scalar(a) for a in state["al"]] if "al" in state else None

        n_iter, opt_cond = 0, False
        while n_iter < max_iter:
            n_iter += 1
            state["n_iter"] += 1
            # the direction: steepest descent first, then the two-loop recursion over the history
            if state["n_iter"] == 1:
                d = flat_grad.neg()
                old_dirs, old_stps, ro, H_diag = [], [], [], 1  # noqa: N806
            else:
                y = flat_grad.sub(prev_flat_grad)
                s = d.mul(float(t))
                ys = self._scalar(y.dot(s))
                if ys > 1e-10:  # keep the pair only while the curvature condition holds
                    if len(old_dirs) == history_size:
                        old_dirs.pop(0)
                        old_stps.pop(0)
                        ro.pop(0)
                    old_dirs.append(y)
                    old_stps.append(s)
                    ro.append(self._scalar(1.0) / ys)
                    H_diag = ys / self._scalar(y.dot(y))  # noqa: N806
                if al is None:
                    al = [None] * history_size
                q = flat_grad.neg()
                for i in range(len(old_dirs) - 1, -1, -1):
                    al[i] = self._scalar(old_stps[i].dot(q)) * ro[i]
                    q.add_(old_dirs[i], alpha=-float(al[i]))
                d = r = q.mul(float(H_diag))
                for i in range(len(old_dirs)):
                    be_i = self._scalar(old_dirs[i].dot(r)) * ro[i]
                    r.add_(old_stps[i], alpha=float(al[i] - be_i))
            if prev_flat_grad is None:
                prev_flat_grad = flat_grad.clone()
            else:
                prev_flat_grad.copy_(flat_grad)
            prev_loss = loss
            # the step length: scaled by the gradient's l1 norm on the very first iteration
            if state["n_iter"] == 1:
                inverse = self._scalar(1.0) / self._scalar(flat_grad.abs().sum())
                t = inverse * self._scalar(lr) if inverse < 1.0 else min(1.0, inverse) * lr
            else:
                t = lr
            gtd = self._scalar(flat_grad.dot(d))
            if gtd > -tolerance_change:  # not a descent direction
                break

            ls_func_evals = 0
            if line_search_fn is not None:
                if line_search_fn != "strong_wolfe":
                    raise RuntimeError("only 'strong_wolfe' is supported")
                x_init = self._clone_param()

                def obj_func(x, t, d):
                    return self._directional_evaluate(closure, x, t, d)

                loss, flat_grad, t, ls_func_evals = strong_wolfe(obj_func, x_init, t, d, loss, flat_grad, gtd,
                                                                max_ls=max_eval - current_evals,
                                                                scalar=self._scalar)
                self._add_grad(t, d)
                opt_cond = float(flat_grad.abs().max()) <= tolerance_grad
            else:
                self._add_grad(t, d)
                if n_iter != max_iter:
                    # re-evaluate unless this was the last iteration (the next step() will)
                    loss = float(closure())
                    flat_grad = self._gather_flat_grad()
                    opt_cond = float(flat_grad.abs().max()) <= tolerance_grad
                    ls_func_evals = 1
            current_evals += ls_func_evals
            state["func_evals"] += ls_func_evals

            if n_iter == max_iter or current_evals >= max_eval or opt_cond:
                break
            if self._scalar(d.abs().max()) * abs(self._scalar(t)) <= tolerance_change:  # the step is too small
                break
            if abs(loss - prev_loss) < tolerance_change:  # the loss stopped changing
                break

        state["d"], state["t"] = d, self._state_scalar(t)
        state["old_dirs"], state["old_stps"] = old_dirs, old_stps
        state["ro"] = [self._state_scalar(r) for r in ro]
        state["H_diag"] = self._state_scalar(H_diag)
        state["prev_flat_grad"], state["prev_loss"] = prev_flat_grad, prev_loss
        if al is not None:
            state["al"] = [None if a is None else self._state_scalar(a) for a in al]
        return orig_loss
