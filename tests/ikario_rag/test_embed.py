"""The embedder: one-text fast path versus SentenceTransformer.encode()."""

from __future__ import annotations

import numpy as np

TEXTS = [
    "dev = Mickael",
    "Mickael s'est cassé l'épaule le 10 janvier 2026",
    "When did Caroline go to the LGBTQ support group?",
    "Melanie: Yes, last Friday! We painted a sunrise by the lake. " * 40,  # > 256 tokens
    "",
]


def test_it_embeds_one_text_exactly_as_sentence_transformers_does(embedder):
    for text in TEXTS:
        fast = embedder.encode([text])
        reference = embedder._model.encode(
            [text], normalize_embeddings=True, convert_to_numpy=True, show_progress_bar=False
        )
        assert fast.shape == (1, 384) and fast.dtype == np.float32
        assert np.abs(fast - reference).max() < 1e-5, text[:40]
        assert abs(float(np.linalg.norm(fast[0])) - 1.0) < 1e-5


def test_it_gives_a_text_the_same_vector_alone_or_in_a_batch(embedder):
    batch = embedder.encode(TEXTS)
    for row, text in zip(batch, TEXTS, strict=True):
        assert np.abs(embedder.encode([text])[0] - row).max() < 1e-5, text[:40]
