"""Checks at load time that geoprobe measures the model and not another one.

Each runs the model's own forward pass on a few random tokens (``PROBE_TOKENS``, twin-sized: a
few milliseconds on a tiny model, one short forward pass of a real one):

* :func:`check_causal`: a decoder's output at a position never depends on later tokens. Change
  the final token; every earlier position's logits must stay the same. An encoder used with an
  LM head (BERT, RoBERTa without ``is_decoder``) fails it and is refused (``bidirectional``):
  its "next-token" distribution is not one, and its final row is not a causal one.
* :func:`position_offset`: how the model numbers positions when it is given none. geoprobe must
  pass ``position_ids`` where a batch is left-padded; it passes the model's own numbering:
  ``0..n-1`` for almost every model, ``padding_idx + 1 ..`` for RoBERTa-style learned positions
  (RoBERTa, XLM-R, CamemBERT, Data2Vec-text …). None: the model numbers positions some other
  way, and geoprobe then never passes any (right padding only).
* :func:`check_same_model`: the logits with geoprobe's attention function installed (recording
  nothing) equal the model's own. A model that computes something else under it (a branch on the
  implementation's name that geoprobe does not reproduce, a mask it does not see) is refused
  (``other-computation``) instead of measured.
"""

from __future__ import annotations

from typing import Any

import torch

from geoprobe.errors import CaptureError, UnsupportedArchitectureError
from geoprobe.models.where import architecture_name, input_device

PROBE_TOKENS = 7
RTOL = 1e-4  # relative, of the logits' scale: float32 kernels with different orders agree to ~1e-6


def probe_ids(hf_model: Any, batch: int = 1, tokens: int = PROBE_TOKENS, seed: int = 0) -> torch.Tensor:
    """Random token ids that avoid the special ids below 3 and the model's pad id."""
    cfg = hf_model.config.get_text_config()
    vocab = int(getattr(cfg, "vocab_size", 0) or hf_model.get_input_embeddings().weight.shape[0])
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(min(3, vocab - 1), vocab, (batch, tokens), generator=g)
    pad = getattr(cfg, "pad_token_id", None)
    if isinstance(pad, int) and 3 <= pad < vocab:
        ids[ids == pad] = pad + 1 if pad + 1 < vocab else pad - 1
    return ids


#: what a model's own forward pass raises when token ids alone are not what it runs on
FORWARD_ERRORS = (RuntimeError, ValueError, TypeError, IndexError, KeyError, AttributeError)


def forward_fails(name: str, exc: BaseException) -> UnsupportedArchitectureError:
    """The one-line refusal of a model whose own forward pass on token ids fails (``forward-fails``)."""
    first = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:200]
    return UnsupportedArchitectureError(
        f"{name}: its own forward pass on token ids fails ({type(exc).__name__}: {first}); geoprobe feeds "
        "text only and cannot measure it",
        reason="forward-fails",
    )


def _logits(hf_model: Any, ids: torch.Tensor, **kw: Any) -> torch.Tensor:
    device = input_device(hf_model)
    kw = {k: v.to(device) if isinstance(v, torch.Tensor) else v for k, v in kw.items()}  # position ids
    try:
        with torch.no_grad():
            return hf_model(ids.to(device), use_cache=False, **kw).logits.float().cpu()
    except FORWARD_ERRORS as exc:
        if isinstance(exc, TypeError) and kw:
            raise  # a keyword the model does not take (position_ids): the caller decides
        raise forward_fails(architecture_name(hf_model), exc) from exc


def _relative_difference(a: torch.Tensor, b: torch.Tensor) -> float:
    """max |a − b| over the logits' scale max |b| (at least 1e-6), over the finite entries; inf where a
    non-finite entry of one is not one of the other (a model that overflows is told so by the capture, which
    names the layer and site, not by these checks). ``a`` and ``b`` have one shape."""
    fa, fb = torch.isfinite(a), torch.isfinite(b)
    if not bool((fa == fb).all()):
        return float("inf")
    if not bool(fa.any()):
        return 0.0
    return float((a[fa] - b[fb]).abs().max()) / float(b[fb].abs().max().clamp_min(1e-6))


