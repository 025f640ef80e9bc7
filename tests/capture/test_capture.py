import pickle
import shutil
import warnings

import numpy as np
import pytest
import torch

from geoprobe.capture import Capture, CaptureConfig, capture, entropy_bits
from geoprobe.errors import CaptureError, OutputExistsError, PromptError


def _n_torch_hooks(module):
    return sum(len(m._forward_hooks) + len(m._forward_pre_hooks) for m in module.modules())


def test_hooks_are_removed_even_when_the_forward_raises(twin_factory, prompts):
    """capture reads attention through transformers' AttentionInterface: after a forward pass that
    raises, the model's own attention implementation is back and none of geoprobe's hooks is left."""
    m = twin_factory("llama-3.2-1b")
    impl, before = m.hf_model.config._attn_implementation, _n_torch_hooks(m.hf_model)
    v_proj = m.hf_model.model.layers[1].self_attn.v_proj

    def boom(module, args, output):
        raise RuntimeError("planted failure")

    handle = v_proj.register_forward_hook(boom)
    try:
        with pytest.raises(RuntimeError, match="planted"):
            capture(m, prompts)
    finally:
        handle.remove()
    assert m.hf_model.config._attn_implementation == impl == "sdpa"
    assert _n_torch_hooks(m.hf_model) == before
    capture(m, prompts[:2])  # still usable afterwards
    assert _n_torch_hooks(m.hf_model) == before


def test_nan_in_an_activation_names_layer_and_site(twin_factory, prompts):
    from geoprobe.models.twins import twin

    m = twin("mistral-7b", "tiny", seed=3)  # private copy: we poison its weights
    w = m.arch.v_specs[1].linear(m.arch.modules[1]).weight
    with torch.no_grad():
        w[0, 0] = float("nan")
    with pytest.raises(CaptureError, match=r"layer 1 site v for prompt #\d") as e:
        capture(m, prompts)
    assert "--dtype float32" in str(e.value) and "\n" not in str(e.value)
    assert _n_torch_hooks(m.hf_model) == 0


def test_empty_prompts_are_refused(twin_factory):
    m = twin_factory("llama-3.2-1b")
    with pytest.raises(PromptError, match="no prompts"):
        capture(m, [])
    with pytest.raises(PromptError, match="prompt #1 is empty"):
        capture(m, ["fine", "   "])


def test_long_prompts_keep_their_final_tokens_and_warn(twin_factory):
    m = twin_factory("llama-3.2-1b")
    long = "one two three four five six seven eight nine ten eleven twelve"
    ids = m.tokenizer(long)["input_ids"]
    with pytest.warns(
        UserWarning,
        match=r"1 of 1 prompt\(s\) longer than 5 tokens .* \(\d+ tokens dropped in all, "
        r"up to \d+ from one prompt\); the cap is --max-tokens 5",
    ):
        cut = capture(m, [long], CaptureConfig(max_tokens=5))
    tail = m.tokenizer.decode(ids[-5:])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ref = capture(m, [tail], CaptureConfig())
    assert cut.n_truncated[0] == len(ids) - 5 and cut.n_tokens[0] == 5
    if m.tokenizer(tail)["input_ids"] == ids[-5:]:
        np.testing.assert_allclose(cut.values, ref.values, atol=1e-5)


def test_layer_selection_and_errors(twin_factory, prompts):
    m = twin_factory("pythia-410m")
    c = capture(m, prompts, CaptureConfig(layers=(-1, 0)))
    assert c.layers == (0, 2) and c.values.shape[0] == 2
    full = capture(m, prompts)
    np.testing.assert_array_equal(c.values[1], full.values[2])
    np.testing.assert_array_equal(c.values_flat(-1), full.values_flat(2))
    with pytest.raises(CaptureError, match=r"layer 7 is out of range .* 3 layers .*--layers"):
        capture(m, prompts, CaptureConfig(layers=(7,)))
    with pytest.raises(CaptureError, match="--batch-size"):
        CaptureConfig(batch_size=0)


def test_result_holds_arrays_not_the_model(twin_factory, prompts):
    m = twin_factory("gemma-3-270m")
    c = capture(m, prompts, CaptureConfig(queries=True, attn_out=True, attention="distribution"))
    blob = pickle.dumps(c)
    assert len(blob) < 2_000_000
    for name in ("values", "keys", "queries", "attn_out", "attn_pattern", "attn_entropy", "w_k"):
        assert isinstance(getattr(c, name), np.ndarray), name
    assert not c.values.flags.writeable
    # attention rows are distributions over each prompt's real tokens
    sums = c.attn_pattern.sum(-1)
    np.testing.assert_allclose(sums, 1.0, atol=1e-5)
    for i, n in enumerate(c.n_tokens):
        assert np.all(c.attn_pattern[:, i, :, n:] == 0)
    np.testing.assert_allclose(c.next_top_probs.sum(1) <= 1 + 1e-6, True)
    assert c.provenance.prompts_hash and c.provenance.model_id == "twin:gemma-3-270m:tiny"


