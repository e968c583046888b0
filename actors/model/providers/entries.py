"""A saved provider as the directory keeps it, and the checks on what is given for one.

A provider is `{id, name, base_url, models}` (`Provider`); a model is its name, or
`{id, context_length}` when its context is not DEFAULT_CONTEXT_LENGTH tokens
(`ProviderModel`; compaction reads it). It may carry `prices`, what the person pays it
in US dollars per million tokens (`Prices`: the usage ledger prices its answers with
them; a provider without them has no cost, never a guessed one). The `check_*`
functions turn what a request gives into these, or raise Invalid with a plain reason;
a key is checked without ever being quoted.
"""

from __future__ import annotations

import ipaddress
import math
import re
import unicodedata
from typing import Any
from urllib.parse import urlsplit

import attrs

from actors.errors import Invalid

MAX_NAME_CHARS = 100
MAX_URL_CHARS = 2048
MAX_MODELS = 500
MAX_MODEL_CHARS = 256
# A model's context, in tokens, when its entry does not give one (most chat models take this much).
DEFAULT_CONTEXT_LENGTH = 128_000
MIN_CONTEXT_LENGTH = 256
MAX_CONTEXT_LENGTH = 16_777_216
MAX_KEY_CHARS = 8192
MAX_ID_CHARS = 40
MAX_PRICE = 100_000.0  # US dollars per million tokens: far above any model's
PER_TOKENS = 1_000_000  # prices are per this many tokens


# ---- the entries ----


@attrs.frozen
class ProviderModel:
    """One model a provider offers; `context_length` None means DEFAULT_CONTEXT_LENGTH."""

    id: str
    context_length: int | None = None

    def to_json(self) -> str | dict[str, Any]:
        """As it was given: the bare name, or the object when it carries a context length."""
        return self.id if self.context_length is None else {"id": self.id, "context_length": self.context_length}


@attrs.frozen
class Prices:
    """What a provider charges, in US dollars per million tokens: `input` for prompt
    tokens, `output` for completion tokens, `cached` for prompt tokens it served from
    its cache (None: they cost `input`, as at a provider that gives no discount)."""

    input: float
    output: float
    cached: float | None = None

    def cost(self, prompt: int, completion: int, cached: int) -> float:
        """The cost of one answer's tokens (`cached` is part of `prompt`)."""
        cached = min(max(cached, 0), prompt)
        cached_price = self.input if self.cached is None else self.cached
        return ((prompt - cached) * self.input + cached * cached_price + completion * self.output) / PER_TOKENS

    def to_json(self) -> dict[str, Any]:
        return {"input": self.input, "output": self.output, "cached": self.cached}


@attrs.frozen
class Provider:
    id: str
    name: str
    base_url: str
    models: tuple[ProviderModel, ...]
    prices: Prices | None = None

    def to_json(self) -> dict[str, Any]:
        """The entry as given: `prices` only when the person entered them."""
        out: dict[str, Any] = {"id": self.id, "name": self.name, "base_url": self.base_url,
                               "models": [m.to_json() for m in self.models]}
        if self.prices is not None:
            out["prices"] = self.prices.to_json()
        return out

    def context_length(self, model: str) -> int:
        """The context of `model` in tokens (DEFAULT_CONTEXT_LENGTH for one not listed or not given)."""
        found = next((m for m in self.models if m.id == model), None)
        return found.context_length if found is not None and found.context_length else DEFAULT_CONTEXT_LENGTH


# ---- validation ----


def check_base_url(raw: str) -> str:
    """The provider's address, normalised (no trailing `/`); Invalid with a plain
    reason otherwise. `https` anywhere; `http` only for this machine or the local
    network (loopback, private or link-local addresses, `localhost`, `.local` names)."""
    url = raw.strip()
    if not url:
        raise Invalid("base_url is empty: give the provider's address, like https://api.example.com/v1.")
    if len(url) > MAX_URL_CHARS:
        raise Invalid(f"base_url is longer than {MAX_URL_CHARS} characters.")
    if any(ch.isspace() or ord(ch) < 32 for ch in url):
        raise Invalid("base_url may not contain spaces or control characters.")
    try:
        parts = urlsplit(url)
        host = parts.hostname
        parts.port  # noqa: B018 - raises ValueError for a bad port
    except ValueError:
        raise Invalid("base_url is not a valid address.") from None
    scheme = parts.scheme.lower()
    if scheme not in ("http", "https"):
        raise Invalid("base_url must start with https:// (or http:// for a service on this machine or network).")
    if not host:
        raise Invalid("base_url has no host name.")
    if parts.username is not None or parts.password is not None:
        raise Invalid("base_url may not carry a user name or password; give the key as api_key instead.")
    if parts.query or parts.fragment:
        raise Invalid("base_url may not have a query (?...) or fragment (#...); give the address that "
                      "/chat/completions is added to.")
    if scheme == "http" and not is_nearby(host):
        raise Invalid(f"http:// is accepted only for a service on this machine or the local network; "
                      f"{host} is neither, so use https://.")
    return url.rstrip("/")


