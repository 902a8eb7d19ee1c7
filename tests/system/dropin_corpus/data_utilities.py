"""torch.utils.data beyond TensorDataset: a custom Dataset of dicts, random_split, Subset,
ConcatDataset, samplers and batch_sampler."""
# needs: torch.utils.data.ConcatDataset, torch.utils.data.WeightedRandomSampler, torch.utils.data.BatchSampler
import torch
from torch.utils.data import (BatchSampler, ConcatDataset, DataLoader, Dataset, RandomSampler, SequentialSampler,
                              Subset, WeightedRandomSampler, random_split)


class Squares(Dataset):
    def __init__(self, n, offset=0):
        self.n, self.offset = n, offset

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        v = i + self.offset
        return {"x": torch.tensor([float(v)]), "y": v * v, "name": f"item{v}"}


ds = Squares(10)
batch = next(iter(DataLoader(ds, batch_size=4)))
print(sorted(batch), batch["x"].shape, batch["y"], batch["y"].dtype, batch["name"])
g = torch.Generator().manual_seed(42)
train, val = random_split(ds, [7, 3], generator=g)
print(len(train), len(val), type(train).__name__, sorted(train.indices + val.indices) == list(range(10)))
a, b, c = random_split(range(10), [0.5, 0.3, 0.2], generator=torch.Generator().manual_seed(0))
print(len(a), len(b), len(c))
sub = Subset(ds, [9, 0, 3])
print([s["y"] for s in sub])
both = ConcatDataset([Squares(3), Squares(2, offset=100)])
print(len(both), both[3]["y"], both[-1]["name"], both.cumulative_sizes)
print(list(SequentialSampler(range(5))), len(RandomSampler(range(5))))
print(sorted(RandomSampler(range(6), generator=torch.Generator().manual_seed(1))) == list(range(6)))
print(list(BatchSampler(SequentialSampler(range(7)), batch_size=3, drop_last=False)))
print(list(BatchSampler(range(7), batch_size=3, drop_last=True)))
w = WeightedRandomSampler([0.0, 0.0, 1.0, 0.0], num_samples=5, replacement=True)
print(list(w), len(w))
loader = DataLoader(ds, batch_size=3, sampler=SequentialSampler(range(len(ds))))
print([b["y"].tolist() for b in loader])
loader = DataLoader(ds, batch_sampler=BatchSampler(SequentialSampler(ds), 4, drop_last=False))
print([len(b["name"]) for b in loader], len(loader))
tuples = DataLoader([(torch.ones(2) * i, i) for i in range(4)], batch_size=2)
print([(x.shape, y.tolist()) for x, y in tuples])
try:
    DataLoader(ds, batch_size=2, shuffle=True, sampler=SequentialSampler(ds))
except ValueError as e:
    print("ValueError:", "sampler" in str(e))
