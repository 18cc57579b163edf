"""Experience replay: buffer, embedders, vector index, offline data."""

from dreamgym_env.replay.buffer import ExperienceReplayBuffer, content_key
from dreamgym_env.replay.embedders import (
    Embedder,
    HashedEmbedder,
    SentenceTransformerEmbedder,
    make_embedder,
    sentence_transformer_available,
)
from dreamgym_env.replay.grounding import ReplayGrounder, compact_demonstration, compact_text
from dreamgym_env.replay.index import ExactIndex, IVFIndex, PartitionedIndex, VectorIndex, faiss_available
from dreamgym_env.replay.records import (
    EVICTION_ORDER,
    GROUNDING_SOURCES,
    SOURCES,
    BufferStats,
    ReplayHit,
    ReplayRecord,
)

__all__ = [
    "EVICTION_ORDER",
    "GROUNDING_SOURCES",
    "SOURCES",
    "BufferStats",
    "Embedder",
    "ExactIndex",
    "ExperienceReplayBuffer",
    "HashedEmbedder",
    "IVFIndex",
    "PartitionedIndex",
    "ReplayGrounder",
    "ReplayHit",
    "ReplayRecord",
    "SentenceTransformerEmbedder",
    "VectorIndex",
    "compact_demonstration",
    "compact_text",
    "content_key",
    "faiss_available",
    "make_embedder",
    "sentence_transformer_available",
]
