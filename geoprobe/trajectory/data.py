"""The training data of a trajectory: the bundled corpora (:mod:`geoprobe.corpora`), a byte-level BPE
trained on them, one token stream, and the batches of every step.

* Documents: every document of each chosen domain, in the corpora's fixed order; every
  ``heldout_every``-th document of a domain (the last of each run of N) is held out: never trained on,
  scored at each checkpoint (``eval_loss``).
* Tokenizer: a byte-level BPE (the GPT-2 / GPT-NeoX scheme: bytes, the GPT-2 pre-tokenising regex, no
  prefix space) of ``vocab_size`` tokens trained on the training documents with the ``tokenizers``
  library; ``<|endoftext|>`` (id 0) separates documents and is BOS/EOS, ``<|padding|>`` (id 1) pads,
  as in Pythia's tokenizer. Training it is deterministic (the same texts give the same tokenizer.json).
* Stream: each document's tokens followed by ``<|endoftext|>``, documents concatenated (Pythia's packing).
* Batches: the rows of step ``s`` are windows of ``seq_len + 1`` tokens at offsets drawn from a numpy
  generator seeded ``(seed, s)``, so a resumed run sees exactly the batches an uninterrupted one would.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np
from jaxtyping import Int

from geoprobe.experiment.reporter import Reporter
from geoprobe.serial import Record
from geoprobe.trajectory.config import EOS_TOKEN, PAD_TOKEN, TrajectoryConfig, TrajectoryError


@dataclass(frozen=True, eq=False)
class DataRecord(Record):
    """What a trajectory was trained on, with the hashes that identify it."""

    source: str  # "corpora" (geoprobe.corpora, CORPUS_VERSION) or "documents" (passed to the API)
    corpus_version: str
    domains: tuple[str, ...]
    documents: dict[str, int]  # domain (or "documents") -> training documents
    heldout_documents: dict[str, int]
    chars: int  # characters of the training documents
    train_tokens: int
    heldout_tokens: int
    text_sha256: str  # over the training documents, in order, length-prefixed
    tokens_sha256: str  # over the training token stream (int32, little-endian)
    tokenizer_sha256: str  # over the trained BPE's tokenizer.json text (OUT/resume/tokenizer.json)


def text_hash(texts: Sequence[str]) -> str:
    """sha256 over ``texts`` in order, each length-prefixed (so ["ab", "c"] != ["a", "bc"])."""
    h = hashlib.sha256()
    for t in texts:
        b = t.encode("utf-8")
        h.update(len(b).to_bytes(8, "little"))
        h.update(b)
    return h.hexdigest()


def ids_hash(ids: Int[np.ndarray, " n"]) -> str:
    return hashlib.sha256(np.ascontiguousarray(ids, dtype="<i4").tobytes()).hexdigest()


def split_documents(
    by_domain: dict[str, list[str]], heldout_every: int
) -> tuple[dict[str, list[str]], dict[str, list[str]]]:
    """Training and held-out documents of each domain: the ``heldout_every``-th, 2·N-th, … are held out."""
    train = {d: [t for i, t in enumerate(docs) if (i + 1) % heldout_every] for d, docs in by_domain.items()}
    held = {d: [t for i, t in enumerate(docs) if not (i + 1) % heldout_every] for d, docs in by_domain.items()}
    return train, held


def read_corpora(domains: Sequence[str]) -> dict[str, list[str]]:
    """The cleaned text of every document of each domain (raises the corpora's one-line errors for a
    domain whose package is not installed)."""
    from geoprobe.corpora import documents

    return {d: [text for _, text in documents(d)] for d in domains}


def train_tokenizer(texts: Sequence[str], vocab_size: int) -> str:
    """A byte-level BPE of ``vocab_size`` tokens trained on ``texts``, as its ``tokenizer.json`` text."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=[EOS_TOKEN, PAD_TOKEN],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(list(texts), trainer)
    return tok.to_str()


def hf_tokenizer(tokenizer_json: str) -> Any:
    """The transformers tokenizer (what ``AutoTokenizer`` loads back from a checkpoint directory) of a
    ``tokenizer.json`` text, its special tokens set as Pythia's are; built the same way in a fresh and a
    resumed run, so both write the same tokenizer files."""
    from tokenizers import Tokenizer
    from transformers import PreTrainedTokenizerFast

    return PreTrainedTokenizerFast(
        tokenizer_object=Tokenizer.from_str(tokenizer_json),
        bos_token=EOS_TOKEN,
        eos_token=EOS_TOKEN,
        unk_token=EOS_TOKEN,
        pad_token=PAD_TOKEN,
        model_max_length=2048,
        clean_up_tokenization_spaces=False,
    )


#: documents encoded at once: a tokenizers ``Encoding`` holds ~90 bytes a token (ids, offsets, masks, token
#: strings), so encoding all the corpora in one batch peaked at 650 MB above the 28 MB stream it yields
ENCODE_CHUNK = 256


