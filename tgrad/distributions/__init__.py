"""``tgrad.distributions``, as ``torch.distributions``: Normal, Bernoulli, Categorical, Uniform,
MultivariateNormal, Independent and ``kl_divergence`` for their pairs. Samples come from tgrad's
Philox generator (``tgrad.manual_seed``); ``rsample`` is reparameterised, so gradients flow to the
parameters through it, as through ``log_prob`` and ``entropy``."""
from .distribution import Distribution
from .normal import Normal
from .bernoulli import Bernoulli
from .categorical import Categorical
from .uniform import Uniform
from .multivariate_normal import MultivariateNormal
from .independent import Independent
from .kl import kl_divergence, register_kl
from . import bernoulli, categorical, distribution, independent, kl, multivariate_normal, normal, uniform  # noqa

__all__ = ["Distribution", "Normal", "Bernoulli", "Categorical", "Uniform", "MultivariateNormal", "Independent",
           "kl_divergence", "register_kl"]
