"""The embedder's `spinning=False` (idle onnxruntime threads sleep) changes timing only, never vectors."""

from __future__ import annotations

import numpy as np

from diarist.embed.onnx_minilm import MiniLMOnnxEmbedder


def test_spinning_off_gives_the_same_vectors():
    texts = ["The user's cat is called Admon.", "Lisbon in March"]
    on = MiniLMOnnxEmbedder(spinning=True).embed_batch(texts)
    off = MiniLMOnnxEmbedder(spinning=False).embed_batch(texts)
    assert np.array_equal(on, off)
