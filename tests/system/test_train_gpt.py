"""train_examples/gpt.py in its --quick configuration: the held-out loss falls well below the
uniform guess, the sample is text over the story's characters, and the checkpoint loads back
into a fresh model with PyTorch-style key names."""
import math
import os
import sys

import tgrad

EXAMPLES = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "train_examples")
sys.path.insert(0, EXAMPLES)

import gpt  # noqa: E402

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


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
