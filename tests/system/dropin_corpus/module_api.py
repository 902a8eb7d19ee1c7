"""nn.Module bookkeeping: named_parameters, children, modules, buffers, freezing, apply, repr."""
import torch
import torch.nn as nn


class Block(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.fc = nn.Linear(n, n)
        self.norm = nn.LayerNorm(n)
        self.register_buffer("scale", torch.ones(n))

    def forward(self, x):
        return self.norm(torch.relu(self.fc(x))) * self.scale


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(10, 6)
        self.blocks = nn.ModuleList([Block(6) for _ in range(2)])
        self.head = nn.Linear(6, 3, bias=False)
        self.extra = nn.Parameter(torch.zeros(3))

    def forward(self, idx):
        x = self.embed(idx)
        for b in self.blocks:
            x = b(x)
        return self.head(x) + self.extra


torch.manual_seed(0)
net = Net()
print(net)
print([n for n, _ in net.named_parameters()])
print([tuple(p.shape) for p in net.parameters()])
print(sum(p.numel() for p in net.parameters() if p.requires_grad))
print([n for n, _ in net.named_children()], len(list(net.modules())))
print([n for n, _ in net.named_buffers()])
for p in net.embed.parameters():
    p.requires_grad_(False)
print(sum(p.numel() for p in net.parameters() if p.requires_grad))
out = net(torch.tensor([[1, 2, 3], [4, 5, 6]]))
print(out.shape)
out.sum().backward()
print(net.embed.weight.grad, net.head.weight.grad.shape)
net.zero_grad()
print(net.head.weight.grad)


def init(m):
    if isinstance(m, nn.Linear):
        nn.init.constant_(m.weight, 0.01)
        if m.bias is not None:
            nn.init.zeros_(m.bias)


net.apply(init)
print(net.blocks[0].fc.weight[0, :3], net.blocks[1].fc.bias.abs().sum())
print(isinstance(net.head.weight, nn.Parameter), isinstance(net.head.weight, torch.Tensor))
net.double()
print(net.head.weight.dtype, net.blocks[0].scale.dtype)
print(net.training, net.eval().training, net.train().training)
