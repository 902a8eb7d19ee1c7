"""The blitz tutorial walks the graph of an nn.Linear output: AddmmBackward0 whose inputs are the
bias's AccumulateGrad, the input's node (None for a plain tensor) and the weight's TBackward0."""
import torch
import torch.nn as nn

m = nn.Linear(2, 3)
x = torch.ones(4, 2)
y = m(x)
print(type(y.grad_fn).__name__)
print([type(f).__name__ if f is not None else None for f, _ in y.grad_fn.next_functions])
t = y.grad_fn.next_functions[2][0]
print([type(f).__name__ for f, _ in t.next_functions])
loss = y.sum()
print(type(loss.grad_fn).__name__, type(loss.grad_fn.next_functions[0][0]).__name__)
