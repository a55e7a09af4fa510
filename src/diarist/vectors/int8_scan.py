"""Integer products of the stored int8 vectors with int8 queries: the exact scan's first pass.

numpy has no fast int8 matrix product; onnxruntime (already a core dependency: the default
embedder runs on it) has MLAS's. A two-node ONNX graph, ``Transpose`` then ``MatMulInteger``,
gives the int32 products of quantised queries with an app's int8 vectors. Given the vectors
as a constant (an external initializer: onnxruntime reads our array, folds the transpose and
prepacks the result once, ~0.1 s per 100k rows), one query against 100k x 384 takes 1.3 ms on
one core (0.8 ms on two) where numpy's float32 product of the same matrix takes 2.7 ms on two
(`benchmarks/int8_scan.py`, BENCHMARKS.md).
The few rows written since the last pack are read unpacked, as ``MatMulInteger(codes, queries)``
with the codes (value + 128) as the left operand: ~13 us per 1,000 rows on two threads, where
the packed graph's operand order would repack them at every call (~170 us per 1,000).

Queries are quantised to [-64, 64], not [-127, 127]. MLAS's u8 x s8 kernels on x86 CPUs without
VNNI add pairs of products in 16 bits with saturation (VPMADDUBSW): 2 x 255 x 127 would not fit,
2 x 128 x 127 (packed: query + 64 times a stored value) and 2 x 255 x 64 (unpacked: code times a
query value) do. The first use checks both graphs on those extremes against numpy; a kernel
that is wrong there is never used.

The graphs are written here as protobuf bytes (the ``onnx`` package is not a dependency).
Where onnxruntime cannot run them, numpy computes the same integers by blocks of rows.
"""

from __future__ import annotations

import logging
import threading

import numpy as np

# Sets ORT_DISABLE_TELEMETRY before onnxruntime is first imported (no network, no files).
from ..embed import onnx_minilm as _telemetry_off_first  # noqa: F401

log = logging.getLogger("diarist")

#: Threads for one product: one. A second thread halves the product on an idle machine, but a
#: search pays for waking it (and waits for it behind other work on a busy one): on 2 shared
#: cores one thread ranked faster at 100k (benchmarks/results/speed46).
THREADS = 1
#: Queries are quantised to integers in [-QUERY_LIMIT, QUERY_LIMIT] (see above).
QUERY_LIMIT = 64
#: MatMulInteger's fast kernels take the left operand unsigned, with a zero point: packed, the
#: query + 64 (0..128); unpacked, the stored value + 128 (1..255).
_QUERY_ZERO_POINT, _CODE_ZERO_POINT = QUERY_LIMIT, 128
_UINT8, _INT8, _INT32 = 2, 3, 6  # ONNX TensorProto element types
_unpacked = None
_broken: str | None = None  # why onnxruntime cannot run the graph: numpy answers
_checked = False
_lock = threading.Lock()


