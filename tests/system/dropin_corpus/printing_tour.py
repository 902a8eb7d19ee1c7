"""What tutorials print: parameters, state dicts, optimizers, module reprs, losses, 0-d tensors and
their formatting."""
import torch
import torch.nn as nn

m = nn.Linear(2, 2)
with torch.no_grad():
    m.weight.copy_(torch.tensor([[0.5, -0.25], [1.0, 2.0]]))
    m.bias.fill_(0.1)
print(m.weight)
print(list(m.parameters())[1])
print(m.state_dict())
print(torch.optim.SGD(m.parameters(), lr=0.1, momentum=0.9))
print(torch.optim.Adam(m.parameters()))
x = torch.tensor([[1.0, 2.0]])
y = m(x)
print(y)
print(torch.zeros(2, dtype=torch.int32), torch.ones(2, dtype=torch.float64), torch.tensor([True, False]))
print(torch.tensor(3.5), torch.tensor(3.5).item(), f"{torch.tensor(2.25):.1f}", "{:.3f}".format(torch.tensor(0.5)))
print(torch.arange(6).view(2, 3).sum(0), torch.tensor([1.5, 2.5]).mean())
print(x.requires_grad, m.weight.requires_grad, m.weight.is_leaf, m.weight.grad)
print(repr(torch.float16), torch.get_default_dtype(), torch.randn(2).device)
print(nn.Sequential(nn.Linear(2, 3), nn.ReLU(), nn.Dropout(0.5), nn.Softmax(dim=1)))
print(nn.Conv2d(1, 6, 5), nn.MaxPool2d(2, 2), nn.BatchNorm2d(6), nn.Embedding(10, 3), nn.LayerNorm(4))
print(nn.CrossEntropyLoss(), nn.MSELoss(reduction="sum"))
loss = nn.CrossEntropyLoss()(torch.tensor([[1.0, 2.0, 0.5]]), torch.tensor([1]))
print(loss, type(loss.grad_fn).__name__)
print(torch.tensor([[1e-8, 1.0], [100.0, 12345.678]]), torch.tensor([1e10, 1.0]))
print(torch.tensor([float("nan"), float("inf"), -float("inf"), -0.0]))
