"""The misuse catalog as a whole: every way of calling the API wrongly that we know of, one row each,
split by area over test_misuse_tensors_autograd.py, test_misuse_ops.py, test_misuse_nn.py and
test_misuse_optim_data.py, run by support/misuse.py. Here: the rows are unique and there are many."""
from support.misuse import SKIP
from test_misuse_nn import CASES as NN
from test_misuse_ops import CASES as OPS
from test_misuse_optim_data import CASES as OPTIM_DATA
from test_misuse_tensors_autograd import CASES as TENSORS_AUTOGRAD

CASES = TENSORS_AUTOGRAD + OPS + NN + OPTIM_DATA


def test_the_catalog_is_large_and_unique():
    ids = [c[0] for c in CASES]
    assert len(set(ids)) == len(ids)
    runnable_everywhere = [c for c in CASES if len(c) == 5 or c[5] not in SKIP]
    assert len(runnable_everywhere) >= 80
