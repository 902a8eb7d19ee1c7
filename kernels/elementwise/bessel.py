"""The modified Bessel functions of the first kind ``i0`` and ``i1`` (``i0``'s derivative), as
PyTorch's CPU kernels compute them (Cephes): e^|x| times a Chebyshev series in |x|/2 - 2 up to 8,
e^|x| / sqrt|x| times one in 32/|x| - 2 beyond; i1 odd, i0 even. In float64 (the coefficients are
PyTorch's double tables; a float32 result is rounded once)."""
import triton
import triton.language as tl

__all__ = ["i0", "i0_bwd", "i0_of", "i1_of"]


@triton.jit
def _chebyshev_step(b0, b1, y, c):
    """One step of Clenshaw's recurrence (Cephes' chbevl): (b0, b1, b2) <- (y b0 - b1 + c, b0, b1)."""
    return y * b0 - b1 + c, b0, b1


@triton.jit
def _i0e_small(y):
    """e^-x I0(x) on [0, 8], of y = x/2 - 2."""
    b0 = tl.zeros_like(y) + -4.4153416464793395e-18
    b1 = tl.zeros_like(y)
    b2 = b1
    b0, b1, b2 = _chebyshev_step(b0, b1, y, 3.3307945188222384e-17)
    b0, b1, b2 = _chebyshev_step(b0, b1, y, -2.431279846547955e-16)
    b0, b1, b2 = _chebyshev_step(b0, b1, y, 1.715391285555133e-15)
    b0, b1, b2 = _chebyshev_step(b0, b1, y, -1.1685332877993451e-14)
    b0, b1, b2 = _chebyshev_step(b0, b1, y, 7.676185498604936e-14)
    b0, b1, b2 = _chebyshev_step(b0, b1, y, -4.856446783111929e-13)
    b0, b1, b2 = _chebyshev_step(b0, b1, y, 2.95505266312964e-12)
    b0, b1, b2 = _chebyshev_step(b0, b1, y, -1.726826291441556e-11)
    b0, b1, b2 = _chebyshev_step(b0, b1, y, 9.675809035373237e-11)
    b0, b1, b2 = _chebyshev_step(b0, b1, y, -5.189795601635263e-10)
    b0, b1, b2 = _chebyshev_step(b0, b1, y, 2.6598237246823866e-09)
    b0, b1, b2 = _chebyshev_step(b0, b1, y, -1.300025009986248e-08)
    b0, b1, b2 = _chebyshev_step(b0, b1, y, 6.046995022541919e-08)
    b0, b1, b2 = _chebyshev_step(b0, b1, y, -2.670793853940612e-07)
    b0, b1, b2 = _chebyshev_step(b0, b1, y, 1.1173875391201037e-06)
    b0, b1, b2 = _chebyshev_step(b0, b1, y, -4.4167383584587505e-06)
    b0, b1, b2 = _chebyshev_step(b0, b1, y, 1.6448448070728896e-05)
    b0, b1, b2 = _chebyshev_step(b0, b1, y, -5.754195010082104e-05)
    b0, b1, b2 = _chebyshev_step(b0, b1, y, 0.00018850288509584165)
    b0, b1, b2 = _chebyshev_step(b0, b1, y, -0.0005763755745385824)
    b0, b1, b2 = _chebyshev_step(b0, b1, y, 0.0016394756169413357)
    b0, b1, b2 = _chebyshev_step(b0, b1, y, -0.004324309995050576)
    b0, b1, b2 = _chebyshev_step(b0, b1, y, 0.010546460394594998)
    b0, b1, b2 = _chebyshev_step(b0, b1, y, -0.02373741480589947)
    b0, b1, b2 = _chebyshev_step(b0, b1, y, 0.04930528423967071)
    b0, b1, b2 = _chebyshev_step(b0, b1, y, -0.09490109704804764)
    b0, b1, b2 = _chebyshev_step(b0, b1, y, 0.17162090152220877)
    b0, b1, b2 = _chebyshev_step(b0, b1, y, -0.3046826723431984)
    b0, b1, b2 = _chebyshev_step(b0, b1, y, 0.6767952744094761)
    return 0.5 * (b0 - b2)


