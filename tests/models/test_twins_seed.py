"""A twin's weight seed is a loading setting of its own (``twin:ALIAS[:tiny|full][@SEED]``, ``--weight-seed``,
LoadOptions.weight_seed): it reseeds the weights, is recorded in the provenance (``weight_seed``,
``weights = "random-init seed=N"``) with the weights' sha256, and is refused in one line for anything that is
not a twin. The weights' sha256 (geoprobe.models.fingerprint) is checked against independent computations."""

from __future__ import annotations

import hashlib
import os
import shutil

import pytest
import torch

from geoprobe.errors import GeoprobeError
from geoprobe.models.fingerprint import files_sha256, hub_weights_sha256, local_weights_hash, tensors_sha256
from geoprobe.models.loading import LoadOptions, load_model
from geoprobe.models.twins import parse_twin, twin_seed


@pytest.mark.parametrize(
    "name, alias, scale, seed",
    [
        ("twin:gpt2", "gpt2", None, None),
        ("twin:gpt2@3", "gpt2", None, 3),
        ("twin:pythia-410m:full", "pythia-410m", "full", None),
        ("twin:gpt2:tiny@0", "gpt2", "tiny", 0),
        ("twin:llama@4294967295", "llama", None, 4294967295),
    ],
)
def test_the_twin_name_syntax(name, alias, scale, seed):
    t = parse_twin(name)
    assert (t.alias, t.scale, t.seed) == (alias, scale, seed)
    assert t.model_id == f"twin:{alias}:{scale or 'tiny'}"  # the architecture; the seed is recorded apart


@pytest.mark.parametrize("seed", ["x", "-1", "", "4294967296", "1.5", "٣"])
def test_a_twin_seed_that_is_no_seed_is_one_line_naming_it_the_limit_and_the_flag(seed):
    with pytest.raises(GeoprobeError) as err:
        LoadOptions(model=f"twin:gpt2@{seed}").check()
    text = str(err.value)
    assert "\n" not in text and f"'@{seed}'" in text and "4294967295" in text and "--weight-seed" in text


def test_the_weight_seed_flag_is_refused_where_it_cannot_apply_or_contradicts_the_name():
    for model in ("pythia-160m", "smollm2-135m", "EleutherAI/pythia-160m-seed3", "weights.gguf"):
        with pytest.raises(
            GeoprobeError, match=r"--weight-seed 1 does not apply to --model .*real weights have no seed"
        ):
            LoadOptions(model=model, weight_seed=1).check()
    with pytest.raises(GeoprobeError, match=r"--weight-seed 4 and the seed @3 in --model 'twin:gpt2@3' differ"):
        LoadOptions(model="twin:gpt2@3", weight_seed=4).check()
    for bad in (-1, True, "3", 2**32):
        with pytest.raises(GeoprobeError, match="--weight-seed"):
            LoadOptions(model="twin:gpt2", weight_seed=bad).check()
    assert twin_seed("twin:gpt2@3", 3) == twin_seed("twin:gpt2", 3) == twin_seed("twin:gpt2@3", None) == 3
    assert twin_seed("twin:gpt2", None) == 0


def _state(m):
    return {k: v.clone() for k, v in m.hf_model.state_dict().items()}


def test_the_weight_seed_reseeds_the_twin_and_is_recorded():
    """Was: load_model("twin:ALIAS") always built seed 0. Independent check: the same architecture built by
    transformers after torch.manual_seed(3) has the same weights as twin:llama@3."""
    from transformers import AutoModelForCausalLM

    from geoprobe.models.twins import embedded_tokenizer, twin_config

    zero, at3, flag3 = (
        load_model("twin:llama-3.2-1b"),
        load_model("twin:llama-3.2-1b@3"),
        load_model("twin:llama-3.2-1b", weight_seed=3),
    )
    torch.manual_seed(3)
    ref = AutoModelForCausalLM.from_config(twin_config("llama-3.2-1b", "tiny", vocab_size=len(embedded_tokenizer())))
    want = ref.state_dict()
    for m, seed in ((zero, 0), (at3, 3), (flag3, 3)):
        p = m.provenance
        assert (p.model_id, p.weights, p.weight_seed, p.source) == (
            "twin:llama-3.2-1b:tiny",
            f"random-init seed={seed}",
            seed,
            "twin",
        )
        assert p.weights_sha256 == tensors_sha256(m.hf_model)
    a, b, c = _state(zero), _state(at3), _state(flag3)
    assert all(torch.equal(b[k], want[k]) and torch.equal(c[k], want[k]) for k in want)
    assert any(not torch.equal(a[k], b[k]) for k in want)
    assert at3.provenance.weights_sha256 == flag3.provenance.weights_sha256 != zero.provenance.weights_sha256
    # the seed survives the prompts being attached (where ``seed`` becomes the analysis seed)
    attached = at3.provenance.with_prompts(["a"], seed=7)
    assert (attached.seed, attached.weight_seed) == (7, 3)
    assert type(attached).from_dict(attached.to_dict()).weight_seed == 3


