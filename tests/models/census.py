"""The census: every causal-LM type of the installed transformers, built tiny and classified.

For each key of ``MODEL_FOR_CAUSAL_LM_MAPPING_NAMES``, :func:`classify` builds the tiny twin
(``geoprobe.models.tiny``, once), boots it as every geoprobe command does (``loaded.boot``) and
puts it in one of these classes:

* ``captured``: a right-padded batch of three prompts (13, 9 and 5 tokens: longer than the
  twins' 6-token windows and sparse-attention top-k) captured through geoprobe equals, for
  every attention layer and head, the attention entropy of each prompt's final row of Hugging
  Face's own eager ``output_attentions`` on the same batch (1e-4 bits; the row normalised over the
  keys, which is geoprobe's one definition for models with attention sinks); the next-token
  entropy of every prompt equals the one of the model's own forward pass on the same batch
  without geoprobe (1e-4 bits), so geoprobe measured the model and not another one; the recorded
  values equal the layer's V projection of its input at the final token (1e-5 relative) where a
  linear V exists. Where the model's own output for a prompt moves with padding (DeepSeek-V3.2's
  top-k indexer breaks ties by position), the row says by how much; padding correctness of geoprobe
  itself is checked per prompt, unpadded, by tests/models/test_attention.py;
* ``refused``: geoprobe refuses it in one line, with a reason from ``REASONS``
  (``UnsupportedArchitectureError.reason``);
* ``cannot build``: transformers cannot build its tiny twin (the reason is kept);
* ``wrong`` or ``crash``: a defect (different numbers, or an exception other than a refusal).

``python -m tests.models.census --markdown`` writes the table docs/models.md carries (between
its census markers); ``tests/models/test_census.py`` runs the census and fails when a type is
wrong or crashes, or when its row differs from the checked-in table.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import sys
import time
import traceback
import warnings
from dataclasses import dataclass
from typing import Any

import torch

from geoprobe.errors import GeoprobeError, UnsupportedArchitectureError
from geoprobe.models.attention import Probe, entropy_bits
from geoprobe.models.reasons import REASONS, counted
from geoprobe.models.verify import position_ids

LENGTHS = (13, 9, 5)
ENTROPY_TOL = 1e-4  # bits, as tests/models/test_attention.py
VALUE_RTOL = 1e-5
ROW_TOL = 1e-4  # a final row against the prompt alone: the batch's own rounding is ~1e-7
MAX_PARAMETERS = 20_000_000  # a tiny twin has well under 1M; more means the type ignored the tiny keys
BEGIN, END = "<!-- census:begin -->", "<!-- census:end -->"


@dataclass(frozen=True)
class Row:
    model_type: str
    status: str  # captured | refused | cannot build | wrong | crash
    mechanism: str  # captured: interface, inline-sdpa, legacy; refused: the reason key; else ''
    detail: str  # what was found (layers, or the refusal / failure)

    @property
    def counted(self) -> bool:
        """A decoder-only softmax-attention architecture (the denominator of the census)."""
        return self.status != "cannot build" and not (self.status == "refused" and not counted(self.mechanism))


#: configurations of a type beside its default that the census also covers (``tiny.VARIANTS``): BERT-style
#: models trained as decoders, where RoBERTa's own position numbering matters
DECODER_VARIANTS = ("bert/decoder", "roberta/decoder", "xlm-roberta/decoder")


def types() -> list[str]:
    """Every key of the installed transformers' MODEL_FOR_CAUSAL_LM_MAPPING_NAMES, then DECODER_VARIANTS."""
    from transformers.models.auto.modeling_auto import MODEL_FOR_CAUSAL_LM_MAPPING_NAMES

    return sorted(MODEL_FOR_CAUSAL_LM_MAPPING_NAMES) + list(DECODER_VARIANTS)


def _first_line(exc: BaseException, limit: int = 160) -> str:
    text = (str(exc).strip().splitlines() or [""])[0]
    text = f"{type(exc).__name__}: {text}" if not isinstance(exc, GeoprobeError) else text
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _prompts(vocab: int) -> list[torch.Tensor]:
    g = torch.Generator().manual_seed(0)
    return [torch.randint(3, min(vocab, 512), (n,), generator=g) for n in LENGTHS]


