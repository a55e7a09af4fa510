"""Optional backend: any sentence-transformers model, by name or local path (``pip install 'diarist[st]'``)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..errors import MissingDependency
from .base import Embedder


class SentenceTransformerEmbedder(Embedder):
    def __init__(self, name_or_path: str, device: str = "cpu"):
        try:
            from sentence_transformers import SentenceTransformer
        except ImportError as exc:
            raise MissingDependency(
                "sentence-transformers is not installed; run: pip install 'diarist[st]' "
                "(and 'pip install torch==2.13.0' first for a CPU-only torch)"
            ) from exc
        self._model = SentenceTransformer(name_or_path, device=device)
        self._tokenizer = self._model.tokenizer
        self.dim = int(self._model.get_sentence_embedding_dimension())
        self.max_tokens = int(self._model.max_seq_length)
        self.model_id = f"st:{name_or_path}"

    def token_spans(self, text: str) -> list[tuple[int, int]]:
        enc = self._tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)
        return [tuple(span) for span in enc["offset_mapping"]]

    def embed_batch(self, texts: Sequence[str]) -> np.ndarray:
        return self._model.encode(list(texts), convert_to_numpy=True, normalize_embeddings=False)
