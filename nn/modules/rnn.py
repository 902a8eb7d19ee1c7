"""``RNN``, ``LSTM``, ``GRU`` and their cells, with PyTorch's parameter names, shapes, defaults
(every parameter ~ U[-1/sqrt(H), 1/sqrt(H)]) and call conventions.

Each layer and direction projects its whole input with one matmul (``F.linear``) and runs the
recurrence as one Function (``nn/functional/rnn.py``: per step a recurrent matmul and one fused
gate kernel, forward and backward). Packed input (``nn.utils.rnn.PackedSequence``) runs padded
in the packing's sorted order with per-row lengths: a finished row keeps its state, so h_n is
each sequence's last state, and the reverse direction starts at each sequence's own end.
"""
from __future__ import annotations

import math
import numbers
import warnings

import tgrad
from tgrad.kernels import rnn as KR
from .. import functional as F
from .. import init
from ..functional.rnn import rnn_layer
from ..parameter import Parameter
from ..nn_utils.rnn import PackedSequence
from .module import Module

__all__ = ["RNNBase", "RNN", "LSTM", "GRU", "RNNCellBase", "RNNCell", "LSTMCell", "GRUCell"]


class RNNBase(Module):
    def __init__(self, mode, input_size, hidden_size, num_layers=1, bias=True, batch_first=False, dropout=0.0,
                 bidirectional=False, proj_size=0, device=None, dtype=None):
        super().__init__()
        if not isinstance(dropout, numbers.Number) or not 0 <= dropout <= 1 or isinstance(dropout, bool):
            raise ValueError("dropout should be a number in range [0, 1] representing the probability of an "
                             "element being zeroed")
        if dropout > 0 and num_layers == 1:
            warnings.warn("dropout option adds dropout after all but last recurrent layer, so non-zero dropout "
                          f"expects num_layers greater than 1, but got dropout={dropout} and num_layers={num_layers}")
        if not isinstance(hidden_size, int) or isinstance(hidden_size, bool):
            raise TypeError(f"hidden_size should be of type int, got: {type(hidden_size).__name__}")
        if hidden_size <= 0:
            raise ValueError("hidden_size must be greater than zero")
        if num_layers <= 0:
            raise ValueError("num_layers must be greater than zero")
        if proj_size < 0:
            raise ValueError("proj_size should be a positive integer or zero to disable projections")
        if proj_size >= hidden_size:
            raise ValueError("proj_size has to be smaller than hidden_size")
        if proj_size and mode != "LSTM":
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        self.mode, self.input_size, self.hidden_size = mode, input_size, hidden_size
        self.num_layers, self.bias, self.batch_first = num_layers, bias, batch_first
        self.dropout, self.bidirectional, self.proj_size = float(dropout), bidirectional, proj_size
        gates = {"LSTM": 4, "GRU": 3}.get(mode, 1) * hidden_size
        real_hidden = proj_size or hidden_size
        dirs = 2 if bidirectional else 1
        self._flat_weights_names = []
        for layer in range(num_layers):
            for d in range(dirs):
                sfx = f"_l{layer}" + ("_reverse" if d else "")
                fan = input_size if layer == 0 else real_hidden * dirs
                shapes = [("weight_ih", (gates, fan)), ("weight_hh", (gates, real_hidden))]
                if bias:
                    shapes += [("bias_ih", (gates,)), ("bias_hh", (gates,))]
                if proj_size:
                    shapes.append(("weight_hr", (proj_size, hidden_size)))
                for name, shape in shapes:
                    setattr(self, name + sfx, Parameter(tgrad.empty(*shape, device=device, dtype=dtype)))
                    self._flat_weights_names.append(name + sfx)
        self.reset_parameters()

    def reset_parameters(self):
        stdv = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for p in self.parameters():
            init.uniform_(p, -stdv, stdv)

    @property
    def _flat_weights(self):
        return [getattr(self, n) for n in self._flat_weights_names]

    @property
    def all_weights(self):
        per = len(self._flat_weights_names) // (self.num_layers * (2 if self.bidirectional else 1))
        w = self._flat_weights
        return [w[i:i + per] for i in range(0, len(w), per)]

    def flatten_parameters(self):
        pass  # cuDNN's packed weight buffer; tgrad's kernels read the parameters in place

    def extra_repr(self):
        s = f"{self.input_size}, {self.hidden_size}"
        if self.proj_size:
            s += f", proj_size={self.proj_size}"
        if self.num_layers != 1:
            s += f", num_layers={self.num_layers}"
        if self.bias is not True:
            s += f", bias={self.bias}"
        if self.batch_first is not False:
            s += f", batch_first={self.batch_first}"
        if self.dropout:
            s += f", dropout={self.dropout}"
        if self.bidirectional is not False:
            s += f", bidirectional={self.bidirectional}"
        return s

    def _kernel_mode(self):
        return KR.MODES[self.mode]

    def _check_hidden(self, h, expected, what):
        if tuple(h.shape) != expected:
            raise RuntimeError(f"Expected {what} size {expected}, got {list(h.shape)}")

    def _run(self, x, hx, lengths):
        """x (T, B, F) time-major; hx = (h0, c0) each (layers*dirs, B, H') or None."""
        dirs = 2 if self.bidirectional else 1
        B = x.shape[1]
        H, P = self.hidden_size, self.proj_size or self.hidden_size
        lstm = self.mode == "LSTM"
        if hx is None:
            h0 = tgrad.zeros(self.num_layers * dirs, B, P, dtype=x.dtype, device=x.device)
            c0 = tgrad.zeros(self.num_layers * dirs, B, H, dtype=x.dtype, device=x.device) if lstm else None
        else:
            h0, c0 = hx
        mode = self._kernel_mode()
        per = len(self._flat_weights_names) // (self.num_layers * dirs)
        weights = self._flat_weights
        hn, cn = [], []
        layer_in = x
        for layer in range(self.num_layers):
            outs = []
            for d in range(dirs):
                k = layer * dirs + d
                w = weights[k * per:(k + 1) * per]
                w_ih, w_hh = w[0], w[1]
                b_ih, b_hh = (w[2], w[3]) if self.bias else (None, None)
                w_hr = w[-1] if self.proj_size else None
                xg = F.linear(layer_in, w_ih, b_ih)
                out, h, c = rnn_layer(mode, xg, w_hh, b_hh, h0[k], c0[k] if lstm else None, lengths, d == 1, w_hr)
                outs.append(out)
                hn.append(h)
                cn.append(c)
            layer_in = outs[0] if dirs == 1 else tgrad.cat(outs, 2)
            if self.dropout and self.training and layer < self.num_layers - 1:
                layer_in = F.dropout(layer_in, self.dropout, True)
        h_n = tgrad.stack(hn, 0)
        return layer_in, h_n, (tgrad.stack(cn, 0) if lstm else None)

    def forward(self, input, hx=None):
        name = {"RNN_TANH": "RNN", "RNN_RELU": "RNN"}.get(self.mode, self.mode)
        lstm = self.mode == "LSTM"
        dirs = 2 if self.bidirectional else 1
        H, P = self.hidden_size, self.proj_size or self.hidden_size
        packed = isinstance(input, PackedSequence)
        dtype, weight_dtype = (input.data if packed else input).dtype, self.weight_ih_l0.dtype
        if dtype is not weight_dtype:
            raise ValueError(f"RNN input dtype ({dtype}) does not match weight dtype ({weight_dtype}). Convert "
                             f"input: input.to({weight_dtype}), or convert model: model.to({dtype})")
        lengths = None
        if packed:
            data, batch_sizes, sorted_indices, unsorted_indices = input
            sizes = [int(v) for v in batch_sizes.tolist()]
            T, B = len(sizes), sizes[0]
            starts = [0]
            for s in sizes:
                starts.append(starts[-1] + s)
            rows = [starts[t] + b if b < sizes[t] else starts[-1] for t in range(T) for b in range(B)]
            pad = tgrad.zeros(1, data.shape[1], dtype=data.dtype, device=data.device)
            x = tgrad.cat([data, pad], 0).index_select(0, tgrad.tensor(rows, dtype=tgrad.int64, device=data.device))
            x = x.reshape(T, B, data.shape[1])
            lengths = tgrad.tensor([sum(1 for s in sizes if s > b) for b in range(B)], dtype=tgrad.int64,
                                   device=data.device)._data
            batched = True
        else:
            if input.ndim not in (2, 3):
                raise ValueError(f"{name}: Expected input to be 2D or 3D, got {input.ndim}D tensor instead")
            batched = input.ndim == 3
            x = input if batched else input.unsqueeze(1)
            if batched and self.batch_first:
                x = x.transpose(0, 1)
            B = x.shape[1]
            sorted_indices = unsorted_indices = None
        if x.shape[-1] != self.input_size:
            raise RuntimeError(f"input.size(-1) must be equal to input_size. Expected {self.input_size}, "
                               f"got {x.shape[-1]}")
        if hx is not None:
            hs = tuple(hx) if lstm else (hx, None)
            if lstm and (not isinstance(hx, (tuple, list)) or len(hx) != 2):
                raise RuntimeError("LSTM: expected hx to be a tuple (h_0, c_0)")
            if not batched:
                if hs[0].ndim != 2:
                    raise RuntimeError(f"For unbatched 2-D input, hx should also be 2-D but got {hs[0].ndim}-D "
                                       f"tensor")
                hs = tuple(None if h is None else h.unsqueeze(1) for h in hs)
            elif hs[0].ndim != 3:
                raise RuntimeError(f"For batched 3-D input, hx should also be 3-D but got {hs[0].ndim}-D tensor")
            if sorted_indices is not None:
                hs = tuple(None if h is None else h.index_select(1, sorted_indices) for h in hs)
            self._check_hidden(hs[0], (self.num_layers * dirs, B, P), "hidden[0]" if lstm else "hidden")
            if lstm:
                self._check_hidden(hs[1], (self.num_layers * dirs, B, H), "hidden[1]")
            hx = hs
        out, h_n, c_n = self._run(x, hx, lengths)
        if packed:
            rows = [t * B + b for t in range(T) for b in range(sizes[t])]
            out = out.reshape(T * B, out.shape[-1]).index_select(
                0, tgrad.tensor(rows, dtype=tgrad.int64, device=out.device))
            out = PackedSequence(out, batch_sizes, sorted_indices, unsorted_indices)
            if unsorted_indices is not None:
                h_n = h_n.index_select(1, unsorted_indices)
                c_n = None if c_n is None else c_n.index_select(1, unsorted_indices)
        elif not batched:
            out, h_n = out.squeeze(1), h_n.squeeze(1)
            c_n = None if c_n is None else c_n.squeeze(1)
        elif self.batch_first:
            out = out.transpose(0, 1)
        return (out, (h_n, c_n)) if lstm else (out, h_n)