def quantise(queries: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """float queries (m, d) -> int8 (m, d) in [-64, 64] and each query's scale s: q ~ q8 / s."""
    peaks = np.abs(queries).max(axis=1)
    scales = QUERY_LIMIT / np.where(peaks > 0, peaks, 1.0)
    quantised = np.clip(np.rint(queries * scales[:, None]), -QUERY_LIMIT, QUERY_LIMIT)
    return quantised.astype(np.int8), scales


class PackedProducts:
    """Products with one fixed int8 matrix, prepacked by onnxruntime when this is built."""

    def __init__(self, vectors: np.ndarray):
        # onnxruntime is handed this array without a copy: it lives as long as the session.
        self.vectors = np.ascontiguousarray(vectors, dtype=np.int8)
        self._session = _session(self.vectors) if _kernel_checked() else None

    def __len__(self) -> int:
        return len(self.vectors)

    def __call__(self, queries: np.ndarray) -> np.ndarray:
        """``queries`` int8 (m, d) in [-64, 64] -> int32 (m, n): each query's dot product with each row."""
        if self._session is None:
            return numpy_products(self.vectors, queries)
        return self._session.run(None, {"queries": _unsigned(queries)})[0]


def _unsigned(queries: np.ndarray) -> np.ndarray:
    """int8 queries in [-64, 64] -> the packed graph's unsigned operand (query + 64, 0..128)."""
    return np.ascontiguousarray((np.asarray(queries, dtype=np.int16) + _QUERY_ZERO_POINT).astype(np.uint8))


def codes_of(vectors: np.ndarray) -> np.ndarray:
    """int8 vectors -> the unpacked kernel's uint8 codes (value + 128), and back (the same XOR)."""
    return np.asarray(vectors).view(np.uint8) ^ np.uint8(0x80)


def int8_of(codes: np.ndarray) -> np.ndarray:
    return (codes ^ np.uint8(0x80)).view(np.int8)


def products(codes: np.ndarray, queries: np.ndarray) -> np.ndarray:
    """uint8 ``codes`` (n, d) of int8 vectors and int8 ``queries`` (m, d) in [-64, 64] -> int32
    (m, n), for rows not packed."""
    if len(codes) == 0:
        return np.zeros((len(queries), 0), np.int32)
    if not _kernel_checked() or _unpacked is None:
        return numpy_products(int8_of(codes), queries)
    feed = {"codes": np.ascontiguousarray(codes), "queries": np.ascontiguousarray(np.asarray(queries, dtype=np.int8).T)}
    return _unpacked.run(None, feed)[0].T


def numpy_products(vectors: np.ndarray, queries: np.ndarray) -> np.ndarray:
    """The same integers with numpy alone (the fallback and the tests' reference): float32
    holds every sum exactly while d * 127 * 127 < 2**24 (d <= 1040), float64 beyond."""
    dtype = np.float32 if vectors.shape[1] * 127 * 127 < 2**24 else np.float64
    right = np.asarray(queries, dtype=dtype).T
    out = np.empty((right.shape[1], len(vectors)), np.int32)
    for start in range(0, len(vectors), 8192):
        block = np.asarray(vectors[start : start + 8192], dtype=dtype)
        out[:, start : start + 8192] = np.rint(block @ right).T
    return out


def describe() -> str:
    """What computes the integer products in this process (``diarist doctor`` reports it)."""
    if _kernel_checked():
        return "onnxruntime's int8 kernel (checked exact on this CPU)"
    return f"numpy, ~5x slower (the onnxruntime kernel is not used: {_broken})"


def _kernel_checked() -> bool:
    """Once per process: both graphs against numpy on the operands' extremes (where a
    saturating kernel would be wrong). False: onnxruntime is not used, numpy answers."""
    global _checked, _unpacked, _broken
    if _checked:
        return _broken is None
    with _lock:
        if not _checked:
            _unpacked = _session(None)
            rng = np.random.default_rng(0)
            vectors = rng.choice(np.array([-127, -126, 126, 127], np.int8), (64, 384))
            queries = rng.choice(np.array([-64, -63, 63, 64], np.int8), (3, 384))
            vectors[0], queries[0] = 127, 64  # the largest pair sums of both graphs
            want = numpy_products(vectors, queries)
            packed = _session(vectors) if _unpacked is not None else None
            if _unpacked is not None and packed is not None:
                got_packed = packed.run(None, {"queries": _unsigned(queries)})[0]
                got = _unpacked.run(None, {"codes": codes_of(vectors), "queries": np.ascontiguousarray(queries.T)})[0].T
                if not (np.array_equal(got_packed, want) and np.array_equal(got, want)):
                    _broken = "onnxruntime's int8 product is not exact on this CPU"
                    log.warning("the int8 scan kernel is unavailable, numpy computes it: %s", _broken)
            _checked = True
    return _broken is None


def _session(vectors: np.ndarray | None):
    """A session over the graph: ``vectors`` given, they are its constant; None, an input."""
    global _broken
    if _broken is not None:
        return None
    try:
        import onnxruntime as ort

        options = ort.SessionOptions()
        options.intra_op_num_threads = THREADS
        options.inter_op_num_threads = 1
        # Idle workers must not spin: the lexical channel and the embedder share the cores.
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        options.log_severity_level = 3
        shape = None
        if vectors is not None:
            shape = vectors.shape
            # Kept referenced with the session: onnxruntime holds the pointer, not the object.
            values = [ort.OrtValue.ortvalue_from_numpy(vectors)]
            options.add_external_initializers(["vectors"], values)
        session = ort.InferenceSession(_graph(shape), options, providers=["CPUExecutionProvider"])
        if vectors is not None:
            session._diarist_constants = values
        return session
    except Exception as exc:  # noqa: BLE001 - any failure: the numpy path is exact too
        _broken = f"{type(exc).__name__}: {exc}"
        log.warning("the int8 scan kernel is unavailable, numpy computes it: %s", _broken)
        return None


# -- the graph, as protobuf bytes ----------------------------------------------------------------


def _varint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte, value = value & 0x7F, value >> 7
        out.append(byte | (0x80 if value else 0))
        if not value:
            return bytes(out)


def _number(field: int, value: int) -> bytes:
    return _varint(field << 3) + _varint(value)


def _message(field: int, payload: bytes | str) -> bytes:
    data = payload.encode() if isinstance(payload, str) else payload
    return _varint(field << 3 | 2) + _varint(len(data)) + data


def _value_info(name: str, element_type: int, dims: tuple[str, str]) -> bytes:
    shape = b"".join(_message(1, _message(2, dim)) for dim in dims)  # symbolic dimensions
    tensor_type = _number(1, element_type) + _message(2, shape)
    return _message(1, name) + _message(2, _message(1, tensor_type))


def _graph(constant_shape: tuple[int, int] | None) -> bytes:
    """ModelProto (IR 7, opset 13). Given ``constant_shape``: products (m, n) =
    MatMulInteger(queries + 64, Transpose(vectors), 64), the vectors an external initializer
    of that shape. None: products (n, m) = MatMulInteger(codes, queries, 128), both inputs."""
    zero = _CODE_ZERO_POINT if constant_shape is None else _QUERY_ZERO_POINT
    zero_point = _message(5, _number(2, _UINT8) + _message(8, "zero_point") + _message(9, bytes([zero])))
    if constant_shape is None:
        nodes = _node("MatMulInteger", ("codes", "queries", "zero_point"), "products")
        inputs = _input("codes", _UINT8, ("n", "d")) + _input("queries", _INT8, ("d", "m"))
        output = _message(12, _value_info("products", _INT32, ("n", "m")))
        initializers = zero_point
    else:
        perm = _message(5, _message(1, "perm") + _number(20, 7) + _number(8, 1) + _number(8, 0))  # INTS [1, 0]
        nodes = _node("Transpose", ("vectors",), "columns", perm)
        nodes += _node("MatMulInteger", ("queries", "columns", "zero_point"), "products")
        inputs = _input("queries", _UINT8, ("m", "d"))
        output = _message(12, _value_info("products", _INT32, ("m", "n")))
        location = _message(1, "location") + _message(2, "diarist-memory")  # read from the OrtValue given
        vectors = (b"".join(_number(1, dim) for dim in constant_shape) + _number(2, _INT8)
                   + _message(8, "vectors") + _message(13, location) + _number(14, 1))  # data_location EXTERNAL
        initializers = zero_point + _message(5, vectors)
    graph = nodes + _message(2, "diarist_int8_scan") + initializers + inputs + output
    return _number(1, 7) + _message(7, graph) + _message(8, _message(1, "") + _number(2, 13))


def _node(op: str, inputs: tuple[str, ...], output: str, attribute: bytes = b"") -> bytes:
    return _message(1, b"".join(_message(1, name) for name in inputs) + _message(2, output)
                    + _message(4, op) + attribute)


def _input(name: str, element_type: int, dims: tuple[str, str]) -> bytes:
    return _message(11, _value_info(name, element_type, dims))
