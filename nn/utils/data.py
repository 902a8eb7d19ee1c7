"""``tgrad.utils.data``, as ``torch.utils.data``: datasets (``datasets.py``), samplers
(``samplers.py``), ``DataLoader`` and ``default_collate`` (``dataloader.py``) and its worker
processes (``workers.py``: ``get_worker_info``)."""
from .dataloader import DataLoader, default_collate
from .datasets import ConcatDataset, Dataset, IterableDataset, Subset, TensorDataset, random_split
from .samplers import (BatchSampler, RandomSampler, Sampler, SequentialSampler, SubsetRandomSampler,
                       WeightedRandomSampler)
from .workers import WorkerInfo, get_worker_info

__all__ = ["Dataset", "IterableDataset", "TensorDataset", "Subset", "ConcatDataset", "random_split", "DataLoader",
           "default_collate", "Sampler", "SequentialSampler", "RandomSampler", "SubsetRandomSampler",
           "WeightedRandomSampler", "BatchSampler", "get_worker_info", "WorkerInfo"]
