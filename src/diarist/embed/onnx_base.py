"""What the ONNX transformer embedders share: tokenise, pad, run the graph, mean-pool.

A subclass (``onnx_minilm``, ``mpnet``) loads its own tokenizer and session and sets
``_tokenizer``, ``_session``, ``_input_names`` and ``_pad_id``; the rest is here, once.
Both graphs return the last hidden state (batch, tokens, dim): ``token_vectors`` hands it out
per token (the late-interaction second stage, ``diarist.rerank.maxsim``), ``embed_batch`` pools it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from .base import Embedder


class OnnxTransformerEmbedder(Embedder):
    _tokenizer: Any  # a ``tokenizers`` tokenizer: encode, encode_batch
    _session: Any  # an onnxruntime InferenceSession whose first output is the last hidden state
    _input_names: set[str]
    _pad_id: int = 0

    def token_spans(self, text: str) -> list[tuple[int, int]]:
        return list(self._tokenizer.encode(text, add_special_tokens=False).offsets)

    def count_tokens(self, text: str) -> int:
        return len(self._tokenizer.encode(text, add_special_tokens=False).ids)

    def count_tokens_many(self, texts: Sequence[str]) -> list[int]:
        return [len(e.ids) for e in self._tokenizer.encode_batch(list(texts), add_special_tokens=False)]

    def encode_padded(self, texts: Sequence[str]) -> tuple[list[Any], np.ndarray, np.ndarray]:
        """The texts' encodings (special tokens included) and their ids and attention mask,
        padded to the longest; a text over the window is refused, never truncated."""
        encodings = self._tokenizer.encode_batch(list(texts))
        width = max(len(e.ids) for e in encodings)
        if width > self.max_tokens:
            raise ValueError(f"a text of {width} tokens exceeds the {self.max_tokens}-token window")
        ids = np.full((len(texts), width), self._pad_id, dtype=np.int64)
        mask = np.zeros((len(texts), width), dtype=np.int64)
        for row, enc in enumerate(encodings):
            ids[row, : len(enc.ids)] = enc.ids
            mask[row, : len(enc.ids)] = 1
        return encodings, ids, mask

    def hidden_states(self, ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
        """The graph's last hidden state, (batch, tokens, dim)."""
        feed = {"input_ids": ids, "attention_mask": mask}
        if "token_type_ids" in self._input_names:
            feed["token_type_ids"] = np.zeros_like(ids)
        return self._session.run(None, feed)[0]

    def embed_batch(self, texts: Sequence[str]) -> np.ndarray:
        _, ids, mask = self.encode_padded(texts)
        hidden = self.hidden_states(ids, mask)
        # Mean pooling over real tokens, as sentence-transformers does for both models.
        summed = (hidden * mask[:, :, None]).sum(axis=1)
        return summed / np.maximum(mask.sum(axis=1, keepdims=True), 1)

    def token_vectors(self, texts: Sequence[str]) -> list[tuple[Any, np.ndarray]]:
        """Per text that fits the window: its encoding (special tokens included) and one
        float32 vector per token of it, (len(encoding.ids), dim), not normalised."""
        if not texts:
            return []
        encodings, ids, mask = self.encode_padded(texts)
        hidden = self.hidden_states(ids, mask)
        return [(enc, np.asarray(hidden[row, : len(enc.ids)], np.float32)) for row, enc in enumerate(encodings)]
