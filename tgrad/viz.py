"""See the graph: the tape behind a tensor as Graphviz DOT (``make_dot``), rendered with ``dot``.

Nodes, drawn as in torchviz: each grad_fn with its PyTorch name (``MulBackward0``); each leaf that
requires grad (light blue) with its name from ``params`` and its shape, feeding its
``AccumulateGrad`` node; the output tensors (green) with their shapes; with ``show_saved``, the
tensors each node saved for backward (orange, dotted edge) with their shapes. Edges point the way
the forward pass ran: from ``next_functions`` entries to the node that uses them.
"""
from __future__ import annotations

import os
import shutil
import subprocess

from .autograd.function import AccumulateGrad
from .autograd.saved import FREED
from .tensor import Tensor

_GRAPH_ATTRS = 'size="12,12"'
_NODE_ATTRS = 'style=filled shape=box align=left fontsize=10 ranksep=0.1 height=0.2 fontname=monospace'


class Dot:
    """DOT source text (``.source``) that can be saved or rendered to SVG/PNG by Graphviz."""

    def __init__(self, source: str):
        self.source = source

    def __str__(self):
        return self.source

    def save(self, path):
        """Write the DOT source to ``path``; returns ``path``."""
        with open(path, "w") as f:
            f.write(self.source)
        return path

    def pipe(self, format="svg") -> bytes:
        """The picture as bytes, made by Graphviz's ``dot`` program."""
        exe = shutil.which("dot")
        if exe is None:
            raise RuntimeError(
                "tgrad.viz: rendering needs Graphviz's `dot` program, which was not found on PATH. Install "
                "Graphviz (e.g. `apt-get install graphviz` or `brew install graphviz`), or save the DOT source "
                "with .save(path) and render it elsewhere.")
        proc = subprocess.run([exe, f"-T{format}"], input=self.source.encode(), capture_output=True)
        if proc.returncode != 0:
            raise RuntimeError(f"tgrad.viz: `dot -T{format}` failed: {proc.stderr.decode().strip()}")
        return proc.stdout

    def render(self, path, format=None):
        """Draw the graph into ``path`` as ``format`` ('svg' or 'png'; default: the path's extension,
        else svg, which is then appended to the path). Returns the path written."""
        ext = os.path.splitext(str(path))[1].lstrip(".").lower()
        if format is None:
            format = ext or "svg"
        if not ext:
            path = f"{path}.{format}"
        data = self.pipe(format)
        with open(path, "wb") as f:
            f.write(data)
        return path

    def _repr_svg_(self):  # drawn inline by Jupyter when Graphviz is installed
        return self.pipe("svg").decode()


def _quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def _shape(t) -> str:
    return "(" + ", ".join(str(s) for s in t.shape) + ")"


def _saved_of(node):
    """(label, tensor) for each tensor ``node`` saved, under PyTorch's accessor names for
    built-ins (``_saved_self``, ``_saved_other``, ``_saved_result``)."""
    saved = node.__dict__.get("_saved")
    if saved is None or saved is FREED:
        return []
    user = not node._forward_cls.builtin
    out, n_in, n_out = [], 0, 0
    for i, s in enumerate(saved):
        if s is None:
            continue
        if user:
            label = f"saved_tensors[{i}]"
        elif s.producer is not None:
            label = "_saved_result" if n_out == 0 else f"_saved_result{n_out}"
            n_out += 1
        else:
            label = ("_saved_self", "_saved_other")[n_in] if n_in < 2 else f"_saved_{n_in}"
            n_in += 1
        out.append((label, s.tensor))
    return out


def make_dot(tensors, params=None, show_saved=False) -> Dot:
    """The backward graph behind ``tensors`` (a tensor or a sequence of them) as DOT.

    ``params`` names leaves: a ``{name: tensor}`` dict (``dict(model.named_parameters())``) or an
    iterable of ``(name, tensor)`` pairs. ``show_saved`` adds the tensors saved for backward."""
    roots = [tensors] if isinstance(tensors, Tensor) else list(tensors)
    for t in roots:
        if not isinstance(t, Tensor):
            raise TypeError(f"make_dot expects a tgrad.Tensor or a sequence of them, got {type(t).__name__}")
    if params is None:
        params = {}
    names = {id(t): name for name, t in (params.items() if isinstance(params, dict) else params)}

    ids, drawn, lines = {}, set(), []

    def ident(obj, kind=""):
        key = (kind, id(obj))  # kind tells apart what one object draws: a node and each saved slot
        if key not in ids:
            ids[key] = f"n{len(ids)}"
        return ids[key]

    def var_label(t):
        name = names.get(id(t))
        return f"{name}\n {_shape(t)}" if name else _shape(t)

    def add_node(obj, label, color=None, kind=""):
        if ident(obj, kind) in drawn:
            return
        drawn.add(ident(obj, kind))
        fill = f" fillcolor={color}" if color else ""
        lines.append(f"\t{ident(obj, kind)} [label={_quote(label)}{fill}]")

    seen, stack = set(), []
    for t in roots:
        add_node(t, var_label(t), "darkolivegreen1")
        fn = t.grad_fn
        if fn is not None:
            lines.append(f"\t{ident(fn)} -> {ident(t)}")
            stack.append(fn)
    while stack:  # depth-first without recursion: graphs of deep networks are long
        fn = stack.pop()
        if id(fn) in seen:
            continue
        seen.add(id(fn))
        if isinstance(fn, AccumulateGrad):
            add_node(fn, type(fn).__name__)
            var = fn.variable
            add_node(var, var_label(var), "lightblue")
            lines.append(f"\t{ident(var)} -> {ident(fn)}")
        else:
            add_node(fn, type(fn).__name__)
            if show_saved:
                for label, t in _saved_of(fn):  # one box per saved slot, even when tensors are shared
                    add_node(fn, f"{label}\n {_shape(t)}", "orange", kind=label)
                    lines.append(f"\t{ident(fn, label)} -> {ident(fn)} [dir=none style=dotted]")
        for nxt, _ in fn.next_functions:
            if nxt is not None:
                lines.append(f"\t{ident(nxt)} -> {ident(fn)}")
                if id(nxt) not in seen:
                    stack.append(nxt)
    body = "\n".join(lines)
    return Dot(f"digraph {{\n\tgraph [{_GRAPH_ATTRS}]\n\tnode [{_NODE_ATTRS}]\n{body}\n}}\n")
