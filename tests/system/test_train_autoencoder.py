"""train_examples/autoencoder.py in its --quick configuration, in-process through ``main(argv)``
as tests/system/test_train_examples.py runs the others: it must beat the mean-image baseline, write its
plot and a checkpoint that loads back into the model with PyTorch's key names."""
import os
import sys

import tgrad

EXAMPLES = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "train_examples")
sys.path.insert(0, EXAMPLES)

import autoencoder  # noqa: E402

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def test_autoencoder_quick(tmp_path, capsys):
    result = autoencoder.main(["--quick", "--no-progress", "--out", str(tmp_path)])
    # 40 steps from an untrained net (MSE ~0.2): well under always answering the mean image
    assert result["mse"] < 0.92 * result["baseline_mse"]
    out = capsys.readouterr().out
    assert "of the mean image's" in out and "kernel launches/step" in out
    with open(result["png"], "rb") as f:
        assert f.read(8) == PNG_MAGIC
    assert os.path.getsize(result["png"]) > 5000
    ckpt = tgrad.load(result["checkpoint"])
    assert set(ckpt) == {"model", "optimizer", "epochs"}
    assert list(ckpt["model"]) == ["encoder.0.weight", "encoder.0.bias", "encoder.2.weight", "encoder.2.bias",
                                   "decoder.0.weight", "decoder.0.bias", "decoder.2.weight", "decoder.2.bias"]
    assert tuple(ckpt["model"]["decoder.0.weight"].shape) == (8, 16, 3, 3)  # ConvTranspose2d: (in, out, kH, kW)
    fresh = autoencoder.AutoEncoder()
    fresh.load_state_dict(ckpt["model"])
    for name, value in result["model"].state_dict().items():
        assert fresh.state_dict()[name].tolist() == value.tolist()
