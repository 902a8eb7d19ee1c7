"""How much of PyTorch's public API tgrad covers, namespace by namespace (README's drop-in table).

``python benchmarks/api_coverage.py`` prints, for torch, torch.nn, torch.nn.functional,
torch.optim (and its lr_scheduler), torch.linalg and torch.Tensor, the public names PyTorch has, how many tgrad
has under the same name, and the missing ones (``--missing``)."""
from __future__ import annotations

import argparse
import inspect

import torch
import torch.nn.functional

import tgrad
import tgrad.linalg
import tgrad.nn.functional
import tgrad.optim.lr_scheduler

SPACES = [
    ("torch", torch, tgrad),
    ("torch.nn", torch.nn, tgrad.nn),
    ("torch.nn.functional", torch.nn.functional, tgrad.nn.functional),
    ("torch.optim", torch.optim, tgrad.optim),
    ("torch.optim.lr_scheduler", torch.optim.lr_scheduler, tgrad.optim.lr_scheduler),
    ("torch.linalg", torch.linalg, tgrad.linalg),
    ("torch.Tensor", torch.Tensor, tgrad.Tensor),
]


def public_names(module):
    names = set()
    for name in dir(module):
        if name.startswith("_"):
            continue
        value = getattr(module, name, None)
        if inspect.ismodule(value):
            continue
        if module is torch and not (callable(value) or isinstance(value, torch.dtype)):
            continue
        names.add(name)
    return names


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--missing", action="store_true", help="list the names tgrad lacks")
    args = parser.parse_args()
    print("| namespace | PyTorch's public names | in tgrad | share |")
    print("|---|---:|---:|---:|")
    for label, theirs, ours in SPACES:
        names = public_names(theirs)
        have = {n for n in names if hasattr(ours, n)}
        print(f"| `{label}` | {len(names)} | {len(have)} | {len(have) / max(len(names), 1):.0%} |")
        if args.missing:
            print("  missing:", ", ".join(sorted(names - have)))


if __name__ == "__main__":
    main()
