"""tgrad.nn modules: the Module base, containers, layers, activations and losses."""
from .module import Module
from .container import Flatten, Identity, ModuleDict, ModuleList, Sequential, Unflatten
from .linear import Linear
from .conv import Conv2d
from .pooling import AvgPool2d, MaxPool2d
from .sparse import Embedding
from .normalization import LayerNorm
from .batchnorm import BatchNorm1d, BatchNorm2d
from .dropout import Dropout
from .activation import GELU, LeakyReLU, LogSoftmax, ReLU, Sigmoid, SiLU, Softmax, Tanh
from .rnn import GRU, GRUCell, LSTM, LSTMCell, RNN, RNNBase, RNNCell, RNNCellBase
from .transformer import (MultiheadAttention, Transformer, TransformerDecoder, TransformerDecoderLayer,
                          TransformerEncoder, TransformerEncoderLayer)
from .norms import GroupNorm, InstanceNorm1d, InstanceNorm2d, RMSNorm
from .loss import (BCELoss, BCEWithLogitsLoss, CrossEntropyLoss, HuberLoss, L1Loss, MSELoss, NLLLoss,
                   SmoothL1Loss)

__all__ = ["Module", "Sequential", "ModuleList", "ModuleDict", "Identity", "Flatten", "Unflatten", "Linear",
           "Conv2d", "MaxPool2d", "AvgPool2d", "Embedding", "LayerNorm", "BatchNorm1d", "BatchNorm2d", "Dropout",
           "ReLU", "LeakyReLU", "GELU", "SiLU", "Tanh", "Sigmoid", "Softmax", "LogSoftmax", "CrossEntropyLoss",
           "NLLLoss", "MSELoss", "L1Loss", "SmoothL1Loss", "HuberLoss", "BCELoss", "BCEWithLogitsLoss"]
__all__ += ["RNNBase", "RNN", "LSTM", "GRU", "RNNCellBase", "RNNCell", "LSTMCell", "GRUCell"]
__all__ += ["MultiheadAttention", "TransformerEncoderLayer", "TransformerEncoder", "TransformerDecoderLayer",
            "TransformerDecoder", "Transformer"]
__all__ += ["RMSNorm", "GroupNorm", "InstanceNorm1d", "InstanceNorm2d"]
