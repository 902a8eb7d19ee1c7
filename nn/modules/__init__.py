"""tgrad.nn modules: the Module base, containers, layers, activations and losses, one file per
concept as ``torch.nn.modules`` names them; this file only gathers their names."""
from . import activation, batchnorm, channelshuffle, container, conv, distance, dropout, flatten, instancenorm, linear, loss
from . import normalization, padding, pooling, resample, rnn, sparse, transformer
from .module import Module

__all__ = ["Module", *container.__all__, *flatten.__all__, *linear.__all__, *conv.__all__, *pooling.__all__,
           *resample.__all__, *padding.__all__, *sparse.__all__, *normalization.__all__, *batchnorm.__all__,
           *instancenorm.__all__, *dropout.__all__, *activation.__all__, *distance.__all__, *loss.__all__,
           *rnn.__all__, *transformer.__all__, *channelshuffle.__all__]

from .activation import *  # noqa: E402,F401,F403
from .batchnorm import *  # noqa: E402,F401,F403
from .channelshuffle import *  # noqa: E402,F401,F403
from .container import *  # noqa: E402,F401,F403
from .conv import *  # noqa: E402,F401,F403
from .distance import *  # noqa: E402,F401,F403
from .dropout import *  # noqa: E402,F401,F403
from .flatten import *  # noqa: E402,F401,F403
from .instancenorm import *  # noqa: E402,F401,F403
from .linear import *  # noqa: E402,F401,F403
from .loss import *  # noqa: E402,F401,F403
from .normalization import *  # noqa: E402,F401,F403
from .padding import *  # noqa: E402,F401,F403
from .pooling import *  # noqa: E402,F401,F403
from .resample import *  # noqa: E402,F401,F403
from .rnn import *  # noqa: E402,F401,F403
from .sparse import *  # noqa: E402,F401,F403
from .transformer import *  # noqa: E402,F401,F403
