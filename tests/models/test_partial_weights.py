"""Weights that do not match their config.json (geoprobe/models/partial.py): refused in one line by
default, recorded in the provenance under allow_partial_weights, and never refused for a checkpoint
that is whole (tied embeddings, non-persistent buffers, keys transformers itself ignores)."""

from __future__ import annotations

import shutil

import pytest

from geoprobe.errors import GeoprobeError, WeightsMismatchError
from geoprobe.models import loading
from geoprobe.models.loading import LoadOptions, load_model
from geoprobe.provenance import PartialWeights, Provenance
from tests.models.weights_kit import BREAKERS, saved_twin


@pytest.fixture(scope="module")
def base(tmp_path_factory):
    return saved_twin(tmp_path_factory.mktemp("twin"))


def _broken(base, tmp_path, how):
    target = tmp_path / how
    shutil.copytree(base, target)
    return target, BREAKERS[how](target)


def _counted(n: int, what: str, first: bool) -> str:
    return f"{n} tensor{'s' if n != 1 else ''} {what}" if first else f"{n} {what}"


def expected_parts(expect: dict) -> list[str]:
    """The count phrases the message holds, in its order (the first with 'tensor(s)')."""
    parts = []
    for key, what in (("missing", "missing"), ("unexpected", "unexpected"), ("mismatched", "of the wrong shape")):
        if expect[key]:
            parts.append(_counted(expect[key], what, first=not parts))
    return parts


@pytest.mark.parametrize("how", list(BREAKERS))
def test_weights_that_do_not_match_the_config_are_refused_in_one_line(base, tmp_path, how):
    target, expect = _broken(base, tmp_path, how)
    with pytest.raises(WeightsMismatchError) as e:
        load_model(str(target))
    msg = str(e.value)
    assert "\n" not in msg
    assert msg.startswith(f"model {str(target)!r}: its weights do not match its config.json: "), msg
    for part in expected_parts(expect):
        assert part in msg, (part, msg)
    first = msg.index("(") + 1
    assert msg[first:].startswith(expect["first"]), msg
    assert "at random" in msg and msg.endswith(
        "fix the checkpoint, or pass --allow-partial-weights if a partial load is intended"
    )


@pytest.mark.parametrize("how", list(BREAKERS))
def test_with_the_flag_the_load_goes_on_and_the_provenance_records_it(base, tmp_path, how):
    target, expect = _broken(base, tmp_path, how)
    m = load_model(str(target), allow_partial_weights=True)
    pw = m.provenance.partial_weights
    assert pw is not None
    assert (len(pw.missing), len(pw.unexpected), len(pw.mismatched)) == (
        expect["missing"],
        expect["unexpected"],
        expect["mismatched"],
    )
    assert (pw.missing or pw.unexpected or [m[0] for m in pw.mismatched])[0] == expect["first"]
    stored = m.provenance.to_dict()
    assert stored["partial_weights"] == pw.to_dict()
    assert Provenance.from_dict(stored).partial_weights == pw
    if how == "wrong-shape":
        assert pw.mismatched == (("model.layers.0.mlp.down_proj.weight", (63, 128), (64, 128)),)


def test_transformers_own_refusal_of_a_mis_shaped_tensor_is_one_line(base, tmp_path):
    """Without ignore_mismatched_sizes transformers raises a RuntimeError after logging a table; should
    it reach geoprobe (another transformers version), it is one line naming the model."""
    from transformers import AutoModelForCausalLM

    from geoprobe.models.partial import shape_error

    target, _ = _broken(base, tmp_path, "wrong-shape")
    with pytest.raises(RuntimeError) as e:
        AutoModelForCausalLM.from_pretrained(target)
    err = shape_error("ck", e.value)
    assert isinstance(err, WeightsMismatchError) and "\n" not in str(err)
    assert str(err).startswith("model 'ck': its weights do not match its config.json: tensors of the wrong shape")
    assert shape_error("ck", RuntimeError("CUDA out of memory")) is None


