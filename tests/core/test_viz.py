"""``tgrad.viz.make_dot``: the graph behind a tensor as Graphviz DOT, checked against PyTorch's graph.

Rendering needs Graphviz's ``dot`` program; those tests skip where it is not installed.
"""
import re
import shutil
from collections import Counter
from pathlib import Path

import pytest
import torch

import tgrad
from tgrad import nn

ROOT = Path(__file__).resolve().parents[2]
needs_dot = pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz's `dot` program is not installed")

NODE = re.compile(r'^\t(n\d+) \[label="((?:[^"\\]|\\.)*)"(?: fillcolor=(\w+))?\]$')
EDGE = re.compile(r"^\t(n\d+) -> (n\d+)( \[dir=none style=dotted\])?$")


def parse(source):
    """(labels by id, colors by id, solid edges, dotted edges) of a make_dot source."""
    labels, colors, edges, dotted = {}, {}, [], []
    lines = source.splitlines()
    assert lines[0] == "digraph {" and lines[-1] == "}"
    for line in lines[3:-1]:
        m = NODE.match(line)
        if m:
            assert m.group(1) not in labels, f"node {m.group(1)} declared twice"
            labels[m.group(1)] = m.group(2).replace("\\n", "\n")
            colors[m.group(1)] = m.group(3)
            continue
        m = EDGE.match(line)
        assert m, f"unexpected line {line!r}"
        (dotted if m.group(3) else edges).append((m.group(1), m.group(2)))
    return labels, colors, edges, dotted


def named_edges(source):
    """Solid edges between grad_fn nodes, by name, as a multiset."""
    labels, colors, edges, _ = parse(source)
    return Counter((labels[a], labels[b]) for a, b in edges if colors[a] is None and colors[b] is None)


def torch_edges(t):
    """The same multiset from PyTorch's own graph."""
    out, seen, stack = Counter(), set(), [t.grad_fn]
    while stack:
        fn = stack.pop()
        if fn in seen:
            continue
        seen.add(fn)
        for nxt, _ in fn.next_functions:
            if nxt is not None:
                out[(type(nxt).__name__, type(fn).__name__)] += 1
                stack.append(nxt)
    return out


def seed_graph(lib):
    x = lib.ones(2, 2, requires_grad=True)
    return x, (3 * (x + 2) ** 2).mean()


def test_seed_graph_nodes_and_edges_match_torch():
    x, out = seed_graph(tgrad)
    dot = tgrad.viz.make_dot(out, params={"x": x})
    labels, colors, edges, dotted = parse(dot.source)
    assert sorted(labels.values()) == sorted(["()", "MeanBackward0", "MulBackward0", "PowBackward0", "AddBackward0",
                                              "AccumulateGrad", "x\n (2, 2)"])
    by_label = {v: k for k, v in labels.items()}
    assert colors[by_label["()"]] == "darkolivegreen1" and colors[by_label["x\n (2, 2)"]] == "lightblue"
    assert (by_label["x\n (2, 2)"], by_label["AccumulateGrad"]) in edges
    assert (by_label["MeanBackward0"], by_label["()"]) in edges
    assert named_edges(dot.source) == torch_edges(seed_graph(torch)[1])
    assert not dotted  # saved tensors only on request


def test_docs_picture_is_current():
    x, out = seed_graph(tgrad)
    assert (ROOT / "docs" / "seed_graph.dot").read_text() == tgrad.viz.make_dot(out, params={"x": x}).source, (
        "docs/seed_graph.dot is stale: regenerate it and the .svg with tgrad.viz.make_dot (see the README)")


def test_shared_nodes_appear_once_and_edges_follow_next_functions():
    def build(lib):
        x = lib.tensor([2.0, 3.0], requires_grad=True)
        w = lib.tensor([1.0, 1.0], requires_grad=True)
        return (x * 3 + x * x).sum() + (x @ w).exp()
    src = tgrad.viz.make_dot(build(tgrad)).source
    labels, _, _, _ = parse(src)
    assert Counter(labels.values())["AccumulateGrad"] == 2  # one per leaf, however often it is used
    assert named_edges(src) == torch_edges(build(torch))


