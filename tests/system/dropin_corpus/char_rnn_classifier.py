"""Classifying names by their ending with an nn.RNN over one-hot characters (the char-RNN
classification tutorial, shrunk)."""
# needs: torch.nn.RNN
import torch
import torch.nn as nn

names = {0: ["anna", "maria", "sofia", "julia", "elena", "laura"], 1: ["peter", "oliver", "walter", "jasper",
                                                                        "victor", "homer"]}
letters = "abcdefghijklmnopqrstuvwxyz"


def line_to_tensor(line):
    t = torch.zeros(len(line), 1, len(letters))
    for i, ch in enumerate(line):
        t[i][0][letters.index(ch)] = 1
    return t


class RNN(nn.Module):
    def __init__(self, n_in, n_hidden, n_out):
        super().__init__()
        self.rnn = nn.RNN(n_in, n_hidden)
        self.h2o = nn.Linear(n_hidden, n_out)

    def forward(self, x):
        out, hidden = self.rnn(x)
        return nn.functional.log_softmax(self.h2o(hidden[0]), dim=1)


torch.manual_seed(0)
model = RNN(len(letters), 16, 2)
print(model)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
crit = nn.NLLLoss()
data = [(line_to_tensor(n), torch.tensor([k])) for k, ns in names.items() for n in ns]
x0 = data[0][0]
out, h = model.rnn(x0)
print(x0.shape, out.shape, h.shape, out.requires_grad)
for epoch in range(8):
    for x, y in data:
        opt.zero_grad()
        loss = crit(model(x), y)
        loss.backward()
        opt.step()
with torch.no_grad():
    acc = sum(int(model(x).argmax(1).item() == y.item()) for x, y in data) / len(data)
print("learned:", acc >= 0.8)
