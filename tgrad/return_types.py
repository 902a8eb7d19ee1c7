"""Named tuples returned by ops that give values and indices (``tgrad.max(x, 0).values``)."""
from collections import namedtuple

from . import _dtype


def _structseq(name, fields=("values", "indices")):
    """A namedtuple printed like PyTorch's ``torch.return_types`` structseqs, one field a line."""
    base = namedtuple(name, list(fields))

    def __repr__(self):
        fields = ",\n".join(f"{k}={v!r}" for k, v in zip(self._fields, self))
        return f"{_dtype.NAMESPACE}.return_types.{name}(\n{fields})"

    return type(name, (base,), {"__slots__": (), "__repr__": __repr__, "__module__": __name__})


max = _structseq("max")  # noqa: A001
min = _structseq("min")  # noqa: A001
topk = _structseq("topk")
median = _structseq("median")
mode = _structseq("mode")
aminmax = _structseq("aminmax", ("min", "max"))
kthvalue = _structseq("kthvalue")
cummax = _structseq("cummax")
cummin = _structseq("cummin")
linalg_lu_factor = _structseq("linalg_lu_factor", ("LU", "pivots"))
linalg_lu_factor_ex = _structseq("linalg_lu_factor_ex", ("LU", "pivots", "info"))
linalg_lu = _structseq("linalg_lu", ("P", "L", "U"))
linalg_solve_ex = _structseq("linalg_solve_ex", ("result", "info"))
linalg_inv_ex = _structseq("linalg_inv_ex", ("inverse", "info"))
linalg_slogdet = _structseq("linalg_slogdet", ("sign", "logabsdet"))
slogdet = _structseq("slogdet", ("sign", "logabsdet"))
linalg_eigh = _structseq("linalg_eigh", ("eigenvalues", "eigenvectors"))
linalg_svd = _structseq("linalg_svd", ("U", "S", "Vh"))
linalg_lstsq = _structseq("linalg_lstsq", ("solution", "residuals", "rank", "singular_values"))
linalg_qr = _structseq("linalg_qr", ("Q", "R"))
svd = _structseq("svd", ("U", "S", "V"))
qr = _structseq("qr", ("Q", "R"))
lu_unpack = _structseq("lu_unpack", ("P", "L", "U"))
