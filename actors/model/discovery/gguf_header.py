"""What a GGUF file says about its model, read from its header without loading it.

A GGUF starts with the magic `GGUF`, a version (2 or 3), the number of tensors and
of metadata pairs, the pairs (a string key, a type, a value), then each tensor's name,
shape, type and offset. This reads the pairs and the tensor shapes, and nothing else.

The file may be anyone's, so every count and length in it is checked before it is
used: a string longer than MAX_STRING_BYTES, an array longer than MAX_ARRAY_ITEMS,
more than MAX_PAIRS pairs or MAX_TENSORS tensors, or a header past MAX_HEADER_BYTES
is refused as not a model this daemon reads, before anything of that size is
allocated. Arrays (a vocabulary, merges) are skipped, only their length kept; the
strings kept are those of at most MAX_KEPT_STRING_BYTES (a chat template).
"""

from __future__ import annotations

import struct
from pathlib import Path
from typing import BinaryIO

import attrs

MAGIC = b"GGUF"
MAX_PAIRS = 4096
MAX_TENSORS = 100_000
MAX_DIMS = 8
MAX_STRING_BYTES = 4 * 1024 * 1024
MAX_KEPT_STRING_BYTES = 256 * 1024
MAX_ARRAY_ITEMS = 16 * 1024 * 1024
MAX_HEADER_BYTES = 256 * 1024 * 1024

# The value types of a pair, by number: struct format and size of the fixed-size ones.
_FIXED = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?", 10: "<Q", 11: "<q", 12: "<d"}
_STRING, _ARRAY = 8, 9

# llama.cpp's `general.file_type` (enum llama_ftype), the names its quantise tool uses.
FILE_TYPES = {
    0: "F32", 1: "F16", 2: "Q4_0", 3: "Q4_1", 7: "Q8_0", 8: "Q5_0", 9: "Q5_1", 10: "Q2_K", 11: "Q3_K_S",
    12: "Q3_K_M", 13: "Q3_K_L", 14: "Q4_K_S", 15: "Q4_K_M", 16: "Q5_K_S", 17: "Q5_K_M", 18: "Q6_K",
    19: "IQ2_XXS", 20: "IQ2_XS", 21: "Q2_K_S", 22: "IQ3_XS", 23: "IQ3_XXS", 24: "IQ1_S", 25: "IQ4_NL",
    26: "IQ3_S", 27: "IQ3_M", 28: "IQ2_S", 29: "IQ2_M", 30: "IQ4_XS", 31: "IQ1_M", 32: "BF16",
    36: "TQ1_0", 37: "TQ2_0", 38: "MXFP4",
}


class NotGguf(ValueError):
    """The file is not a GGUF this reads; the text says what is wrong."""


@attrs.frozen
class Header:
    version: int
    metadata: dict[str, object]  # scalars and kept strings; an array's value is its length
    parameters: int  # the elements of every tensor

    def get_str(self, key: str) -> str | None:
        value = self.metadata.get(key)
        return value if isinstance(value, str) else None

    def get_int(self, key: str) -> int | None:
        value = self.metadata.get(key)
        return value if isinstance(value, int) and not isinstance(value, bool) else None

    @property
    def architecture(self) -> str | None:
        return self.get_str("general.architecture")

    @property
    def context_length(self) -> int | None:
        arch = self.architecture
        return self.get_int(f"{arch}.context_length") if arch else None

    @property
    def quantization(self) -> str | None:
        ft = self.get_int("general.file_type")
        if ft is None:
            return None
        return FILE_TYPES.get(ft, f"type {ft}")

    @property
    def chat_template(self) -> str | None:
        return self.get_str("tokenizer.chat_template")


class _Reader:
    def __init__(self, f: BinaryIO) -> None:
        self._f = f
        self.pos = 0

    def take(self, n: int) -> bytes:
        if self.pos + n > MAX_HEADER_BYTES:
            raise NotGguf(f"its header is larger than {MAX_HEADER_BYTES // (1024 * 1024)} MiB")
        data = self._f.read(n)
        if len(data) != n:
            raise NotGguf("it ends in the middle of its header (a partial download?)")
        self.pos += n
        return data

    def skip(self, n: int) -> None:
        if self.pos + n > MAX_HEADER_BYTES:
            raise NotGguf(f"its header is larger than {MAX_HEADER_BYTES // (1024 * 1024)} MiB")
        self._f.seek(n, 1)
        self.pos += n

    def unpack(self, fmt: str) -> object:
        return struct.unpack(fmt, self.take(struct.calcsize(fmt)))[0]

    def u32(self) -> int:
        value: int = struct.unpack("<I", self.take(4))[0]
        return value

    def u64(self) -> int:
        value: int = struct.unpack("<Q", self.take(8))[0]
        return value

    def string(self, *, keep: bool) -> str | None:
        n = self.u64()
        if n > MAX_STRING_BYTES:
            raise NotGguf(f"a string in its header claims {n} bytes")
        if not keep or n > MAX_KEPT_STRING_BYTES:
            self.skip(n)
            return None
        return self.take(n).decode("utf-8", errors="replace")

    def value(self, kind: int, *, keep: bool) -> object:
        if kind in _FIXED:
            return self.unpack(_FIXED[kind])
        if kind == _STRING:
            return self.string(keep=keep)
        if kind == _ARRAY:
            item = self.u32()
            count = self.u64()
            if count > MAX_ARRAY_ITEMS:
                raise NotGguf(f"an array in its header claims {count} items")
            if item in _FIXED:
                self.skip(count * struct.calcsize(_FIXED[item]))
            else:
                for _ in range(count):
                    self.value(item, keep=False)
            return count
        raise NotGguf(f"its header has a value of unknown type {kind}")


def read_header(f: BinaryIO) -> Header:
    """The header of the GGUF open in `f` (at its start). Raises NotGguf with what is
    wrong when it is not one, or exceeds a limit above."""
    r = _Reader(f)
    if r.take(4) != MAGIC:
        raise NotGguf("it does not start with GGUF's magic bytes, so it is not a GGUF model")
    version = r.u32()
    if version not in (2, 3):
        raise NotGguf(f"it is GGUF version {version}; versions 2 and 3 are read")
    n_tensors, n_pairs = r.u64(), r.u64()
    if n_pairs > MAX_PAIRS or n_tensors > MAX_TENSORS:
        raise NotGguf(f"its header claims {n_pairs} metadata pairs and {n_tensors} tensors")
    metadata: dict[str, object] = {}
    for _ in range(n_pairs):
        key = r.string(keep=True)
        if key is None:
            raise NotGguf("a metadata key in its header is too long")
        metadata[key] = r.value(r.u32(), keep=True)
    parameters = 0
    for _ in range(n_tensors):
        r.string(keep=False)
        dims = r.u32()
        if dims > MAX_DIMS:
            raise NotGguf(f"a tensor in its header claims {dims} dimensions")
        count = 1
        for _ in range(dims):
            count *= r.u64()
        parameters += count
        r.skip(4 + 8)  # the tensor's type and offset
    return Header(version, metadata, parameters)


def read_header_file(path: Path) -> Header:
    """`read_header` of the file at `path`; OSError when it cannot be opened."""
    with open(path, "rb") as f:
        return read_header(f)