class RNN(RNNBase):
    def __init__(self, *args, **kwargs):
        if "proj_size" in kwargs:
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        nonlinearity = kwargs.pop("nonlinearity", "tanh")
        if len(args) > 3:
            nonlinearity = args[3]
            args = args[:3] + args[4:]
        if nonlinearity not in ("tanh", "relu"):
            raise ValueError(f"Unknown nonlinearity '{nonlinearity}'. Select from 'tanh' or 'relu'.")
        self.nonlinearity = nonlinearity
        super().__init__("RNN_TANH" if nonlinearity == "tanh" else "RNN_RELU", *args, **kwargs)

    def extra_repr(self):
        s = super().extra_repr()
        return s + (f", nonlinearity={self.nonlinearity}" if self.nonlinearity != "tanh" else "")


class LSTM(RNNBase):
    def __init__(self, *args, **kwargs):
        super().__init__("LSTM", *args, **kwargs)


class GRU(RNNBase):
    def __init__(self, *args, **kwargs):
        if "proj_size" in kwargs:
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        super().__init__("GRU", *args, **kwargs)


class RNNCellBase(Module):
    def __init__(self, input_size, hidden_size, bias, num_chunks, device=None, dtype=None):
        super().__init__()
        self.input_size, self.hidden_size, self.bias = input_size, hidden_size, bias
        self.weight_ih = Parameter(tgrad.empty(num_chunks * hidden_size, input_size, device=device, dtype=dtype))
        self.weight_hh = Parameter(tgrad.empty(num_chunks * hidden_size, hidden_size, device=device, dtype=dtype))
        if bias:
            self.bias_ih = Parameter(tgrad.empty(num_chunks * hidden_size, device=device, dtype=dtype))
            self.bias_hh = Parameter(tgrad.empty(num_chunks * hidden_size, device=device, dtype=dtype))
        else:
            self.register_parameter("bias_ih", None)
            self.register_parameter("bias_hh", None)
        self.reset_parameters()

    def reset_parameters(self):
        stdv = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for p in self.parameters():
            init.uniform_(p, -stdv, stdv)

    def extra_repr(self):
        s = f"{self.input_size}, {self.hidden_size}"
        if self.bias is not True:
            s += f", bias={self.bias}"
        if getattr(self, "nonlinearity", "tanh") != "tanh":
            s += f", nonlinearity={self.nonlinearity}"
        return s

    def _step(self, mode, input, h, c, name):
        if input.ndim not in (1, 2):
            raise ValueError(f"{name}: Expected input to be 1D or 2D, got {input.ndim}D instead")
        batched = input.ndim == 2
        x = input if batched else input.unsqueeze(0)
        if x.shape[1] != self.input_size:
            raise RuntimeError(f"input has inconsistent input_size: got {x.shape[1]} expected {self.input_size}")
        B = x.shape[0]
        states = []
        for k, s in enumerate((h, c)):
            if s is None:
                states.append(tgrad.zeros(B, self.hidden_size, dtype=x.dtype, device=x.device))
                continue
            if s.ndim != input.ndim:
                raise RuntimeError(f"{name}: Expected hidden to be {input.ndim}D, got {s.ndim}D instead")
            s = s if batched else s.unsqueeze(0)
            if s.shape[0] != B:
                raise RuntimeError(f"Input batch size {B} doesn't match hidden{k} batch size {s.shape[0]}")
            if s.shape[1] != self.hidden_size:
                raise RuntimeError(f"hidden{k} has inconsistent hidden_size: got {s.shape[1]}, expected "
                                   f"{self.hidden_size}")
            states.append(s)
        xg = F.linear(x, self.weight_ih, self.bias_ih).unsqueeze(0)
        lstm = mode == KR.MODES["LSTM"]
        _, h1, c1 = rnn_layer(mode, xg, self.weight_hh, self.bias_hh, states[0], states[1] if lstm else None)
        if not batched:
            h1, c1 = h1.squeeze(0), None if c1 is None else c1.squeeze(0)
        return h1, c1