def is_nearby(host: str) -> bool:
    """Whether `host` is this machine or the local network (loopback, private or
    link-local addresses, `localhost`, `.local` names): where plain http may go."""
    name = host.lower().rstrip(".")
    if name == "localhost" or name.endswith(".localhost") or name.endswith(".local"):
        return True
    try:
        ip = ipaddress.ip_address(name.split("%", 1)[0])
    except ValueError:
        return False
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return ip.is_loopback or ip.is_private or ip.is_link_local


def _clean(value: str, what: str, cap: int) -> str:
    text = value.strip()
    if not text:
        raise Invalid(f"{what} is empty.")
    if len(text) > cap:
        raise Invalid(f"{what} is longer than {cap} characters.")
    if any(unicodedata.category(ch) == "Cc" for ch in text):
        raise Invalid(f"{what} may not contain control characters.")
    return text


def check_name(name: str) -> str:
    """The provider's name, stripped; Invalid when it is empty, too long or holds
    control characters."""
    return _clean(name, "name", MAX_NAME_CHARS)


def check_models(models: list[Any]) -> tuple[ProviderModel, ...]:
    """The models as saved: each entry a name, or `{"id": name, "context_length": n}`
    for a model whose context is not DEFAULT_CONTEXT_LENGTH. Invalid, in plain words,
    for anything else; a name given twice is kept once (its first entry)."""
    if len(models) > MAX_MODELS:
        raise Invalid(f"A provider lists at most {MAX_MODELS} models.")
    out: dict[str, ProviderModel] = {}
    for entry in models:
        model = _check_model(entry)
        out.setdefault(model.id, model)
    return tuple(out.values())


def _check_model(entry: object) -> ProviderModel:
    if isinstance(entry, str):
        return ProviderModel(_clean(entry, "A model's name", MAX_MODEL_CHARS))
    shape = 'A model is its name, or {"id": "name", "context_length": tokens}'
    if not isinstance(entry, dict):
        raise Invalid(f"{shape}; got {type(entry).__name__}.")
    extra = sorted(set(entry) - {"id", "context_length"})
    if extra:
        raise Invalid(f"{shape}; {', '.join(map(str, extra))} is not a model's field.")
    name = entry.get("id")
    if not isinstance(name, str):
        raise Invalid(f"{shape}: its id must be the model's name as a string.")
    length = entry.get("context_length")
    if length is not None:
        if not isinstance(length, int) or isinstance(length, bool):
            raise Invalid(f"The context_length of {name[:MAX_MODEL_CHARS]!r} must be a whole number of tokens.")
        if not MIN_CONTEXT_LENGTH <= length <= MAX_CONTEXT_LENGTH:
            raise Invalid(f"The context_length of {name[:MAX_MODEL_CHARS]!r} must be between {MIN_CONTEXT_LENGTH} "
                          f"and {MAX_CONTEXT_LENGTH} tokens (the model's card says how many it takes); "
                          f"leave it out for {DEFAULT_CONTEXT_LENGTH}.")
    return ProviderModel(_clean(name, "A model's name", MAX_MODEL_CHARS), length)


def check_prices(data: object) -> Prices | None:
    """The prices as saved, or None for none (`null` or `{}`): `input` and `output`
    both, `cached` optional, each a number of US dollars per million tokens from 0 to
    MAX_PRICE. Invalid, in plain words, for anything else."""
    if data is None or data == {}:
        return None
    shape = 'prices is {"input": dollars, "output": dollars, "cached": dollars or null}, per million tokens'
    if not isinstance(data, dict):
        raise Invalid(f"{shape}.")
    extra = sorted(str(k) for k in set(data) - {"input", "output", "cached"})
    if extra:
        raise Invalid(f"{shape}; {', '.join(extra)} is not one of its fields.")
    got: dict[str, float | None] = {}
    for name in ("input", "output", "cached"):
        value = data.get(name)
        if value is None:
            if name != "cached":
                raise Invalid(f"prices.{name} is missing: give both the input and the output price (per million "
                              "tokens, in US dollars), or no prices.")
            got[name] = None
            continue
        if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
            raise Invalid(f"prices.{name} must be a number of US dollars per million tokens, like 2.50.")
        if not 0 <= value <= MAX_PRICE:
            raise Invalid(f"prices.{name} must be between 0 and {MAX_PRICE:,.0f} US dollars per million tokens.")
        got[name] = float(value)
    assert got["input"] is not None and got["output"] is not None
    return Prices(got["input"], got["output"], got["cached"])


def prices_from_json(data: object) -> Prices | None:
    """Saved prices, or None where the file's are missing or broken (the provider then has none)."""
    try:
        return check_prices(data)
    except Invalid:
        return None


def check_key(key: str) -> str:
    """The key, stripped; Invalid (never quoting it) when a header cannot carry it."""
    text = key.strip()
    if len(text) > MAX_KEY_CHARS:
        raise Invalid(f"api_key is longer than {MAX_KEY_CHARS} characters.")
    if any(ord(ch) < 33 or ord(ch) > 126 for ch in text):
        raise Invalid("api_key may hold only printable ASCII characters without spaces.")
    return text


def slug(name: str) -> str:
    """The id part made from a name: lowercase ASCII words joined by `-`."""
    ascii_name = unicodedata.normalize("NFKD", name).encode("ascii", "ignore").decode()
    out = re.sub(r"[^a-z0-9]+", "-", ascii_name.lower()).strip("-")
    return out[:MAX_ID_CHARS].rstrip("-") or "provider"
