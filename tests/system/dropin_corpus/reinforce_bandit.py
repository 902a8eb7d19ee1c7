"""REINFORCE on a 4-armed bandit: a softmax policy, Categorical sampling, log_prob times reward."""
# needs: torch.distributions.Categorical
import torch
import torch.nn as nn
from torch.distributions import Categorical

rewards = torch.tensor([0.1, 0.2, 0.9, 0.3])
torch.manual_seed(0)
logits = nn.Parameter(torch.zeros(4))
opt = torch.optim.Adam([logits], lr=0.1)
for episode in range(60):
    dist = Categorical(logits=logits)
    actions = dist.sample((16,))
    r = rewards[actions]
    loss = -(dist.log_prob(actions) * (r - r.mean())).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
print(actions.shape, actions.dtype, dist.log_prob(actions).grad_fn is not None)
probs = torch.softmax(logits.detach(), 0)
print("prefers the best arm:", int(probs.argmax().item()) == 2, probs[2].item() > 0.5)
d = Categorical(probs=torch.tensor([0.25, 0.25, 0.5]))
print("~ entropy", f"{d.entropy().item():.5f}", "atol=1e-5")
print("~ logp2", f"{d.log_prob(torch.tensor(2)).item():.5f}", "atol=1e-5")
print(d.probs, d.batch_shape, d.event_shape, d.sample().shape)
