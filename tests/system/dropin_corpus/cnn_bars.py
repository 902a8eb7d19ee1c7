"""A small CNN (Conv2d, MaxPool2d, Flatten, Linear) telling horizontal from vertical bars in 8x8
images, in the style of the CIFAR-10 tutorial's Net."""
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim

rng = np.random.default_rng(5)
imgs, labels = [], []
for i in range(24):
    img = rng.normal(0, 0.1, (1, 8, 8))
    k = rng.integers(1, 7)
    if i % 2:
        img[0, k, :] += 1.0
    else:
        img[0, :, k] += 1.0
    imgs.append(img)
    labels.append(i % 2)
X = torch.tensor(np.stack(imgs), dtype=torch.float32)
Y = torch.tensor(labels)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 4, 3, padding=1)
        self.pool = nn.MaxPool2d(2, 2)
        self.conv2 = nn.Conv2d(4, 8, 3)
        self.fc1 = nn.Linear(8 * 2 * 2, 16)
        self.fc2 = nn.Linear(16, 2)

    def forward(self, x):
        x = self.pool(F.relu(self.conv1(x)))
        x = F.relu(self.conv2(x))
        x = torch.flatten(x, 1)
        x = F.relu(self.fc1(x))
        return self.fc2(x)


torch.manual_seed(0)
net = Net()
print(net)
params = list(net.parameters())
print(len(params), params[0].size())
out = net(X[:1])
print(out.shape, out.grad_fn.__class__.__name__)
criterion = nn.CrossEntropyLoss()
optimizer = optim.Adam(net.parameters(), lr=0.04)
for epoch in range(12):
    optimizer.zero_grad()
    loss = criterion(net(X), Y)
    loss.backward()
    optimizer.step()
print("conv1.bias.grad", net.conv1.bias.grad.shape)
with torch.no_grad():
    acc = (net(X).argmax(1) == Y).float().mean().item()
print("learned:", acc >= 0.9)
print("~ acc", f"{acc:.3f}", "atol=0.1")