def test_the_tensor_hash_is_the_state_dict_hashed_in_order_and_sees_one_changed_value(twin_factory):
    m = twin_factory("gpt2")
    h = hashlib.sha256()
    for name, t in m.hf_model.state_dict().items():  # an independent writing of the documented recipe
        h.update(f"{name}|{str(t.dtype).removeprefix('torch.')}|{tuple(t.shape)}|".encode())
        h.update(t.detach().contiguous().numpy().tobytes())
    assert tensors_sha256(m.hf_model) == h.hexdigest()
    clone = type(m.hf_model)(m.hf_model.config)
    clone.load_state_dict(m.hf_model.state_dict())
    assert tensors_sha256(clone) == h.hexdigest()
    with torch.no_grad():
        next(iter(clone.parameters())).view(-1)[5] += 1e-3
    assert tensors_sha256(clone) != h.hexdigest()


def test_file_hashes_of_a_directory_and_of_a_hub_snapshot_agree(tmp_path):
    """A local directory: sha256 over each weight file's name and sha256 (computed here with hashlib). A Hub
    snapshot in the cache links its files to blobs named by their sha256: the same value, nothing read."""
    d = tmp_path / "model"
    d.mkdir()
    files = {"model-00001-of-00002.safetensors": b"first shard", "model-00002-of-00002.safetensors": b"second"}
    for name, data in files.items():
        (d / name).write_bytes(data)
    (d / "config.json").write_text("{}")
    h = hashlib.sha256()
    for name in sorted(files):
        h.update(name.encode())
        h.update(hashlib.sha256(files[name]).hexdigest().encode())
    assert local_weights_hash(d) == f"sha256:{h.hexdigest()}" and files_sha256([]) is None
    cache, commit = tmp_path / "hub", "a" * 40
    snap = cache / "models--EleutherAI--pythia-14m" / "snapshots" / commit
    blobs = cache / "models--EleutherAI--pythia-14m" / "blobs"
    snap.mkdir(parents=True)
    blobs.mkdir()
    for name, data in files.items():
        blob = blobs / hashlib.sha256(data).hexdigest()
        blob.write_bytes(b"not read: the blob's name is its sha256")
        os.symlink(os.path.relpath(blob, snap), snap / name)
    assert hub_weights_sha256("EleutherAI/pythia-14m", commit, cache) == h.hexdigest()
    assert hub_weights_sha256("EleutherAI/pythia-14m", "b" * 40, cache) is None  # not in the cache
    assert hub_weights_sha256("EleutherAI/pythia-14m", "../../x", cache) is None  # not a commit


def test_a_local_directory_and_its_copy_load_with_the_same_weights_sha256(twin_factory, tmp_path):
    twin_factory("llama").hf_model.save_pretrained(tmp_path / "a")
    from geoprobe.models.twins import embedded_tokenizer

    embedded_tokenizer().save_pretrained(tmp_path / "a")
    shutil.copytree(tmp_path / "a", tmp_path / "b")
    a, b = load_model(str(tmp_path / "a")), load_model(str(tmp_path / "b"))
    assert a.provenance.weights_sha256 == b.provenance.weights_sha256 == local_weights_hash(tmp_path / "a")[7:]
    assert a.provenance.weight_seed is None  # weights read from files have no seed


@pytest.mark.parametrize(
    "argv, words",
    [
        (["--model", "twin:gpt2@x"], ("twin seed '@x'", "4294967295", "--weight-seed N")),
        (["--model", "twin:gpt2@3", "--weight-seed", "4"], ("--weight-seed 4 and the seed @3",)),
        (["--model", "pythia-160m", "--weight-seed", "1"], ("--weight-seed 1 does not apply", "drop --weight-seed")),
        (["--model", "twin:gpt2", "--weight-seed", "-1"], ("seed -1 is outside [0, 4294967295]", "--weight-seed")),
    ],
)
def test_the_command_line_refuses_a_bad_weight_seed_in_one_line_before_loading(
    argv, words, tmp_path, capsys, monkeypatch
):
    from tests.cli.test_cli import run_cli

    code, _, err = run_cli(["scan", *argv, "--prompts", "builtin", "--out", str(tmp_path / "o")], capsys, monkeypatch)
    lines = [line for line in err.splitlines() if line.strip()]
    assert code == 2 and len(lines) == 1 and lines[0].startswith("error: "), err
    assert all(w in lines[0] for w in words), lines[0]
    assert not (tmp_path / "o").exists()
