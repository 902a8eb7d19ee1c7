"""The op table: every elementwise differentiable op is one row.

A row names the op (``tgrad.<name>``, ``Tensor.<name>``, ``tgrad.nn.functional.<name>``), PyTorch's
node name, the forward formula and the derivative formula (``@triton.jit`` functions from
``kernels/math_*.py``, each written once), what the derivative reads, the op's parameters and
dtype rule, and whether an in-place form exists. From a row,
``ops/generated.py`` builds the Function, the function, the method and the in-place method; the
tests (``tests/ops/test_op_table.py``) check every row against PyTorch.

Adding an op: write its formula and derivative in ``kernels/``, add a row here.

Fields
- ``names``: public names, the first is the op's own (``("neg", "negative")``).
- ``node``: PyTorch's node name (``ExpBackward0``).
- ``forward``: ``y = f(x, p)``; with operands, ``f(x, other, ..., p)``.
- ``derivative``: ``g * dy/dx`` from what the op saved, then ``g`` and ``p`` (a tuple of gradients,
  one per operand, for more than one); None for ops whose derivative is zero almost everywhere.
- ``operands``: names of the tensor arguments after the input (binary ops: ``("other",)``).
- ``numbers``: argument position -> node name when a Python number stands there (PyTorch gives
  such calls their own node: ``fmod(x, 2.0)`` is FmodBackward0); a position missing here refuses
  numbers with PyTorch's TypeError.
- ``params``: ``((name, default), ...)`` number parameters, passed to the formulas as ``p``.
- ``constants``: fixed values appended to ``p`` (relu6 is hardtanh with (0, 6)).
- ``saves``: ``"x"`` the derivative reads the inputs (``f_bwd(x, ..., g, p)``), ``"y"`` the output
  (``f_bwd(y, g, p)``), ``""`` nothing (``f_bwd(g, p)``); ``"xy"`` the inputs and the output
  (``f_bwd(x, ..., y, g, p)``, as PyTorch's hypot: changing the output in place breaks backward).
- ``zero_edges``: PyTorch's backward is a function of the saved input with derivative zero
  (``threshold_backward`` and its kin): differentiating the gradient gives zeros there, not the
  "unused input" error that an op whose derivative only compares the input gives (clamp).
- ``dtypes``: ``"float"`` integer and bool inputs compute in the default float dtype; ``"keep"`` the
  result keeps the promoted input dtype (integers included); ``"floor"`` as keep, and an integer
  input is returned as a copy (it is its own floor).
- ``no_ints``: PyTorch has no integer (or bool) kernel: such inputs raise its NotImplementedError,
  naming this kernel (``"silu_cpu" not implemented for 'Long'``).
- ``no_bool``: ``(exception type, message)`` PyTorch raises for a bool input.
- ``node_constants``: node name -> the constants that node's formulas get instead of ``constants``
  (PyTorch's XlogyBackward2, for a number ``y``, zeroes the gradient at x = 0 when y is NaN too).
- ``reads``: for each input's gradient, the inputs its formula reads, the output counting as one
  more for ``saves="xy"`` (``fmod``: the input's gradient is g alone); an input is saved only when a gradient that is needed reads it, as PyTorch saves
  (so changing an unread one in place does not break backward). None: every gradient reads all.
- ``bool_backward``: ``(operand positions, (exception type, message)[, gradients])``: PyTorch computes
  the op with a bool operand at one of those positions, but its backward formula then negates or
  subtracts it and raises (``logaddexp(x, mask)``): so does tgrad's backward, when one of those
  gradients (default: any) is needed (``lerp``'s ``1 - weight`` is in the input's gradient only).
- ``inplace_node``: PyTorch's node name for the in-place form, where it has its own
  (``leaky_relu_`` records LeakyReluBackward1); ``inplace_derivative=False`` where PyTorch has no
  derivative for it (``asinh_``): its backward raises PyTorch's NotImplementedError.
- ``scales``: a linear op's derivative (add, sub): each operand's gradient is g times a constant,
  ``1`` or a parameter's name (``"-alpha"`` its negative); a gradient times 1 is g itself, no launch.
- ``plain``: the forward formula when every parameter has its default (add's alpha = 1: a formula
  that decodes no parameter runs fewer ops); ``bool_forward``: the one for a bool result (True +
  True is True, as PyTorch's add of bools).
- ``same_operand``: the derivative when both operands are one tensor (``x * x``): both gradients
  in one launch (they reach the same place, where they would be summed).
- ``number_edges``: a number operand still shows an edge ``(None, 0)`` in ``next_functions``
  (PyTorch wraps the number in a tensor: ``x + 2`` is AddBackward0 with two edges).
- ``keeps_result``: the output is saved too, though the derivative does not read it (PyTorch's
  PowBackward1 saves it: changing it in place breaks backward).
- ``keep_bools``: the formula takes bool operands as they are (arithmetic promotes them in the
  kernel); otherwise they are cast to the result dtype first.
- ``inplace``: a ``<name>_`` form exists (a method; also ``tgrad.<name>_`` where PyTorch has one).
- ``where``: namespaces: ``"torch"`` (tgrad.<name>), ``"Tensor"`` (a method), ``"F"``
  (tgrad.nn.functional.<name>, with PyTorch's ``inplace=False`` argument); ``()`` for a row whose
  public function is written by hand (its arguments need more than a row says: ``gelu``'s
  ``approximate``, ``round``'s ``decimals``, ``clamp``, ``pow``) around the row's Function.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from tgrad.kernels.elementwise import activations as A
from tgrad.kernels.elementwise import bessel as BES
from tgrad.kernels.elementwise import elementary as E
from tgrad.kernels.elementwise import special as SP
from tgrad.kernels import elementwise as M


@dataclass(frozen=True)
class Row:
    names: tuple
    node: str
    forward: object
    derivative: object = None
    operands: tuple = ()
    numbers: dict = field(default_factory=dict)
    params: tuple = ()
    constants: tuple = ()
    saves: str = "x"
    zero_edges: bool = False
    dtypes: str = "float"
    no_ints: str = None
    no_bool: tuple = None
    bool_backward: tuple = None
    reads: tuple = None
    node_constants: dict = field(default_factory=dict)
    inplace_node: str = None
    inplace_derivative: bool = True
    scales: tuple = None
    plain: object = None
    bool_forward: object = None
    same_operand: object = None
    number_edges: bool = False
    keeps_result: bool = False
    keep_bools: bool = False
    inplace: bool = True
    where: tuple = ("torch", "Tensor")

    @property
    def name(self):
        return self.names[0]


def unary(name, node, forward, derivative=None, **kw):
    return Row((name,) if isinstance(name, str) else name, node, forward, derivative, **kw)


def binary(name, node, forward, derivative, numbers=None, **kw):
    return Row((name,) if isinstance(name, str) else name, node, forward, derivative, operands=("other",), numbers=numbers or {}, **kw)


def bool_kernel(kernel):
    return NotImplementedError, f"\"{kernel}\" not implemented for 'Bool'"


BOOL_NEG = (RuntimeError, "Negation, the `-` operator, on a bool tensor is not supported. If you are trying to invert a "
            "mask, use the `~` or `logical_not()` operator instead.")
BOOL_SUB = (RuntimeError, "Subtraction, the `-` operator, with a bool tensor is not supported. If you are trying to "
            "invert a mask, use the `~` or `logical_not()` operator instead.")
BOOL_SUB_TWO = (RuntimeError, "Subtraction, the `-` operator, with two bool tensors is not supported. Use the `^` or "
                "`logical_xor()` operator instead.")
BOOL_HARDTANH = (RuntimeError, "Bool inputs not supported for hardtanh")
HAND_WRITTEN = ()
# add, sub, mul, div: Python numbers on either side; their in-place forms are methods.py's
ARITHMETIC = dict(dtypes="keep", number_edges=True, keep_bools=True, inplace=False, where=HAND_WRITTEN)


def either_side(node):
    """``numbers`` of an op taking a Python number at either position, with the same node."""
    return {0: node, 1: node}


F_ONLY = ("F",)          # activations PyTorch has only in torch.nn.functional
F_AND_TORCH = ("torch", "F")

ROWS = (
    # ------------------------------------------------------------------- the basic unary ops
    unary(("neg", "negative"), "NegBackward0", M.neg, M.neg_bwd, saves="", dtypes="keep", no_bool=BOOL_NEG),
    unary("abs", "AbsBackward0", M.abs_, M.abs_bwd, zero_edges=True, dtypes="keep", no_bool=bool_kernel("abs_cpu")),
    unary("exp", "ExpBackward0", M.exp, M.mul_bwd_y, saves="y"),
    unary("log", "LogBackward0", M.log, M.log_bwd),
    unary("sqrt", "SqrtBackward0", M.sqrt, M.sqrt_bwd, saves="y"),
    unary("rsqrt", "RsqrtBackward0", M.rsqrt, M.rsqrt_bwd, saves="y"),
    unary("reciprocal", "ReciprocalBackward0", M.reciprocal, M.reciprocal_bwd, saves="y"),
    unary("sin", "SinBackward0", M.sin, M.sin_bwd),
    unary("cos", "CosBackward0", M.cos, M.cos_bwd),
    unary("tanh", "TanhBackward0", M.tanh_, M.tanh_bwd, saves="y"),
    unary("sigmoid", "SigmoidBackward0", M.sigmoid, M.sigmoid_bwd, saves="y"),
    unary("relu", "ReluBackward0", M.relu, M.relu_bwd, saves="y", zero_edges=True, dtypes="keep",
          no_bool=(RuntimeError, "Boolean inputs not supported for relu")),
    unary("silu", "SiluBackward0", M.silu, M.silu_bwd, where=F_ONLY, no_ints="silu_cpu"),
    unary("softplus", "SoftplusBackward0", M.softplus, M.softplus_bwd, params=(("beta", 1.0), ("threshold", 20.0)),
          inplace=False, where=F_ONLY, no_ints="softplus_cpu"),
    unary("leaky_relu", "LeakyReluBackward0", M.leaky_relu, M.leaky_relu_bwd, zero_edges=True,
          params=(("negative_slope", 0.01),), where=F_ONLY, no_ints="leaky_relu_cpu", inplace_node="LeakyReluBackward1"),
    unary("elu", "EluBackward0", M.elu, M.elu_bwd, params=(("alpha", 1.0),), where=F_ONLY, no_ints="elu_cpu", inplace_node="EluBackward1"),
    unary("gelu", "GeluBackward0", M.gelu, M.gelu_bwd, where=HAND_WRITTEN),
    unary("gelu_tanh", "GeluBackward0", M.gelu_tanh, M.gelu_tanh_bwd, where=HAND_WRITTEN),
    unary("clamp", "ClampBackward1", M.clamp, M.clamp_bwd, params=(("min", None), ("max", None)), dtypes="keep",
          where=HAND_WRITTEN),
    unary("pow_scalar", "PowBackward0", M.pow_scalar, M.pow_scalar_bwd, params=(("exponent", None),),
          constants=(0.0,), where=HAND_WRITTEN),
    # x ** False: PyTorch's formula without its shortcut to a zero gradient (so NaN at x = 0)
    unary("pow_bool_exponent", "PowBackward0", M.pow_scalar, M.pow_scalar_bwd, params=(("exponent", None),),
          constants=(-1.0,), where=HAND_WRITTEN),
    unary("round", "RoundBackward0", M.round_, dtypes="keep", where=HAND_WRITTEN),
    unary("sign", "SignBackward0", M.sign, dtypes="keep"),
    unary("floor", "FloorBackward0", M.floor, dtypes="floor", no_bool=bool_kernel("floor_vml_cpu")),
    unary("ceil", "CeilBackward0", M.ceil, dtypes="floor", no_bool=bool_kernel("ceil_vml_cpu")),
    # ------------------------------------------------------------------- logs and exponentials
    unary("log1p", "Log1PBackward0", E.log1p_, E.log1p_bwd),
    unary("expm1", "Expm1Backward0", E.expm1_, E.expm1_bwd, saves="y"),
    unary("log2", "Log2Backward0", E.log2, E.log2_bwd),
    unary("log10", "Log10Backward0", E.log10, E.log10_bwd),
    unary("exp2", "Exp2Backward0", E.exp2, E.exp2_bwd, saves="y"),
    unary("erf", "ErfBackward0", E.erf, E.erf_bwd),
    # ------------------------------------------------------------------- special functions
    unary("lgamma", "LgammaBackward0", SP.lgamma, SP.lgamma_bwd),
    unary("digamma", "DigammaBackward0", SP.digamma, SP.digamma_bwd),
    unary("erfinv", "ErfinvBackward0", SP.erfinv, SP.erfinv_bwd),
    unary("i0", "I0Backward0", BES.i0, BES.i0_bwd),
    # polygamma(n, x): the order first (elementwise.py's function around the row)
    unary("polygamma", "PolygammaBackward0", SP.polygamma, SP.polygamma_bwd, params=(("n", None),),
          where=HAND_WRITTEN),
    # ------------------------------------------------------------------- trigonometric and hyperbolic
    unary("tan", "TanBackward0", E.tan, E.tan_bwd, saves="y"),
    unary(("asin", "arcsin"), "AsinBackward0", E.asin, E.asin_bwd),
    unary(("acos", "arccos"), "AcosBackward0", E.acos, E.acos_bwd),
    unary(("atan", "arctan"), "AtanBackward0", E.atan_, E.atan_bwd),
    unary("sinh", "SinhBackward0", E.sinh, E.sinh_bwd),
    unary("cosh", "CoshBackward0", E.cosh, E.cosh_bwd),
    unary(("asinh", "arcsinh"), "AsinhBackward0", E.asinh, E.asinh_bwd, inplace_node="AsinhBackward1", inplace_derivative=False),
    unary(("acosh", "arccosh"), "AcoshBackward0", E.acosh, E.acosh_bwd, inplace_node="AcoshBackward1", inplace_derivative=False),
    unary(("atanh", "arctanh"), "AtanhBackward0", E.atanh, E.atanh_bwd, inplace_node="AtanhBackward1", inplace_derivative=False),
    # ------------------------------------------------------------------- rounding and powers
    unary("square", "PowBackward0", A.square, A.square_bwd, dtypes="keep"),
    unary(("trunc", "fix"), "TruncBackward0", A.trunc, dtypes="floor", no_bool=bool_kernel("trunc_vml_cpu")),
    unary("frac", "FracBackward0", A.frac, A.pass_bwd, saves="", no_ints="frac_cpu"),
    # ------------------------------------------------------------------- clamps
    # a number bound keeps x on a tie (-0.0 vs 0.0), a tensor bound gives the bound (PyTorch's kernels)
    unary("clamp_min", "ClampMinBackward1", A.clamp_min_t, A.clamp_min_t_bwd, operands=("min",),
          numbers={1: "ClampMinBackward0"}, dtypes="keep", constants=(0.0,),
          node_constants={"ClampMinBackward0": (1.0,)}),
    unary("clamp_max", "ClampMaxBackward1", A.clamp_max_t, A.clamp_max_t_bwd, operands=("max",),
          numbers={1: "ClampMaxBackward0"}, dtypes="keep", constants=(0.0,),
          node_constants={"ClampMaxBackward0": (1.0,)}),
    unary("hardtanh", "HardtanhBackward0", A.hardtanh, A.hardtanh_bwd, zero_edges=True,
          params=(("min_val", -1.0), ("max_val", 1.0)), dtypes="keep", where=F_ONLY, no_bool=BOOL_HARDTANH),
    unary("relu6", "HardtanhBackward0", A.hardtanh, A.hardtanh_bwd, zero_edges=True,
          constants=(0.0, 6.0), dtypes="keep", where=F_ONLY, no_bool=BOOL_HARDTANH),
    # ------------------------------------------------------------------- activations
    unary("hardsigmoid", "HardsigmoidBackward0", A.hardsigmoid, A.hardsigmoid_bwd, zero_edges=True,
          where=F_ONLY, no_ints="hardsigmoid_cpu"),
    unary("hardswish", "HardswishBackward0", A.hardswish, A.hardswish_bwd, where=F_ONLY,
          no_ints="hardswish_cpu"),
    unary("mish", "MishBackward0", A.mish, A.mish_bwd, where=F_ONLY, no_ints="mish_cpu"),
    unary("logsigmoid", "LogSigmoidBackward0", A.logsigmoid, A.logsigmoid_bwd, inplace=False, where=F_ONLY,
          no_ints="log_sigmoid_cpu"),
    unary("selu", "EluBackward0", A.selu, A.selu_bwd, where=F_AND_TORCH, no_ints="elu_cpu", inplace_node="EluBackward1"),
    unary("celu", "CeluBackward0", A.celu, A.celu_bwd, params=(("alpha", 1.0),), where=F_AND_TORCH, no_ints="elu_cpu", inplace_node="CeluBackward1"),
    # ------------------------------------------------------------------- arithmetic
    # their public functions check alpha, bools and rounding modes first (elementwise.py)
    binary("add", "AddBackward0", M.add, None, numbers=either_side("AddBackward0"), params=(("alpha", 1),),
           scales=(1, "alpha"), plain=M.add_plain, bool_forward=M.logical_or, saves="", **ARITHMETIC),
    binary("sub", "SubBackward0", M.sub, None, numbers=either_side("SubBackward0"), params=(("alpha", 1),),
           scales=(1, "-alpha"), plain=M.sub_plain, saves="", **ARITHMETIC),
    binary("mul", "MulBackward0", M.mul, M.mul_bwd, numbers=either_side("MulBackward0"), reads=((1,), (0,)),
           same_operand=M.mul_self_bwd, **ARITHMETIC),
    binary("div", "DivBackward0", M.div, M.div_bwd, numbers=either_side("DivBackward0"), reads=((1,), (0, 1)),
           **dict(ARITHMETIC, dtypes="float")),
    # tensor ** tensor, and a number ** tensor (PowBackward2); integer results are pow's own (exact)
    binary("pow", "PowBackward1", M.pow_, M.pow_bwd, numbers={0: "PowBackward2"}, keeps_result=True, dtypes="keep",
           bool_backward=((1,), BOOL_SUB, (0,)), inplace=False, where=HAND_WRITTEN),
    # tensors only (PyTorch's TypeError for a number); a tie of -0.0 and 0.0 gives the input, where
    # PyTorch's CPU kernel gives other: not yet a public row, whose tests compare signed zeros
    binary("maximum", "MaximumBackward0", M.maximum, M.maximum_bwd, dtypes="keep", keep_bools=True, inplace=False,
           where=HAND_WRITTEN),
    binary("minimum", "MinimumBackward0", M.minimum, M.minimum_bwd, dtypes="keep", keep_bools=True, inplace=False,
           where=HAND_WRITTEN),
    # ------------------------------------------------------------------- binary
    binary(("atan2", "arctan2"), "Atan2Backward0", E.atan2, E.atan2_bwd, bool_backward=((0,), BOOL_NEG)),
    binary("hypot", "HypotBackward0", E.hypot, E.hypot_bwd, saves="xy", reads=((0, 2), (1, 2)),
           no_ints="hypot_cpu"),
    binary("xlogy", "XlogyBackward0", E.xlogy, E.xlogy_bwd, numbers={0: "XlogyBackward1", 1: "XlogyBackward2"},
           constants=(0.0,), node_constants={"XlogyBackward2": (1.0,)}),
    binary("logaddexp", "LogaddexpBackward0", E.logaddexp, E.logaddexp_bwd, inplace=False, no_ints="logaddexp_cpu",
           bool_backward=((0, 1), BOOL_SUB)),
    binary("fmod", "FmodBackward1", E.fmod, E.fmod_bwd, numbers={1: "FmodBackward0"}, dtypes="keep",
           reads=((), (0, 1))),
    binary("remainder", "RemainderBackward1", E.remainder, E.remainder_bwd, numbers={1: "RemainderBackward0"},
           reads=((), (0, 1)), dtypes="keep"),
    Row(("lerp",), "LerpBackward1", E.lerp, E.lerp_bwd, operands=("end", "weight"), numbers={2: "LerpBackward0"},
        reads=((2,), (2,), (0, 1)), bool_backward=((2,), BOOL_SUB_TWO, (0,)),
        no_ints="lerp_kernel_tensor"),
)

BY_NAME = {name: row for row in ROWS for name in row.names}