def test_params_name_the_leaves():
    tgrad.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 3), nn.Tanh(), nn.Linear(3, 1))
    out = model(tgrad.randn(5, 4)).sum()
    leaves = {v for v in parse(tgrad.viz.make_dot(out, params=dict(model.named_parameters())).source)[0].values()
              if "\n" in v}
    assert leaves == {"0.weight\n (3, 4)", "0.bias\n (3)", "2.weight\n (1, 3)", "2.bias\n (1)"}
    pairs = parse(tgrad.viz.make_dot(out, params=model.named_parameters()).source)[0].values()  # pairs work too
    assert leaves <= set(pairs)
    unnamed = {v for v in parse(tgrad.viz.make_dot(out).source)[0].values() if v.startswith("(")}
    assert {"(3, 4)", "(3)", "(1, 3)", "(1)", "()"} == unnamed


def test_show_saved_draws_saved_tensors_with_sizes():
    x = tgrad.ones(2, 3, requires_grad=True)
    y = x.exp()  # saves its result
    out = (y * x).sum()
    labels, colors, edges, dotted = parse(tgrad.viz.make_dot(out, show_saved=True).source)
    saved = sorted(labels[a] for a, _ in dotted)
    assert saved == ["_saved_other\n (2, 3)", "_saved_result\n (2, 3)", "_saved_self\n (2, 3)"]
    assert all(colors[a] == "orange" for a, _ in dotted)
    assert sorted(labels[b] for _, b in dotted) == ["ExpBackward0", "MulBackward0", "MulBackward0"]
    out.backward()  # the graph's saved tensors are freed: nothing left to draw
    assert not parse(tgrad.viz.make_dot(out, show_saved=True).source)[3]


def test_custom_function_multiple_outputs_and_deep_graphs():
    class Twice(tgrad.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g * 2

    x = tgrad.ones(3, requires_grad=True)
    a, b = Twice.apply(x), x.sum()
    labels, colors, _, dotted = parse(tgrad.viz.make_dot((a, b), show_saved=True).source)
    assert "TwiceBackward" in labels.values() and "SumBackward0" in labels.values()
    assert list(colors.values()).count("darkolivegreen1") == 2
    assert [labels[n] for n, _ in dotted] == ["saved_tensors[0]\n (3)"]
    deep = x
    for _ in range(3000):  # views launch no kernel; the walk must not recurse
        deep = deep.view(3)
    assert Counter(parse(tgrad.viz.make_dot(deep).source)[0].values())["ViewBackward0"] == 3000


def test_save_and_bad_input(tmp_path):
    _, out = seed_graph(tgrad)
    dot = tgrad.viz.make_dot(out)
    path = dot.save(tmp_path / "g.dot")
    assert Path(path).read_text() == dot.source == str(dot)
    with pytest.raises(TypeError, match="make_dot expects a tgrad.Tensor or a sequence of them, got list"):
        tgrad.viz.make_dot([[out]])


def test_render_without_dot_names_the_program(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))  # no `dot` reachable
    dot = tgrad.viz.make_dot(seed_graph(tgrad)[1])
    with pytest.raises(RuntimeError, match="needs Graphviz's `dot` program, which was not found on PATH"):
        dot.render(tmp_path / "g.svg")


@needs_dot
def test_render_svg_and_png(tmp_path):
    x, out = seed_graph(tgrad)
    dot = tgrad.viz.make_dot(out, params={"x": x})
    svg = Path(dot.render(tmp_path / "seed"))  # no extension: svg, appended
    assert svg.name == "seed.svg" and "<svg" in svg.read_text() and "PowBackward0" in svg.read_text()
    png = Path(dot.render(tmp_path / "seed.png"))  # the format from the extension
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "<svg" in dot._repr_svg_()
    with pytest.raises(RuntimeError, match="`dot -Tnot-a-format` failed"):
        dot.render(tmp_path / "seed.x", format="not-a-format")
