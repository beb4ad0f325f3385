"""The zplan module (python/zplan, installed by `pip install .`): the same library as the binary.

Run by tests/python/test_python.sh, which installs the module into a fresh virtual environment and sets
ZPLAN_BIN (the binary of the same tree, to compare with) and ZPLAN_SOURCE (the tree)."""

import json
import os
import subprocess

import pytest

import zplan

ZPLAN_BIN = os.environ.get("ZPLAN_BIN")
WHATIF = dict(model="llama-3-8b", gpus=8, cluster="dgx-h100")


def cli(*args):
    if not ZPLAN_BIN:
        pytest.skip("ZPLAN_BIN not set: no binary to compare with")
    return subprocess.run([ZPLAN_BIN, *args], capture_output=True, text=True)


def test_installed_module_not_the_tree():
    # the module under test is the installed one, with its own libzplan.so
    src = os.environ.get("ZPLAN_SOURCE")
    if src:
        assert not os.path.abspath(zplan.__file__).startswith(os.path.join(os.path.abspath(src), "python"))
    assert os.path.exists(os.path.join(os.path.dirname(zplan.__file__), "libzplan.so"))


def test_whatif_returns_the_json_contract():
    d = zplan.whatif(**WHATIF)
    assert set(d) >= {"model", "cluster", "flop_convention", "plans", "best"}
    best = d["plans"][0]
    assert best["fits"] is True
    for key in ("stage", "mp", "dp", "cp", "micro_batch", "step_time_s", "samples_per_s", "tflops_per_gpu",
                "tokens_per_s_per_gpu", "mfu", "memory_gb"):
        assert key in best, key
    assert best["step_time_s"] > 0
    # the question, answered in a team's units: tokens = global batch x sequence per step, per GPU
    seq = d["model"]["seq"]
    assert abs(best["tokens_per_s_per_gpu"] - best["global_batch"] * seq / best["step_time_s"] / 8) < 1e-3 * \
        best["tokens_per_s_per_gpu"]
    assert 0 < best["mfu"] < 1


def test_whatif_is_the_binarys_answer():
    r = cli("--model", "llama-3-8b", "--gpus", "8", "--cluster", "dgx-h100", "--format", "json")
    assert r.returncode == 0, r.stderr
    assert zplan.whatif(**WHATIF) == json.loads(r.stdout)


def test_two_calls_give_the_same_answer():
    first = zplan.whatif(**WHATIF)
    zplan.whatif(model="gpt2-1.5B", gpus=16, analytic=True, pa=True, stage=3)  # another search between them
    with pytest.raises(zplan.ZplanError):  # and a refusal
        zplan.whatif(model="70", gpus=8)
    assert zplan.whatif(**WHATIF) == first


def test_options_are_the_command_lines():
    d = zplan.whatif(model="gpt2-1.5B", gpus=16, stage=2, global_batch=512, no_cb=True, analytic=True)
    r = cli("--model", "gpt2-1.5B", "--gpus", "16", "--stage", "2", "--global-batch", "512", "--no-cb",
            "--analytic", "--format", "json")
    assert r.returncode == 0, r.stderr
    assert d == json.loads(r.stdout)
    assert {p["stage"] for p in d["plans"]} == {2}
    assert all(p["global_batch"] == 512 for p in d["plans"])


def test_false_is_the_no_option_and_none_is_left_out():
    d = zplan.whatif(model="gpt2-1.5B", gpus=16, checkpoint=False, stage=None, analytic=True)
    assert all(p["checkpoint"] is False for p in d["plans"])


@pytest.mark.parametrize("options, says", [
    (dict(model="70", gpus=8), "zplan: --model: '70' is a number without a unit"),
    (dict(model="70B", gpus=0), "zplan: --gpus: '0' must be at least 1"),
    (dict(model="llama-3-8b"), "--gpus is required"),
])
def test_bad_input_raises_with_zplans_message(options, says):
    with pytest.raises(zplan.ZplanError) as e:
        zplan.whatif(**options)
    assert e.value.exit_code == 2
    assert says in e.value.message
    # the message is the binary's, word for word
    args = [a for k, v in options.items() for a in (f"--{k}", str(v))]
    assert e.value.message == cli(*args, "--format", "json").stderr.strip()


def test_unknown_option_is_zplans_error():
    with pytest.raises(zplan.ZplanError) as e:
        zplan.whatif(model="70B", gpus=8, no_such_option=1)
    assert e.value.exit_code == 2 and "--no-such-option" in e.value.message


def test_nothing_fits_still_answers():
    # exit status 3 is an answer: best is None, the plans say why, near_miss what would fit
    d = zplan.whatif(model="1T", gpus=1, offload="none", analytic=True)
    assert d["best"] is None
    assert d["plans"] and not any(p["fits"] for p in d["plans"])
    assert "near_miss" in d
    assert cli("--model", "1T", "--gpus", "1", "--offload", "none", "--analytic", "--format", "json").returncode == 3


def test_whatif_takes_no_output_options():
    with pytest.raises(TypeError):
        zplan.whatif(model="70B", gpus=8, format="text")


def test_plans_dataframe():
    pd = pytest.importorskip("pandas")
    d = zplan.whatif(**WHATIF)
    df = zplan.plans(**WHATIF)
    assert isinstance(df, pd.DataFrame)
    assert len(df) == len(d["plans"])
    assert df["step_time_s"].iloc[0] == d["plans"][0]["step_time_s"]
    assert "memory_gb.total" in df.columns


def test_run_any_command():
    r = zplan.run("models", "--format", "json")
    assert r.exit_code == 0 and json.loads(r.stdout)
    assert zplan.run("--version").stdout == cli("--version").stdout == f"zplan {zplan.version()}\n"


def test_the_process_output_is_left_alone(capfd):
    # zplan's output is collected for the call; the process's descriptors 1 and 2 are restored after it
    print("before", flush=True)
    zplan.whatif(model="gpt2-1.5B", gpus=16, analytic=True)
    with pytest.raises(zplan.ZplanError):
        zplan.whatif(model="70", gpus=8)
    print("after", flush=True)
    os.write(2, b"err-after\n")
    out, err = capfd.readouterr()
    assert out == "before\nafter\n"
    assert err == "err-after\n"