def test_a_hub_model_is_checked_the_same_way(base, tmp_path, monkeypatch):
    """A Hub model goes through the same load (here: a cached copy stands in for the hub)."""
    target, _ = _broken(base, tmp_path, "removed")
    monkeypatch.setattr(loading, "_in_local_cache", lambda repo, revision: True)
    with pytest.raises(WeightsMismatchError, match=r"^model 'org/broken': its weights do not match .*1 tensor missing"):
        loading._load_pretrained("org/broken", str(target), LoadOptions("org/broken"), source="hub", spec=None)


@pytest.mark.parametrize(
    "alias", ["llama-3.2-1b", "pythia-70m", "gpt2", "gemma-2-2b", "qwen2.5-0.5b", "phi-3-mini", "mixtral-8x7b"]
)
def test_a_whole_saved_twin_loads_with_no_refusal_and_no_record(tmp_path, alias):
    """Tied LM heads (Llama, GPT-2, Gemma-2, Qwen2.5), GPT-NeoX's renamed embed_out and rotary buffers,
    GPT-2's attention-mask buffers, Phi-3's fused projections, Mixtral's experts merged at load."""
    target = saved_twin(tmp_path, alias)
    m = load_model(str(target))
    assert m.provenance.partial_weights is None
    assert "partial_weights" not in m.provenance.to_dict()


def test_trajectory_checkpoints_load_with_no_refusal(tmp_path):
    from geoprobe.trajectory import TrajectoryConfig, train_trajectory

    config = TrajectoryConfig(steps=1, layers=1, hidden_size=32, heads=2, vocab_size=300, seq_len=16, batch_size=2)
    docs = [" ".join(f"w{(7 * i + k) % 20}" for i in range(60)) for k in range(20)]
    train_trajectory(config, out=tmp_path / "traj", documents=docs, threads=1)
    for step in ("step0", "step1"):
        m = load_model(str(tmp_path / "traj" / "checkpoints" / step))
        assert m.provenance.partial_weights is None


@pytest.mark.parametrize(
    "model, why",
    [
        ("twin:llama-3.2-1b", "builds a twin in memory with every weight"),
        ("weights.gguf", "a .gguf file is not a Hugging Face checkpoint"),
        ("smollm2-135m", "its weights ship offline as one GGUF file"),
    ],
)
def test_the_flag_is_refused_where_it_cannot_apply(model, why):
    with pytest.raises(GeoprobeError) as e:
        LoadOptions(model, allow_partial_weights=True).check()
    msg = str(e.value)
    assert msg.startswith(f"--allow-partial-weights does not apply to --model {model!r}: ") and why in msg, msg
    assert msg.endswith("drop --allow-partial-weights")


def test_the_flag_applies_to_hub_models_and_local_directories(base):
    for model in ("pythia-410m", "org/some-model", str(base)):
        assert LoadOptions(model, allow_partial_weights=True).check().allow_partial_weights


def test_the_summary_names_counts_and_the_first_names():
    pw = PartialWeights.of([f"model.layers.{i}.w" for i in (10, 2, 1, 0)], ["foo.a"], [("x.weight", (3, 4), (4, 4))])
    assert pw.missing[:3] == ("model.layers.0.w", "model.layers.1.w", "model.layers.2.w")  # numbers as numbers
    assert pw.summary() == (
        "4 tensors missing (model.layers.0.w, model.layers.1.w, model.layers.2.w, …), 1 unexpected (foo.a), "
        "1 of the wrong shape (x.weight: [3, 4] in the weights, [4, 4] in the config)"
    )
    assert pw.consequence() == (
        "transformers would initialise the missing and mis-shaped ones at random and drop the unexpected one"
    )
    assert pw.consequence("did") == (
        "transformers initialised the missing and mis-shaped ones at random and dropped the unexpected one"
    )


def test_a_report_with_error_messages_is_refused_and_a_report_less_load_goes_on():
    from geoprobe.models.partial import check_report, split_report

    info = {"missing_keys": set(), "unexpected_keys": set(), "mismatched_keys": set(), "error_msgs": ["bad\nthing"]}
    with pytest.raises(WeightsMismatchError, match=r"could not be loaded .*\(bad thing\); fix the checkpoint or pass"):
        check_report("ck", info, allow=True)  # no flag loads what transformers could not
    model = object()
    assert split_report(model) == (model, None) and check_report("ck", None, allow=False) is None