def _close(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Equal within RTOL of the logits' scale (:func:`_relative_difference`)."""
    return a.shape == b.shape and _relative_difference(a, b) <= RTOL


def own_logits(hf_model: Any) -> torch.Tensor:
    """The model's own logits on :func:`probe_ids` (one row): the reference every check below compares
    with, computed once per load and passed to each."""
    return _logits(hf_model, probe_ids(hf_model))


def check_causal(hf_model: Any, name: str, own: torch.Tensor | None = None) -> None:
    """Refuse (``bidirectional``) a model whose output at a position depends on later tokens."""
    ids = probe_ids(hf_model)
    other = ids.clone()
    other[0, -1] = ids[0, -2] if int(ids[0, -2]) != int(ids[0, -1]) else int(ids[0, -1]) - 1
    a = own if own is not None else _logits(hf_model, ids)
    b = _logits(hf_model, other)
    if not _close(a[:, :-1], b[:, :-1]):
        hint = " (a BERT-style model: load it with is_decoder=True if it was trained as a decoder)"
        hint = hint if hasattr(hf_model.config, "is_decoder") else ""
        raise UnsupportedArchitectureError(
            f"{name}: its attention is not causal: changing the final token changes the output at earlier "
            f"positions, so each token sees later ones, as in an encoder{hint}; geoprobe measures decoders, whose "
            "tokens attend only to the tokens before them",
            reason="bidirectional",
        )


def _position_embeddings(hf_model: Any) -> list[torch.nn.Embedding]:
    return [
        m
        for n, m in hf_model.named_modules()
        if isinstance(m, torch.nn.Embedding) and "position" in n.rsplit(".", 1)[-1] and m.padding_idx is not None
    ]


def position_offset(hf_model: Any, own: torch.Tensor | None = None) -> int | None:
    """The first position number the model gives itself (see the module docstring); None when no
    candidate reproduces what it computes with no position ids."""
    ids = probe_ids(hf_model)
    own = own if own is not None else _logits(hf_model, ids)
    candidates = [0] + sorted({int(e.padding_idx) + 1 for e in _position_embeddings(hf_model)})
    for offset in candidates:
        try:
            got = _logits(hf_model, ids, position_ids=torch.arange(ids.shape[1])[None] + offset)
        except TypeError:  # the model takes no position ids: it numbers positions itself
            return None
        if _close(got, own):
            return offset
    return None


def position_ids(offset: int | None, mask: torch.Tensor, what: str = "this model") -> torch.Tensor | None:
    """The position ids to pass with a padded batch (``mask``: 1 on tokens): the model's own numbering
    of each row's real tokens, or None (let the model number them) for a model whose numbering
    geoprobe does not know, which only right-padded batches may use."""
    if offset is not None:
        return (mask.cumsum(1) - 1).clamp(min=0) + offset
    if bool((mask[:, 0] == 0).any()):
        raise CaptureError(
            f"{what} numbers positions its own way, which geoprobe cannot reproduce for left-padded prompts; "
            "pass --padding-side right"
        )
    return None


def check_same_model(hf_model: Any, name: str, activated: Any, own: torch.Tensor | None = None) -> None:
    """Refuse (``other-computation``) a model whose logits change when ``activated`` (a context
    manager factory installing geoprobe's attention function, recording nothing) is active."""
    ids = probe_ids(hf_model)
    own = own if own is not None else _logits(hf_model, ids)
    with activated():
        got = _logits(hf_model, ids)
    if not _close(got, own):
        diff = float((got - own).abs().max())
        raise UnsupportedArchitectureError(
            f"{name}: with geoprobe's attention function its logits change (by up to {diff:.3g}), so the model "
            "computes something else under it than on its own; geoprobe refuses to measure another model",
            reason="other-computation",
        )


#: config sizes of a sparse, windowed or chunked selection of keys (the text config's; a dict's values too)
SELECTION_KEYS = ("index_topk", "sliding_window", "attention_chunk_size", "compress_rates", "window_size")
SELECTION_CAP = 256  # tokens: the longest probe row the padding check runs (longer selections are not reached)


def selection_size(hf_model: Any) -> int:
    """The largest key-selection size the text config declares (index top-k, window, chunk, compression
    rate), up to :data:`SELECTION_CAP`; 0 where it declares none."""
    cfg = hf_model.config.get_text_config()
    sizes: list[int] = []
    for key in SELECTION_KEYS:
        v = getattr(cfg, key, None)
        for x in v.values() if isinstance(v, dict) else (v,):
            if isinstance(x, int) and not isinstance(x, bool) and 0 < x <= SELECTION_CAP:
                sizes.append(x)
    return max(sizes, default=0)


#: probe batches the padding check runs where the model picks keys by top-k (ties are data-dependent: one
#: batch missed AXK2's indexer), and elsewhere (windows and chunks are structural)
TOPK_DRAWS, PLAIN_DRAWS = 4, 1


def padding_tolerance(hf_model: Any) -> float:
    """Relative |Δ logit| a padded row may differ from the row alone by: :data:`RTOL` in float32; in half
    precision 16 units of its roundoff (bfloat16 0.125, float16 0.016), since a padded batch runs other
    kernel shapes whose rounding a deep model grows (a bfloat16 twin of Mistral-7B: 6 % in its values)."""
    dtype = next(hf_model.parameters()).dtype
    return RTOL if dtype == torch.float32 or not dtype.is_floating_point else max(RTOL, 16 * torch.finfo(dtype).eps)


def padding_dependence(hf_model: Any, offset: int | None) -> dict[str, float]:
    """{padding side: how far padding moves the model's own output} for the sides where it does: rows
    shorter and longer than the model's key selection (:func:`selection_size`) in one batch, padded right
    and (where geoprobe knows the position numbering, ``offset``) left, with the position ids a capture
    passes, each against the row alone at every position; the figure is the largest |Δ logit| over the
    logits' scale, reported where it exceeds :func:`padding_tolerance`. DeepSeek-V3.2's, GLM-5's and AXK2's indexers
    pick their top-k keys differently in a padded row (ties broken by position): such a model is captured
    one length at a time. Where the model picks keys by top-k, :data:`TOPK_DRAWS` batches of random ids;
    in half precision the tolerance is the dtype's (:func:`padding_tolerance`)."""
    selection = selection_size(hf_model)
    n = max(PROBE_TOKENS, selection + 3)
    topk = getattr(hf_model.config.get_text_config(), "index_topk", None)
    by_topk = isinstance(topk, int) and 0 < topk <= SELECTION_CAP
    lengths = (n + 6, n + 2, n, n - 2) if by_topk else (n + 5, n)  # the first row is the unpadded one
    moved: dict[str, float] = {}
    for draw in range(TOPK_DRAWS if by_topk else PLAIN_DRAWS):
        ids = probe_ids(hf_model, len(lengths), lengths[0], seed=draw)
        alone = [None] + [_logits(hf_model, ids[r : r + 1, :t])[0] for r, t in enumerate(lengths) if r]
        for side in ("right", "left") if offset is not None else ("right",):
            if side in moved:
                continue
            worst = _padded_against_alone(hf_model, offset, ids, lengths, alone, side)
            if worst:
                moved[side] = worst
    return moved


def _padded_against_alone(
    hf_model: Any, offset: int | None, ids: torch.Tensor, lengths: tuple[int, ...], alone: list, side: str
) -> float:
    """The largest relative |Δ logit| of rows 1.. of ``ids`` (cut to ``lengths``) padded on ``side`` in one
    batch against each alone (``alone``; non-finite entries must sit at the same places); 0.0 where every row
    is within :func:`padding_tolerance` (or no padded batch runs)."""
    batch = torch.full_like(ids, int(ids[0, 0]))
    mask = torch.zeros_like(ids)
    spans = []
    for r, t in enumerate(lengths):
        span = slice(0, t) if side == "right" else slice(lengths[0] - t, lengths[0])
        batch[r, span], mask[r, span] = ids[r, :t], 1
        spans.append(span)
    positions = position_ids(offset, mask)
    try:
        got = _logits(
            hf_model, batch, attention_mask=mask, **({} if positions is None else {"position_ids": positions})
        )
    except (TypeError, UnsupportedArchitectureError):  # no padded batches at all: a capture says so itself
        return 0.0
    worst = max(_relative_difference(got[r, spans[r]], alone[r]) for r in range(1, len(lengths)))
    return worst if worst > padding_tolerance(hf_model) else 0.0