def _right_padded(seqs: list[torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor]:
    T = max(len(s) for s in seqs)
    ids = torch.zeros(len(seqs), T, dtype=torch.long)
    mask = torch.zeros(len(seqs), T, dtype=torch.long)
    for b, s in enumerate(seqs):
        ids[b, : len(s)], mask[b, : len(s)] = s, 1
    return ids, mask


def _attention_inputs(arch: Any) -> tuple[dict[int, torch.Tensor], Any]:
    """A pre-hook on each attention module keeping its input at the probe's final positions."""
    kept: dict[int, torch.Tensor] = {}
    handles = []
    for layer, mod in arch.modules.items():

        def pre(m: Any, args: tuple, kwargs: dict, _layer: int = layer) -> None:
            x = args[0] if args else kwargs["hidden_states"]
            kept[_layer] = x.detach()

        handles.append(mod.register_forward_pre_hook(pre, with_kwargs=True))
    return kept, handles


def _check(model: Any, loaded: Any) -> str:
    """'' when geoprobe's capture equals the model's own numbers; else what differs. The prompts are batched
    as a capture batches them: together, right-padded, or one length per batch where padding moves the
    model's own output (``Architecture.padding_dependent``: each prompt alone here, their lengths differ).
    Where the model selects keys (an indexer's top-k, a window, a chunk: ``verify.selection_size``, smaller
    than the prompts), each prompt's captured final row is also compared with the model's own eager forward
    on that prompt alone (:data:`ROW_TOL`): the case that hid DeepSeek-V3.2's and GLM-5's padded indexers."""
    from geoprobe.capture.memory import forward_peak_bytes
    from geoprobe.models.tiny import same_weights
    from geoprobe.models.verify import selection_size

    seqs = _prompts(int(loaded.hf_model.config.get_text_config().vocab_size))
    forward_peak_bytes(loaded, len(seqs), max(LENGTHS))  # what capture() asks first (Gemma 3n's list widths crashed it)
    alone = "right" in loaded.arch.padding_dependent
    batches = [[s] for s in seqs] if alone else [seqs]
    probes = []
    for batch in batches:
        problem, probe = _check_batch(model, loaded, batch)
        if problem:
            return problem if not alone else f"{problem} (alone)"
        probes.append(probe)
    if alone or not selection_size(loaded.hf_model):
        return ""
    eager = same_weights(loaded.hf_model, "eager")
    layers = loaded.arch.layout.model_layers
    for b, seq in enumerate(seqs):
        with torch.no_grad():
            out = eager(seq[None], output_attentions=True, use_cache=False)
        maps = [a for a in (out.attentions or ()) if a is not None]
        if len(maps) != len(layers):
            continue  # checked on the batch above (the maps of the captured layers' own modules)
        for i, layer in enumerate(layers):
            row = maps[i][0, :, -1].double()
            row = row / row.sum(-1, keepdim=True)
            rec = probes[0].records[layer]
            if row.shape[-1] != len(seq):  # keys beside the positions (DeepSeek-V4's compressed ones): the entropy
                diff = float((rec.entropy[b].double() - entropy_bits(row)).abs().max())  # over all of them
                if diff > ENTROPY_TOL:
                    return (
                        f"layer {layer}: prompt {b}'s attention entropy in the padded batch differs from the model's "
                        f"own eager forward on the prompt alone by {diff:.3g} bits"
                    )
                continue
            got = rec.distribution[b, :, : len(seq)].double()
            diff = float((got - row).abs().max())
            if diff > ROW_TOL:
                return (
                    f"layer {layer}: prompt {b}'s final row in the padded batch differs from the model's own eager "
                    f"forward on the prompt alone by {diff:.3g}"
                )
    return ""


def _check_batch(model: Any, loaded: Any, seqs: list[torch.Tensor]) -> tuple[str, Any]:
    """('' or what differs, the probe) for one right-padded batch of ``seqs``, against eager on the same batch."""
    from geoprobe.capture.forward import final_hidden, run_batch
    from geoprobe.models.architecture import probing
    from geoprobe.models.tiny import same_weights

    hf, arch = loaded.hf_model, loaded.arch
    ids, mask = _right_padded(seqs)
    probe = Probe(distribution=True)
    kept, handles = _attention_inputs(arch)
    try:
        with probing(hf, arch, probe), final_hidden(loaded, probe), torch.no_grad():
            logits = run_batch(loaded, probe, ids, mask)
    finally:
        for h in handles:
            h.remove()
    layers = arch.layout.model_layers
    missing = [ly for ly in layers if ly not in probe.records or probe.records[ly].entropy is None]
    if missing:
        return f"layers {missing} recorded nothing", probe
    eager = same_weights(hf, "eager")
    last = probe.last
    positions = position_ids(arch.position_offset, mask)
    kw = {"attention_mask": mask, "use_cache": False, **({} if positions is None else {"position_ids": positions})}
    with torch.no_grad(), _weights_of(eager, hf, arch) as by_layer:
        own = hf(ids, **kw).logits.float()
        out = eager(ids, output_attentions=True, **kw)
    maps = [a for a in (out.attentions or ()) if a is not None]
    if len(maps) != len(layers) and len(by_layer) == len(layers):
        # the model also returns something from other modules (MiniMax's linear-attention state):
        # take the maps the captured layers' own modules returned
        maps = [by_layer[layer] for layer in layers]
    if len(maps) != len(layers):
        return f"eager gave {len(maps)} attention maps for {len(layers)} attention layers", probe
    for b in range(len(seqs)):
        got = entropy_bits(torch.softmax(logits[b].double(), -1))
        want = entropy_bits(torch.softmax(own[b, last[b]].double(), -1))
        if abs(float(got - want)) > ENTROPY_TOL:
            return f"prompt {b}: next-token entropy {float(got):.4f} bits, the model's own {float(want):.4f}", probe
        for i, layer in enumerate(layers):
            row = maps[i][b, :, last[b]].double()
            ref = entropy_bits(row / row.sum(-1, keepdim=True))  # over the keys (sinks: docs/models.md)
            rec = probe.records[layer].entropy[b].double()
            if ref.shape != rec.shape:
                return f"layer {layer}: {rec.shape[0]} heads recorded, eager has {ref.shape[0]}", probe
            diff = float((rec - ref).abs().max())
            if diff > ENTROPY_TOL:
                return f"layer {layer}: attention entropy differs from eager by {diff:.3g} bits (prompt {b})", probe
    for layer in layers:
        spec = arch.v_specs.get(layer)
        if spec is None:
            continue
        x = kept[layer][torch.arange(ids.shape[0]), last]
        want = spec.project(arch.modules[layer], x).float()
        got = probe.records[layer].v
        err = float((got - want).norm() / want.norm().clamp_min(1e-12))
        if err > VALUE_RTOL:
            return f"layer {layer}: recorded values differ from the V projection by {err:.2g} (relative)", probe
    return "", probe


def padding_note(loaded: Any) -> str:
    """'' when each prompt's final next-token entropy is the same in the padded batch and alone; else
    how far the model's own output moves with padding (the model's property, not geoprobe's)."""
    hf, arch = loaded.hf_model, loaded.arch
    seqs = _prompts(int(hf.config.get_text_config().vocab_size))
    ids, mask = _right_padded(seqs)
    positions = position_ids(arch.position_offset, mask)
    with torch.no_grad():
        padded = hf(
            ids, attention_mask=mask, use_cache=False, **({} if positions is None else {"position_ids": positions})
        ).logits
        moved = 0.0
        for b, seq in enumerate(seqs):
            alone = hf(seq[None], use_cache=False).logits[0, -1].double()
            h = entropy_bits(torch.softmax(padded[b, len(seq) - 1].double(), -1))
            moved = max(moved, abs(float(h - entropy_bits(torch.softmax(alone, -1)))))
    return "" if moved <= ENTROPY_TOL else f"; padding moves the model's own next-token entropy by {moved:.2g} bits"


def dependence_note(loaded: Any) -> str:
    """'' unless geoprobe found at load that padding moves the model's own output; else by how much, per
    side, and that it is captured one length per batch (each prompt as it is alone)."""
    moved = loaded.arch.padding_dependent
    if not moved:
        return ""
    sides = ", ".join(f"{side} {d:.2g}" for side, d in sorted(moved.items(), reverse=True))
    return f"; padding moves the model's own logits ({sides} of their scale): captured one length per batch"


@contextlib.contextmanager
def _weights_of(eager: Any, hf: Any, arch: Any) -> Any:
    """{layer: the attention weights its module returned} in ``eager`` (the same modules as ``hf``'s)."""
    names = {id(m): n for n, m in hf.named_modules()}
    mods = dict(eager.named_modules())
    kept: dict[int, torch.Tensor] = {}
    handles = []
    for layer, mod in arch.modules.items():

        def post(m: Any, args: Any, out: Any, _layer: int = layer) -> None:
            if isinstance(out, tuple) and len(out) > 1 and isinstance(out[1], torch.Tensor):
                kept[_layer] = out[1]

        handles.append(mods[names[id(mod)]].register_forward_hook(post))
    try:
        yield kept
    finally:
        for h in handles:
            h.remove()


def _loaded(model: Any) -> Any:
    from geoprobe.models.loaded import boot
    from geoprobe.provenance import Provenance

    class _Tok:  # boot wants a tokenizer; the census feeds token ids
        pad_token = "<pad>"

    prov = Provenance(model_id="census", source="twin", weights="random-init seed=0", tokenizer="", dtype="float32")
    return boot(model, _Tok(), prov)


def parameters_on_meta(model_type: str) -> int:
    """The tiny twin's parameter count, built on the meta device (nothing allocated)."""
    from geoprobe.models.tiny import causal_lm, tiny_config

    with torch.device("meta"):
        model = causal_lm(tiny_config(model_type))
    return sum(p.numel() for p in model.parameters())


def classify(model_type: str) -> Row:
    from geoprobe.models.tiny import tiny_model

    built = ""
    try:
        with warnings.catch_warnings(), contextlib.redirect_stderr(io.StringIO()):
            warnings.simplefilter("ignore")
            n = parameters_on_meta(model_type)
            if n > MAX_PARAMETERS:
                return Row(
                    model_type, "cannot build", "", f"the tiny config leaves {n:,} parameters (keys it does not read)"
                )
            model = tiny_model(model_type)
    except ImportError as exc:  # a tower that needs a library not installed: the text model alone, where it has one
        try:
            with warnings.catch_warnings(), contextlib.redirect_stderr(io.StringIO()):
                warnings.simplefilter("ignore")
                model = tiny_model(model_type, text_only=True)
        except Exception:  # noqa: BLE001
            return Row(model_type, "cannot build", "", _first_line(exc))
        if model.config.model_type == model_type:  # no text config of its own: the same failure
            return Row(model_type, "cannot build", "", _first_line(exc))
        built = f" (its text model {model.config.model_type}: the whole twin needs {_first_line(exc, 60)})"
    except Exception as exc:  # noqa: BLE001 - any failure of transformers to build is recorded
        return Row(model_type, "cannot build", "", _first_line(exc))
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            loaded = _loaded(model)
            problem = _check(model, loaded)
    except UnsupportedArchitectureError as exc:
        reason = exc.reason or "?"
        if reason not in REASONS:
            return Row(model_type, "crash", "", f"refused without a documented reason: {_first_line(exc)}")
        return Row(model_type, "refused", reason, _first_line(exc, 400))
    except Exception as exc:  # noqa: BLE001 - a defect: the census names it
        where = traceback.extract_tb(exc.__traceback__)[-1]
        return Row(model_type, "crash", "", f"{_first_line(exc)} ({where.filename.rsplit('/', 1)[-1]}:{where.lineno})")
    if problem:
        return Row(model_type, "wrong", loaded.arch.mechanism, problem)
    lay = loaded.layout
    where = "" if lay.layer_ids is None else f" (model layers {list(lay.layer_ids)})"
    return Row(
        model_type,
        "captured",
        loaded.arch.mechanism,
        f"{lay.n_layers} attention layers{where}, {heads(lay)}{dependence_note(loaded) or padding_note(loaded)}{built}",
    )


def heads(lay: Any) -> str:
    """'4/2 heads', or where layers differ, each layout and its layers: '4/2 heads of width 16 (layers
    0-4), 4/2 of width 32 (layer 5)'."""
    if lay.uniform:
        return f"{lay.n_heads}/{lay.n_kv_heads} heads"
    groups: dict[Any, list[int]] = {}
    for i in range(lay.n_layers):
        groups.setdefault(lay.heads(i), []).append(i)
    parts = []
    for h, ly in groups.items():
        width = f"{h.d_qk}" if h.d_qk == h.d_head else f"{h.d_qk} (values {h.d_head})"
        which = (
            f"layer {ly[0]}"
            if len(ly) == 1
            else f"layers {ly[0]}-{ly[-1]}"
            if ly == list(range(ly[0], ly[-1] + 1))
            else f"layers {ly}"
        )
        parts.append(f"{h.n_heads}/{h.n_kv_heads} heads of width {width} ({which})")
    return ", ".join(parts)


def census(only: list[str] | None = None, progress: bool = False) -> list[Row]:
    from geoprobe.models.loaded import quiet_libraries

    quiet_libraries()
    torch.set_num_threads(1)
    rows = []
    for t in only or types():
        rows.append(classify(t))
        if progress:
            r = rows[-1]
            print(f"{r.model_type:28s} {r.status:13s} {r.mechanism:22s} {r.detail}", flush=True)
    return rows


def summary(rows: list[Row]) -> str:
    counted_rows = [r for r in rows if r.counted]
    captured = sum(r.status == "captured" for r in counted_rows)
    variants = sum("/" in r.model_type for r in rows)
    return (
        f"{len(rows) - variants} causal-LM types and {variants} decoder variants; {len(counted_rows)} decoder-only "
        f"softmax-attention architectures, {captured} captured and equal to eager, "
        f"{sum(r.status == 'refused' for r in counted_rows)} refused with a reason, "
        f"{sum(r.status in ('wrong', 'crash') for r in rows)} wrong or crashing; "
        f"{sum(r.status == 'refused' and not r.counted for r in rows)} refused as not that kind of model, "
        f"{sum(r.status == 'cannot build' for r in rows)} whose tiny twin transformers cannot build"
    )


def table_version(text: str) -> str | None:
    """The transformers version the table in ``text`` was generated with."""
    import re

    m = re.search(r"census --markdown` with transformers ([0-9][^:\s]*):", text)
    return m.group(1) if m else None


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def markdown(rows: list[Row]) -> str:
    import transformers

    lines = [
        BEGIN,
        f"Generated by `python -m tests.models.census --markdown` with transformers {transformers.__version__}: "
        f"{summary(rows)}.",
        "",
        "| model type | status | mechanism or reason | what was found |",
        "|---|---|---|---|",
    ]
    lines += [f"| `{r.model_type}` | {r.status} | {r.mechanism} | {_cell(r.detail)} |" for r in rows]
    lines.append(END)
    return "\n".join(lines)


def parse(text: str) -> dict[str, tuple[str, str]]:
    """{model type: (status, mechanism)} from the table in ``text`` (docs/models.md)."""
    body = text.split(BEGIN, 1)[1].split(END, 1)[0] if BEGIN in text else ""
    out = {}
    for line in body.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) >= 3 and cells[0].startswith("`"):
            out[cells[0].strip("`")] = (cells[1], cells[2])
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--markdown", action="store_true", help="print the docs/models.md table")
    ap.add_argument("types", nargs="*", help="only these model types")
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    rows = census(args.types or None, progress=not args.markdown)
    print(markdown(rows) if args.markdown else summary(rows))
    print(f"{time.perf_counter() - t0:.0f} s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
