"""The directory of saved providers: `ProviderDirectory`, and the files it keeps them in.

The providers are kept in `<data>/agent/providers.json` (entries.py says what one
is), and their keys in `<data>/credentials.json` (a JSON object id -> key); named
secrets (`secret(name)`, which a remote MCP server's headers use) are kept in the same
file under `secret/<name>`. The credentials file is readable by this user only before any key is in it: it is
created 0600 (O_EXCL), an older one has its mode fixed first, and each write goes
through a temporary file that `mkstemp` creates 0600 in the same folder before it is
renamed over. A key is never returned by a listing (`has_key` only), and never goes
into an error, a log line or a command line: it leaves this process only in the
`Authorization` header of a request to its own provider (backend.py).
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import trio

from actors.errors import Invalid, NotFound
from actors.fs.atomic import write_all, write_atomic
from actors.fs.paths import open_regular, read_fd
from actors.model.providers.entries import (
    DEFAULT_CONTEXT_LENGTH,
    Prices,
    Provider,
    check_base_url,
    check_key,
    check_models,
    check_name,
    check_prices,
    prices_from_json,
    slug,
)
from actors.model.providers.probe import Probe, probe_models

if TYPE_CHECKING:  # backend.py (and httpx under it) once a route is used, not at the daemon's start
    from actors.model.providers.backend import Learned, ProviderBackend

log = logging.getLogger("bmoe.providers")

MAX_SETTINGS_BYTES = 4 * 1024 * 1024  # providers.json and credentials.json: larger is refused
CREDENTIALS_MODE = 0o600
# A named secret's entry in credentials.json (a remote MCP server's header names it):
# a provider's id never holds `/`, so the two never meet.
SECRET_PREFIX = "secret/"
MAX_SECRET_CHARS = 8192


def _read_settings(path: Path, *, follow: bool, mode: int | None = None) -> bytes:
    """A settings file's bytes: a regular file (a FIFO or a device is refused, never
    waited on or read for ever) of at most MAX_SETTINGS_BYTES; `mode` is set on it
    first. Raises FileNotFoundError, OSError, or ValueError when it is too large."""
    fd = open_regular(path, follow=follow)
    try:
        if mode is not None:
            os.fchmod(fd, mode)
        raw = read_fd(fd, MAX_SETTINGS_BYTES + 1)
    finally:
        os.close(fd)
    if len(raw) > MAX_SETTINGS_BYTES:
        raise ValueError(f"larger than {MAX_SETTINGS_BYTES} bytes")
    return raw



def ensure_private_file(path: Path) -> None:
    """Make sure `path` exists readable and writable by this user only: created 0600
    with O_EXCL (holding `{}`), or an existing file's mode fixed to 0600."""
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), CREDENTIALS_MODE)
    except FileExistsError:
        os.chmod(path, CREDENTIALS_MODE)
        return
    try:
        os.fchmod(fd, CREDENTIALS_MODE)  # the umask could only have narrowed it; be exact
        write_all(fd, b"{}")
        os.fsync(fd)
    finally:
        os.close(fd)


def write_private(path: Path, data: bytes) -> None:
    """Write `data` whole to `path` (0600): the file exists 0600 first, then the data
    goes into a temporary file made 0600 before its first byte, fsynced and renamed
    over it."""
    ensure_private_file(path)
    write_atomic(path, data, mode=CREDENTIALS_MODE)


def _origin(url: str) -> tuple[str, str | None, int | None]:
    parts = urlsplit(url)
    return parts.scheme.lower(), parts.hostname, parts.port