@triton.jit
def _i0e_large(y):
    """e^-x sqrt(x) I0(x) on [8, inf), of y = 32/x - 2."""
    b0 = tl.zeros_like(y) + -7.233180487874754e-18
    b1 = tl.zeros_like(y)
    b2 = b1
    b0, b1, b2 = _chebyshev_step(b0, b1, y, -4.830504485944182e-18)
    b0, b1, b2 = _chebyshev_step(b0, b1, y, 4.46562142029676e-17)
    b0, b1, b2 = _chebyshev_step(b0, b1, y, 3.461222867697461e-17)
    b0, b1, b2 = _chebyshev_step(b0, b1, y, -2.8276239805165836e-16)
    b0, b1, b2 = _chebyshev_step(b0, b1, y, -3.425485619677219e-16)
    b0, b1, b2 = _chebyshev_step(b0, b1, y, 1.7725601330565263e-15)
    b0, b1, b2 = _chebyshev_step(b0, b1, y, 3.8116806693526224e-15)
    b0, b1, b2 = _chebyshev_step(b0, b1, y, -9.554846698828307e-15)
    b0, b1, b2 = _chebyshev_step(b0, b1, y, -4.150569347287222e-14)
    b0, b1, b2 = _chebyshev_step(b0, b1, y, 1.54008621752141e-14)
    b0, b1, b2 = _chebyshev_step(b0, b1, y, 3.8527783827421426e-13)
    b0, b1, b2 = _chebyshev_step(b0, b1, y, 7.180124451383666e-13)
    b0, b1, b2 = _chebyshev_step(b0, b1, y, -1.7941785315068062e-12)
    b0, b1, b2 = _chebyshev_step(b0, b1, y, -1.3215811840447713e-11)
    b0, b1, b2 = _chebyshev_step(b0, b1, y, -3.1499165279632416e-11)
    b0, b1, b2 = _chebyshev_step(b0, b1, y, 1.1889147107846439e-11)
    b0, b1, b2 = _chebyshev_step(b0, b1, y, 4.94060238822497e-10)
    b0, b1, b2 = _chebyshev_step(b0, b1, y, 3.3962320257083865e-09)
    b0, b1, b2 = _chebyshev_step(b0, b1, y, 2.266668990498178e-08)
    b0, b1, b2 = _chebyshev_step(b0, b1, y, 2.0489185894690638e-07)
    b0, b1, b2 = _chebyshev_step(b0, b1, y, 2.8913705208347567e-06)
    b0, b1, b2 = _chebyshev_step(b0, b1, y, 6.889758346916825e-05)
    b0, b1, b2 = _chebyshev_step(b0, b1, y, 0.0033691164782556943)
    b0, b1, b2 = _chebyshev_step(b0, b1, y, 0.8044904110141088)
    return 0.5 * (b0 - b2)


@triton.jit
def _i1e_small(y):
    """e^-x I1(x) / x on [0, 8], of y = x/2 - 2."""
    b0 = tl.zeros_like(y) + 2.7779141127610464e-18
    b1 = tl.zeros_like(y)
    b2 = b1
    b0, b1, b2 = _chebyshev_step(b0, b1, y, -2.111421214358166e-17)
    b0, b1, b2 = _chebyshev_step(b0, b1, y, 1.5536319577362005e-16)
    b0, b1, b2 = _chebyshev_step(b0, b1, y, -1.1055969477353862e-15)
    b0, b1, b2 = _chebyshev_step(b0, b1, y, 7.600684294735408e-15)
    b0, b1, b2 = _chebyshev_step(b0, b1, y, -5.042185504727912e-14)
    b0, b1, b2 = _chebyshev_step(b0, b1, y, 3.223793365945575e-13)
    b0, b1, b2 = _chebyshev_step(b0, b1, y, -1.9839743977649436e-12)
    b0, b1, b2 = _chebyshev_step(b0, b1, y, 1.1736186298890901e-11)
    b0, b1, b2 = _chebyshev_step(b0, b1, y, -6.663489723502027e-11)
    b0, b1, b2 = _chebyshev_step(b0, b1, y, 3.625590281552117e-10)
    b0, b1, b2 = _chebyshev_step(b0, b1, y, -1.8872497517228294e-09)
    b0, b1, b2 = _chebyshev_step(b0, b1, y, 9.381537386495773e-09)
    b0, b1, b2 = _chebyshev_step(b0, b1, y, -4.445059128796328e-08)
    b0, b1, b2 = _chebyshev_step(b0, b1, y, 2.0032947535521353e-07)
    b0, b1, b2 = _chebyshev_step(b0, b1, y, -8.568720264695455e-07)
    b0, b1, b2 = _chebyshev_step(b0, b1, y, 3.4702513081376785e-06)
    b0, b1, b2 = _chebyshev_step(b0, b1, y, -1.3273163656039436e-05)
    b0, b1, b2 = _chebyshev_step(b0, b1, y, 4.781565107550054e-05)
    b0, b1, b2 = _chebyshev_step(b0, b1, y, -0.00016176081582589674)
    b0, b1, b2 = _chebyshev_step(b0, b1, y, 0.0005122859561685758)
    b0, b1, b2 = _chebyshev_step(b0, b1, y, -0.0015135724506312532)
    b0, b1, b2 = _chebyshev_step(b0, b1, y, 0.004156422944312888)
    b0, b1, b2 = _chebyshev_step(b0, b1, y, -0.010564084894626197)
    b0, b1, b2 = _chebyshev_step(b0, b1, y, 0.024726449030626516)
    b0, b1, b2 = _chebyshev_step(b0, b1, y, -0.05294598120809499)
    b0, b1, b2 = _chebyshev_step(b0, b1, y, 0.1026436586898471)
    b0, b1, b2 = _chebyshev_step(b0, b1, y, -0.17641651835783406)
    b0, b1, b2 = _chebyshev_step(b0, b1, y, 0.25258718644363365)
    return 0.5 * (b0 - b2)