class RNNCell(RNNCellBase):
    def __init__(self, input_size, hidden_size, bias=True, nonlinearity="tanh", device=None, dtype=None):
        if nonlinearity not in ("tanh", "relu"):
            raise ValueError(f"Unknown nonlinearity: {nonlinearity}")
        self.nonlinearity = nonlinearity
        super().__init__(input_size, hidden_size, bias, 1, device, dtype)

    def forward(self, input, hx=None):
        mode = KR.MODES["RNN_TANH" if self.nonlinearity == "tanh" else "RNN_RELU"]
        return self._step(mode, input, hx, None, "RNNCell")[0]


class LSTMCell(RNNCellBase):
    def __init__(self, input_size, hidden_size, bias=True, device=None, dtype=None):
        super().__init__(input_size, hidden_size, bias, 4, device, dtype)

    def forward(self, input, hx=None):
        h, c = (None, None) if hx is None else hx
        return self._step(KR.MODES["LSTM"], input, h, c, "LSTMCell")


class GRUCell(RNNCellBase):
    def __init__(self, input_size, hidden_size, bias=True, device=None, dtype=None):
        super().__init__(input_size, hidden_size, bias, 3, device, dtype)

    def forward(self, input, hx=None):
        return self._step(KR.MODES["GRU"], input, hx, None, "GRUCell")[0]