def encode(tokenizer: Any, texts: Sequence[str]) -> Int[np.ndarray, " n"]:
    """The token stream of ``texts``: each document's ids followed by ``<|endoftext|>`` (encoded
    :data:`ENCODE_CHUNK` documents at a time; the same ids as one batch)."""
    eos = tokenizer.convert_tokens_to_ids(EOS_TOKEN)
    parts: list[np.ndarray] = []
    texts = list(texts)
    for i in range(0, len(texts), ENCODE_CHUNK):
        for enc in tokenizer.backend_tokenizer.encode_batch(texts[i : i + ENCODE_CHUNK], add_special_tokens=False):
            parts.append(np.asarray(enc.ids, dtype=np.int32))
            parts.append(np.asarray([eos], dtype=np.int32))
    return np.concatenate(parts) if parts else np.zeros(0, dtype=np.int32)


@dataclass(frozen=True, eq=False)
class TokenData:
    """The tokenizer (``tokenizer_json`` wrapped for transformers), the two token streams, their record."""

    tokenizer_json: str
    tokenizer: Any
    train: Int[np.ndarray, " n"]
    heldout: Int[np.ndarray, " m"]
    record: DataRecord


def characters(n: int) -> str:
    """``n`` characters in words: "24.3 M characters", "203,132 characters"."""
    return f"{n / 1e6:.1f} M characters" if n >= 1_000_000 else f"{n:,} characters"


def prepare(
    config: TrajectoryConfig,
    documents: Sequence[str] | None = None,
    tokenizer_json: str | None = None,
    reporter: Reporter | None = None,
) -> TokenData:
    """Read (or take) the documents, split them, train the tokenizer (unless its ``tokenizer_json`` is
    given: a resumed run reads its own back) and encode both streams. ``documents``: texts to train on
    instead of the corpora (the Python API's; tests plant learnable structure this way). Each step says
    what it does as it starts (``reporter.status``: the six corpora take about a minute)."""
    from geoprobe.corpora import CORPUS_VERSION

    reporter = reporter or Reporter()
    if documents is not None:
        by_domain, source, version = {"documents": list(documents)}, "documents", ""
    else:
        with reporter.status(f"reading the corpora ({', '.join(config.domains)}) …"):
            by_domain, source, version = read_corpora(config.domains), "corpora", CORPUS_VERSION
    train, held = split_documents(by_domain, config.heldout_every)
    train_texts = [t for docs in train.values() for t in docs]
    held_texts = [t for docs in held.values() for t in docs]
    if not train_texts:
        raise TrajectoryError("no training documents; pass documents (or --domains) with some text")
    chars = sum(len(t) for t in train_texts)
    if tokenizer_json is None:
        with reporter.status(
            f"training the BPE tokenizer ({config.vocab_size:,} tokens) on {characters(chars)} of "
            f"{len(train_texts):,} documents …"
        ):
            tokenizer_json = train_tokenizer(train_texts, config.vocab_size)
    held_chars = sum(len(t) for t in held_texts)
    with reporter.status(f"tokenising {characters(chars + held_chars)} (training and held-out documents) …"):
        tokenizer = hf_tokenizer(tokenizer_json)
        train_ids = encode(tokenizer, train_texts)
        held_ids = encode(tokenizer, held_texts)
    need = config.seq_len + 1
    if train_ids.size < need + 1:
        raise TrajectoryError(
            f"the training text holds {train_ids.size} tokens, fewer than one window of --seq-len "
            f"{config.seq_len} + 1; pass more text (--domains) or a smaller --seq-len"
        )
    record = DataRecord(
        source=source,
        corpus_version=version,
        domains=tuple(by_domain) if documents is None else (),
        documents={d: len(v) for d, v in train.items()},
        heldout_documents={d: len(v) for d, v in held.items()},
        chars=chars,
        train_tokens=int(train_ids.size),
        heldout_tokens=int(held_ids.size),
        text_sha256=text_hash(train_texts),
        tokens_sha256=ids_hash(train_ids),
        tokenizer_sha256=hashlib.sha256(tokenizer_json.encode("utf-8")).hexdigest(),
    )
    return TokenData(tokenizer_json, tokenizer, train_ids, held_ids, record)


def windows(ids: Int[np.ndarray, " n"], starts: Int[np.ndarray, " b"], length: int) -> Int[np.ndarray, "b length"]:
    return np.stack([ids[s : s + length] for s in starts]).astype(np.int64)


def step_batch(config: TrajectoryConfig, ids: Int[np.ndarray, " n"], step: int) -> Int[np.ndarray, "b t1"]:
    """The ``batch_size`` windows of ``seq_len + 1`` tokens that step ``step`` trains on."""
    rng = np.random.default_rng([config.seed, step])
    starts = rng.integers(0, ids.size - config.seq_len - 1, size=config.batch_size, endpoint=True)
    return windows(ids, starts, config.seq_len + 1)


def eval_batch(config: TrajectoryConfig, ids: Int[np.ndarray, " n"]) -> Int[np.ndarray, "w t1"] | None:
    """The held-out windows scored at every checkpoint: ``eval_windows`` evenly spaced, non-overlapping
    where the held-out stream is long enough; None when it is shorter than one window."""
    length = config.seq_len + 1
    if ids.size < length:
        return None
    n = min(config.eval_windows, ids.size // length)
    starts = np.linspace(0, ids.size - length, n).round().astype(np.int64)
    return windows(ids, starts, length)