class ProviderDirectory:
    """See the module docstring. Reads its files when made; every change is written
    whole before it shows in the listing: the providers through `write_file` (the
    daemon gives actors/fs/atomic.py's `write_atomic`), the keys through `write_private`.
    What a provider turned out to refuse (`Learned`) is kept in memory only, and
    forgotten when the provider is saved again or removed."""

    def __init__(self, data_dir: Path, *, write_file: Callable[[Path, bytes], None]) -> None:
        self._write_file = write_file
        self.providers_path = data_dir / "agent" / "providers.json"
        self.credentials_path = data_dir / "credentials.json"
        self._providers: dict[str, Provider] = {}
        self._keys: dict[str, str] = {}
        self._learned: dict[str, Learned] = {}  # by provider id; forgotten when it changes
        self._lock = trio.Lock()
        self._load()

    def _load(self) -> None:
        try:
            rows = json.loads(_read_settings(self.providers_path, follow=True))
        except FileNotFoundError:
            rows = []
        except (OSError, ValueError, RecursionError) as exc:
            log.warning("cannot read %s (%s); no provider is loaded from it", self.providers_path, type(exc).__name__)
            rows = []
        for row in rows if isinstance(rows, list) else []:
            try:
                p = Provider(str(row["id"]), str(row["name"]), str(row["base_url"]),
                             check_models(list(row.get("models") or ())), prices_from_json(row.get("prices")))
            except (KeyError, TypeError, AttributeError, Invalid):
                continue
            if p.id and "/" not in p.id:
                self._providers[p.id] = p
        try:
            # Not through a link: its mode is fixed on the file itself, never on another one.
            keys = json.loads(_read_settings(self.credentials_path, follow=False, mode=CREDENTIALS_MODE))
        except FileNotFoundError:
            keys = {}
        except (OSError, ValueError, RecursionError) as exc:
            # Never log the contents: only which file and what kind of failure.
            log.warning("cannot read %s (%s); saved keys are not loaded", self.credentials_path, type(exc).__name__)
            keys = {}
        if isinstance(keys, dict):
            self._keys = {str(k): v for k, v in keys.items() if isinstance(v, str) and v}

    # ---- reading ----

    def listing(self) -> list[dict[str, Any]]:
        """Every saved provider, `{id, name, base_url, models, has_key}`; no key."""
        return [self._public(p) for p in self._providers.values()]

    def get(self, provider_id: str) -> dict[str, Any]:
        return self._public(self._provider(provider_id))

    def has_key(self, provider_id: str) -> bool:
        return bool(self._keys.get(provider_id))

    def knows(self, route: str) -> bool:
        """Whether a `<provider>/<model>` route names a saved provider."""
        provider_id, _, model = route.partition("/")
        return bool(model) and provider_id in self._providers

    def backend(self, route: str) -> ProviderBackend:
        """The backend for `<provider-id>/<model>` (split at the first `/`, so the
        model may hold more); NotFound when that provider is not saved."""
        provider_id, _, model = route.partition("/")
        provider = self._providers.get(provider_id)
        if provider is None or not model:
            raise NotFound(f"There is no saved provider {provider_id!r}.")
        from actors.model.providers.backend import Learned, ProviderBackend

        return ProviderBackend(
            base_url=provider.base_url, model=model, api_key=self._keys.get(provider_id), label=provider.name,
            learned=self._learned.setdefault(provider_id, Learned()),
        )

    def context_length(self, route: str) -> int:
        """The context, in tokens, of the model a `<provider-id>/<model>` route names:
        its saved `context_length`, else DEFAULT_CONTEXT_LENGTH (a provider not saved too)."""
        provider_id, _, model = route.partition("/")
        provider = self._providers.get(provider_id)
        return provider.context_length(model) if provider is not None else DEFAULT_CONTEXT_LENGTH

    def secret(self, name: str) -> str | None:
        """The secret `name`, or None; for the one who puts it in a request header only."""
        return self._keys.get(SECRET_PREFIX + name) or None

    def secret_names(self) -> list[str]:
        return sorted(k[len(SECRET_PREFIX):] for k in self._keys if k.startswith(SECRET_PREFIX))

    async def set_secret(self, name: str, value: str) -> None:
        """Keep `value` as the secret `name` ("" forgets it). Invalid (never quoting the
        value) when a header could not carry it."""
        if len(value) > MAX_SECRET_CHARS:
            raise Invalid(f"The secret is longer than {MAX_SECRET_CHARS} characters.")
        if any(ord(ch) < 32 or ord(ch) == 127 for ch in value):
            raise Invalid("The secret may not hold line breaks or other control characters: "
                          "it goes into a request header.")
        async with self._lock:
            await self._set_key(SECRET_PREFIX + name, value)

    async def forget_secret(self, name: str) -> bool:
        """Delete the secret `name`; whether the store held it."""
        if self.secret(name) is None:
            return False
        await self.set_secret(name, "")
        return True

    def prices(self, route: str) -> Prices | None:
        """The prices of the provider a `<provider-id>/<model>` route names; None when it
        has none (or is not saved)."""
        provider = self._providers.get(route.partition("/")[0])
        return provider.prices if provider is not None else None

    def name_of(self, route: str) -> str:
        """The name the person gave the provider of a route (its id when it is not saved)."""
        provider_id = route.partition("/")[0]
        provider = self._providers.get(provider_id)
        return provider.name if provider is not None else provider_id

    def _provider(self, provider_id: str) -> Provider:
        provider = self._providers.get(provider_id)
        if provider is None:
            raise NotFound("There is no such provider.")
        return provider

    def _public(self, p: Provider) -> dict[str, Any]:
        return {**p.to_json(), "has_key": self.has_key(p.id)}

    async def probe(self, base_url: str, api_key: str | None = None, provider_id: str | None = None) -> Probe:
        """Ask `base_url` for its models with `api_key`, else with the saved key of
        `provider_id` (NotFound when not saved). A saved key goes only to its own
        provider's host: Invalid for another one, never sending it."""
        url = check_base_url(base_url)
        if api_key:
            return await probe_models(url, check_key(api_key))
        if provider_id is None:
            return await probe_models(url, None)
        saved = self._provider(provider_id)
        key = self._keys.get(provider_id)
        if key and _origin(saved.base_url) != _origin(url):
            raise Invalid("The saved key is sent only to its provider's own address; type the key to test "
                          "it with another one.")
        return await probe_models(url, key)

    # ---- changing ----

    async def add(self, name: str, base_url: str, models: list[Any], api_key: str | None = None,
                  prices: object = None) -> dict[str, Any]:
        """Save a new provider; its id is made from the name (`-2`, `-3` when taken).
        `prices` as check_prices takes them (None: none)."""
        clean_name = check_name(name)
        url = check_base_url(base_url)
        checked = check_models(models)
        priced = check_prices(prices)
        key = check_key(api_key) if api_key else ""
        async with self._lock:
            base = slug(clean_name)
            pid, n = base, 1
            while pid in self._providers:
                n += 1
                pid = f"{base}-{n}"
            provider = Provider(pid, clean_name, url, checked, priced)
            providers = {**self._providers, pid: provider}
            # The provider first, its key second: a crash between leaves no stray key.
            await self._save_providers(providers)
            self._providers = providers
            await self._set_key(pid, key)
        return self._public(provider)

    async def update(
        self, provider_id: str, name: str, base_url: str, models: list[Any], api_key: str | None = None,
        prices: object = None,
    ) -> dict[str, Any]:
        """Change a provider (its id stays). `api_key` None keeps the key, "" removes it;
        `prices` replace the saved ones (None: none, as for every field but the key)."""
        self._provider(provider_id)
        clean_name = check_name(name)
        url = check_base_url(base_url)
        checked = check_models(models)
        priced = check_prices(prices)
        key = None if api_key is None else (check_key(api_key) if api_key else "")
        async with self._lock:
            self._provider(provider_id)
            provider = Provider(provider_id, clean_name, url, checked, priced)
            providers = {**self._providers, provider_id: provider}
            await self._save_providers(providers)
            self._providers = providers
            self._learned.pop(provider_id, None)  # its address may have changed
            if key is not None:
                await self._set_key(provider_id, key)
        return self._public(provider)

    async def remove(self, provider_id: str) -> None:
        """Forget a provider and its key (the key first: a crash between leaves a
        provider without a key, never a key without its provider)."""
        async with self._lock:
            self._provider(provider_id)
            await self._set_key(provider_id, "")
            providers = {k: v for k, v in self._providers.items() if k != provider_id}
            await self._save_providers(providers)
            self._providers = providers
            self._learned.pop(provider_id, None)

    async def _save_providers(self, providers: dict[str, Provider]) -> None:
        data = json.dumps([p.to_json() for p in providers.values()], ensure_ascii=False, indent=1).encode("utf-8")
        await trio.to_thread.run_sync(self._write_file, self.providers_path, data)

    async def _set_key(self, provider_id: str, key: str) -> None:
        if (self._keys.get(provider_id) or "") == key:
            return
        keys = dict(self._keys)
        if key:
            keys[provider_id] = key
        else:
            keys.pop(provider_id, None)
        data = json.dumps(keys, ensure_ascii=False).encode("utf-8")
        await trio.to_thread.run_sync(write_private, self.credentials_path, data)
        self._keys = keys
