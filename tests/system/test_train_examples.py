"""The training examples in train_examples/, each run in-process through its ``main(argv)``.

moons runs its full configuration (the README's command: 100 SGD steps to 100% training
accuracy); the others run ``--quick``, where the bars are lower than their full runs' (spirals 95%,
digits MLP 95% / CNN 97% test, reverse 99%) but far above chance; the autoencoder must beat the
mean-image baseline, gpt's held-out loss fall well below the uniform guess and its sample be text
over the story's characters. Every run must write its plot
(a PNG) and a checkpoint that ``tgrad.load`` reads back as the model's state dict.
"""
import math
import os
import sys

import pytest

import tgrad

EXAMPLES = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "train_examples")
sys.path.insert(0, EXAMPLES)

import autoencoder  # noqa: E402
import digits  # noqa: E402
import gpt  # noqa: E402
import moons  # noqa: E402
import sequence  # noqa: E402
import spirals  # noqa: E402

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def run(module, tmp_path, *argv):
    return module.main([*argv, "--no-progress", "--out", str(tmp_path)])


def check_outputs(result, tmp_path, name, model_keys=None):
    assert result["png"] == os.path.join(str(tmp_path), f"{name}.png")
    with open(result["png"], "rb") as f:
        assert f.read(8) == PNG_MAGIC
    assert os.path.getsize(result["png"]) > 5000  # a drawn figure, not an empty canvas
    ckpt = tgrad.load(result["checkpoint"])
    state = ckpt if model_keys is None or "model" not in ckpt else ckpt["model"]
    if model_keys is not None:
        assert list(state) == model_keys
    return ckpt


def test_moons_full_run_separates_the_moons(tmp_path, capsys):
    result = run(moons, tmp_path)
    assert result["accuracy"] == 1.0
    assert result["loss"] < 0.1
    out = capsys.readouterr().out
    assert "training accuracy 100%" in out and "kernel launches/step" in out
    assert result["launches_per_step"] <= 30  # ReLU fused into the matmuls, L2 in the optimizer
    ckpt = check_outputs(result, tmp_path, "moons", ["l1.weight", "l1.bias", "l2.weight", "l2.bias",
                                                     "l3.weight", "l3.bias"])
    for name, value in result["model"].state_dict().items():  # parameters are views of one vector
        assert ckpt[name].tolist() == value.tolist()


def test_moons_is_deterministic_for_a_seed(tmp_path):
    a = run(moons, tmp_path / "a", "--steps", "4", "--seed", "3")
    b = run(moons, tmp_path / "b", "--steps", "4", "--seed", "3")
    c = run(moons, tmp_path / "c", "--steps", "4", "--seed", "4")
    assert a["loss"] == b["loss"] and a["loss"] != c["loss"]
    with open(a["checkpoint"], "rb") as fa, open(b["checkpoint"], "rb") as fb:
        assert fa.read() == fb.read()


def test_spirals_quick(tmp_path):
    result = run(spirals, tmp_path, "--quick")
    assert result["accuracy"] >= 0.9
    ckpt = check_outputs(result, tmp_path, "spirals")
    assert set(ckpt) == {"model", "optimizer"}
    assert "exp_avg" in ckpt["optimizer"]["state"][0]  # Adam's moments are in the checkpoint


def test_digits_mlp_quick(tmp_path):
    result = run(digits, tmp_path, "--quick", "--model", "mlp")
    assert result["accuracy"] >= 0.8
    check_outputs(result, tmp_path, "digits_mlp", ["l1.weight", "l1.bias", "l2.weight", "l2.bias",
                                                   "l3.weight", "l3.bias"])


def test_digits_cnn_quick(tmp_path):
    result = run(digits, tmp_path, "--quick", "--model", "cnn")
    assert result["accuracy"] >= 0.4  # 20 steps; batch norm evaluated with its running statistics
    ckpt = check_outputs(result, tmp_path, "digits_cnn")
    assert "1.running_mean" in ckpt["model"] and "1.num_batches_tracked" in ckpt["model"]
    assert ckpt["epochs"] == 1


def test_sequence_quick(tmp_path):
    result = run(sequence, tmp_path, "--quick")
    assert result["accuracy"] >= 0.9
    check_outputs(result, tmp_path, "sequence")


@pytest.mark.skipif(tgrad.cuda.is_available(), reason="checks the message shown without CUDA")
def test_cuda_without_a_gpu_exits_with_a_message(tmp_path):
    with pytest.raises(SystemExit, match="no CUDA device is available"):
        run(moons, tmp_path, "--device", "cuda")


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


def test_gpt_quick_learns_and_samples(tmp_path, capsys):
    result = gpt.main(["--quick", "--no-progress", "--out", str(tmp_path)])
    uniform = math.log(len(result["chars"]))
    assert result["held_out_start"] > uniform - 0.3  # an untrained model is near uniform
    assert result["held_out"] < uniform - 0.6, result["held_out"]
    assert len(result["sample"]) == 41 and set(result["sample"]) <= set(result["chars"])
    out = capsys.readouterr().out
    assert "sample:" in out and "kernel launches/step" in out
    with open(result["png"], "rb") as f:
        assert f.read(8) == PNG_MAGIC
    ckpt = tgrad.load(result["checkpoint"])
    assert "blocks.1.qkv.weight" in ckpt["model"] and "exp_avg" in ckpt["optimizer"]["state"][0]
    assert "".join(chr(c) for c in ckpt["chars"].tolist()) == "".join(result["chars"])
    fresh = gpt.GPT(len(result["chars"]), *gpt.CONFIG["quick"][:4])
    fresh.load_state_dict(ckpt["model"])
    x = tgrad.tensor([[0, 1, 2, 3]])
    model = result["model"].eval()
    assert fresh.eval()(x).tolist() == model(x).tolist()