@triton.jit
def _i1e_large(y):
    """e^-x sqrt(x) I1(x) on [8, inf), of y = 32/x - 2."""
    b0 = tl.zeros_like(y) + 7.517296310842105e-18
    b1 = tl.zeros_like(y)
    b2 = b1
    b0, b1, b2 = _chebyshev_step(b0, b1, y, 4.414348323071708e-18)
    b0, b1, b2 = _chebyshev_step(b0, b1, y, -4.6503053684893586e-17)
    b0, b1, b2 = _chebyshev_step(b0, b1, y, -3.209525921993424e-17)
    b0, b1, b2 = _chebyshev_step(b0, b1, y, 2.96262899764595e-16)
    b0, b1, b2 = _chebyshev_step(b0, b1, y, 3.3082023109209285e-16)
    b0, b1, b2 = _chebyshev_step(b0, b1, y, -1.8803547755107825e-15)
    b0, b1, b2 = _chebyshev_step(b0, b1, y, -3.8144030724370075e-15)
    b0, b1, b2 = _chebyshev_step(b0, b1, y, 1.0420276984128802e-14)
    b0, b1, b2 = _chebyshev_step(b0, b1, y, 4.272440016711951e-14)
    b0, b1, b2 = _chebyshev_step(b0, b1, y, -2.1015418427726643e-14)
    b0, b1, b2 = _chebyshev_step(b0, b1, y, -4.0835511110921974e-13)
    b0, b1, b2 = _chebyshev_step(b0, b1, y, -7.198551776245908e-13)
    b0, b1, b2 = _chebyshev_step(b0, b1, y, 2.0356285441470896e-12)
    b0, b1, b2 = _chebyshev_step(b0, b1, y, 1.4125807436613782e-11)
    b0, b1, b2 = _chebyshev_step(b0, b1, y, 3.2526035830154884e-11)
    b0, b1, b2 = _chebyshev_step(b0, b1, y, -1.8974958123505413e-11)
    b0, b1, b2 = _chebyshev_step(b0, b1, y, -5.589743462196584e-10)
    b0, b1, b2 = _chebyshev_step(b0, b1, y, -3.835380385964237e-09)
    b0, b1, b2 = _chebyshev_step(b0, b1, y, -2.6314688468895196e-08)
    b0, b1, b2 = _chebyshev_step(b0, b1, y, -2.512236237870209e-07)
    b0, b1, b2 = _chebyshev_step(b0, b1, y, -3.882564808877691e-06)
    b0, b1, b2 = _chebyshev_step(b0, b1, y, -0.00011058893876262371)
    b0, b1, b2 = _chebyshev_step(b0, b1, y, -0.009761097491361469)
    b0, b1, b2 = _chebyshev_step(b0, b1, y, 0.7785762350182801)
    return 0.5 * (b0 - b2)


@triton.jit
def i0_of(x):
    a = tl.abs(x.to(tl.float64))
    small = a <= 8.0
    big = tl.where(small, 8.0, a)
    r = tl.where(small, tl.exp(a) * _i0e_small(a / 2.0 - 2.0), tl.exp(big) * _i0e_large(32.0 / big - 2.0) / tl.sqrt(big))
    return r.to(x.dtype)


@triton.jit
def i1_of(x):
    w = x.to(tl.float64)
    a = tl.abs(w)
    small = a <= 8.0
    big = tl.where(small, 8.0, a)
    r = tl.where(small, tl.exp(a) * a * _i1e_small(a / 2.0 - 2.0), tl.exp(big) * _i1e_large(32.0 / big - 2.0) / tl.sqrt(big))
    return tl.where(w < 0.0, -r, r).to(x.dtype)


@triton.jit
def i0(x, p):                  # y = I0(x)               dy/dx = I1(x)
    return i0_of(x)

@triton.jit
def i0_bwd(x, g, p):
    return g * i1_of(x)