def test_entropy_bits_on_known_distributions():
    p = torch.tensor([[0.25, 0.25, 0.25, 0.25], [1.0, 0.0, 0.0, 0.0], [0.5, 0.5, 0.0, 0.0]])
    np.testing.assert_allclose(entropy_bits(p).numpy(), [2.0, 0.0, 1.0], atol=1e-12)


def test_save_load_is_lossless_and_never_overwrites(tmp_path, twin_factory, prompts):
    m = twin_factory("phi-2")
    c = capture(m, prompts, CaptureConfig(attention="distribution", queries=True), seed=7)
    path = c.save(tmp_path / "cap")
    back = Capture.load(path)
    for name in (
        "values",
        "keys",
        "queries",
        "attn_pattern",
        "attn_entropy",
        "next_entropy",
        "next_top_ids",
        "next_top_probs",
        "n_tokens",
        "n_truncated",
        "w_k",
    ):
        np.testing.assert_array_equal(getattr(back, name), getattr(c, name), err_msg=name)
        assert getattr(back, name).dtype == getattr(c, name).dtype
    assert back.prompts == c.prompts and back.layout == c.layout and back.provenance == c.provenance
    assert back.provenance.seed == 7 and back.config == c.config and back.attn_out is None
    with pytest.raises(OutputExistsError, match="--overwrite"):
        c.save(path)
    assert Capture.load(path).n_prompts == len(prompts)  # the first result is intact
    c.save(path, overwrite=True)
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # no temp dirs left behind


def test_a_save_removes_what_a_killed_save_left_beside_it_and_nothing_else(tmp_path, twin_factory, prompts):
    """Was (the sweep's hostile round, a kill just before the capture's rename): ``.capture.tmp-*`` stayed beside
    the capture after every rerun. A save removes its own temporaries of that name, never a directory holding
    anything else."""
    c = capture(twin_factory("phi-2"), prompts[:2])
    c.save(tmp_path / "first")
    half = tmp_path / ".capture.tmp-k1ll3d"  # what a kill before the rename leaves: a capture's files
    shutil.copytree(tmp_path / "first", half)
    aside = tmp_path / ".capture.old-4242"  # a kill after the old capture was moved aside
    aside.mkdir()
    (aside / "capture.json").write_text("{}")
    yours = tmp_path / ".capture.tmp-yours"
    yours.mkdir()
    (yours / "notes.txt").write_text("mine")
    other = tmp_path / ".other.tmp-k1ll3d"  # another target's
    shutil.copytree(tmp_path / "first", other)
    c.save(tmp_path / "capture")
    assert sorted(p.name for p in tmp_path.iterdir()) == [".capture.tmp-yours", ".other.tmp-k1ll3d", "capture", "first"]
    assert Capture.load(tmp_path / "capture").n_prompts == 2


def test_capture_leaves_no_full_attention_pattern_behind(twin_factory, prompts):
    m = twin_factory("pythia-410m")  # the fused-QKV bridge stores its last pattern per layer
    capture(m, prompts)
    kept = [blk.attn._pattern for blk in m.bridge.blocks if getattr(blk.attn, "_pattern", None) is not None]
    assert kept == []


def test_no_host_transfer_inside_the_forward_pass(twin_factory, monkeypatch):
    """What would wait for a GPU inside a capture's forward pass (a copy to the host, a tensor read as a
    Python number or bool) is never called by the probe's per-layer work (Probe.record: slices, unrotation,
    the final-row distribution): a batch's records leave the device once, after the forward pass
    (geoprobe.capture.transfer.HostCopy). Counted with a TorchFunctionMode on the CPU, where the same
    calls are made; on an H200 the sync count per batch was the bare forward's (docs/benchmarks.md "GPU")."""
    from torch.overrides import TorchFunctionMode

    import geoprobe.models.attention as A

    waits = {"cpu", "numpy", "tolist", "item", "__bool__", "__float__", "__int__", "__index__"}
    seen: list[str] = []

    class Spy(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            name = getattr(func, "__name__", "")
            if name in waits:  # (a .to(x.device) here goes to the model's device: on the CPU it cannot be told)
                seen.append(name)
            return func(*args, **(kwargs or {}))

    record = A.Probe.record

    def spied(self, *args, **kwargs):
        with Spy():
            return record(self, *args, **kwargs)

    models = [twin_factory(a) for a in ("llama-3.2-1b", "pythia-410m", "gemma-2-2b")]  # booted first (its checks
    monkeypatch.setattr(A.Probe, "record", spied)  # copy to the host by design); rotary whole, partial; softcap
    for m in models:
        cap = capture(m, ["a first prompt of some tokens", "and a second, longer prompt of a few more tokens"],
                      CaptureConfig(batch_size=2, queries=True, attn_out=True, attention="distribution"))  # fmt: skip
        assert np.isfinite(cap.keys).all() and cap.attn_pattern.shape[-1] > 1
    assert seen == []
