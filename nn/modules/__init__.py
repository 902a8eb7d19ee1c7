"""tgrad.nn modules: the Module base, containers, layers, activations and losses."""
from .module import Module
from .container import Flatten, Identity, ModuleDict, ModuleList, Sequential, Unflatten
from .container_params import ParameterDict, ParameterList
from .linear import Linear
from .conv import Conv1d, Conv2d
from .conv_transpose import ConvTranspose1d, ConvTranspose2d
from .pooling import AvgPool2d, MaxPool2d
from .pooling_extra import (AdaptiveAvgPool1d, AdaptiveAvgPool2d, AdaptiveMaxPool1d, AdaptiveMaxPool2d, AvgPool1d,
                            MaxPool1d)
from . import resample as _resample
from .resample import *  # noqa: F401,F403  (Upsample, PixelShuffle, Unfold/Fold, Dropout1d/2d, padding layers)
from .sparse import Embedding
from .normalization import LayerNorm
from .batchnorm import BatchNorm1d, BatchNorm2d
from .dropout import Dropout
from .activation import GELU, LeakyReLU, LogSoftmax, ReLU, Sigmoid, SiLU, Softmax, Tanh
from .activation_extra import ELU, GLU, Hardswish, Mish, PReLU, Softmax2d, Softmin, Softplus
from . import activation_more as _activation_more
from .activation_more import *  # noqa: F401,F403  (ReLU6, SELU, CELU, Hardtanh, ..., CosineSimilarity, PairwiseDistance)
from .loss_extra import (CosineEmbeddingLoss, GaussianNLLLoss, KLDivLoss, MarginRankingLoss, PoissonNLLLoss,
                         TripletMarginLoss)
from .rnn import GRU, GRUCell, LSTM, LSTMCell, RNN, RNNBase, RNNCell, RNNCellBase
from .transformer import (MultiheadAttention, Transformer, TransformerDecoder, TransformerDecoderLayer,
                          TransformerEncoder, TransformerEncoderLayer)
from .norms import GroupNorm, InstanceNorm1d, InstanceNorm2d, RMSNorm
from .loss import (BCELoss, BCEWithLogitsLoss, CrossEntropyLoss, HuberLoss, L1Loss, MSELoss, NLLLoss,
                   SmoothL1Loss)

__all__ = ["Module", "Sequential", "ModuleList", "ModuleDict", "ParameterList", "ParameterDict", "Identity", "Flatten", "Unflatten", "Linear",
           "Conv2d", "MaxPool2d", "AvgPool2d", "Embedding", "LayerNorm", "BatchNorm1d", "BatchNorm2d", "Dropout",
           "ReLU", "LeakyReLU", "GELU", "SiLU", "Tanh", "Sigmoid", "Softmax", "LogSoftmax", "CrossEntropyLoss",
           "NLLLoss", "MSELoss", "L1Loss", "SmoothL1Loss", "HuberLoss", "BCELoss", "BCEWithLogitsLoss",
           "ELU", "Softplus", "PReLU", "Mish", "Hardswish", "Softmax2d", "Softmin", "GLU", "KLDivLoss",
           "CosineEmbeddingLoss", "MarginRankingLoss", "TripletMarginLoss", "GaussianNLLLoss", "PoissonNLLLoss"]
__all__ += ["Conv1d", "ConvTranspose1d", "ConvTranspose2d", "MaxPool1d", "AvgPool1d", "AdaptiveAvgPool1d",
            "AdaptiveAvgPool2d", "AdaptiveMaxPool1d", "AdaptiveMaxPool2d"] + _resample.__all__
__all__ += ["RNNBase", "RNN", "LSTM", "GRU", "RNNCellBase", "RNNCell", "LSTMCell", "GRUCell"]
__all__ += ["MultiheadAttention", "TransformerEncoderLayer", "TransformerEncoder", "TransformerDecoderLayer",
            "TransformerDecoder", "Transformer"]
__all__ += ["RMSNorm", "GroupNorm", "InstanceNorm1d", "InstanceNorm2d"]
__all__ += _activation_more.__all__
