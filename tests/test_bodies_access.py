"""Strict request bodies (bmoe_daemon.bodies) and access rules (bmoe_daemon.access)."""

from __future__ import annotations

import ipaddress
import json
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from bmoe_daemon import access
from bmoe_daemon.bodies import (
    MAX_IMAGES,
    Approval,
    EditMessage,
    NewConversation,
    NewWorkspace,
    SeedItem,
    SendMessage,
    check_images,
    check_route,
    parse_json,
    patch_fields,
    structure,
)
from bmoe_daemon.errors import BadRequest, ForbiddenOrigin, Unauthorized

# ================================ bodies ================================


# ---- parse_json ----


def test_parse_json_returns_the_object() -> None:
    assert parse_json(b'{"text": "hi", "n": [1]}') == {"text": "hi", "n": [1]}
    assert parse_json('{"t": "é"}'.encode()) == {"t": "é"}


@pytest.mark.parametrize(
    "raw",
    [b"", b"   \n", b"[1, 2]", b'"text"', b"5", b"null", b"true", b"{", b"not json", b"\xff\xfe{", b"{'a': 1}"],
)
def test_parse_json_refuses_anything_but_an_object(raw: bytes) -> None:
    with pytest.raises(BadRequest) as info:
        parse_json(raw)
    assert info.value.code == "bad_request" and info.value.status == 400


@settings(max_examples=150, deadline=None)
@given(raw=st.binary(max_size=40) | st.text(max_size=40).map(str.encode))
def test_parse_json_raises_only_bad_request(raw: bytes) -> None:
    try:
        data = parse_json(raw)
    except BadRequest:
        return
    assert isinstance(data, dict)


# ---- structure: accepted bodies ----


def test_structure_fills_defaults() -> None:
    conv = structure({}, NewConversation)
    assert conv == NewConversation(workspace=None, mode="ask", route="local", agent="builtin", title=None, items=None)


def test_structure_reads_every_field() -> None:
    conv = structure(
        {
            "workspace": "w1",
            "mode": "full",
            "route": "openai/gpt",
            "agent": "builtin",
            "title": "T",
            "items": [{"kind": "user", "text": "q"}, {"kind": "assistant", "text": "a"}],
        },
        NewConversation,
    )
    assert conv.mode == "full" and conv.workspace == "w1" and conv.title == "T"
    assert list(conv.items or []) == [SeedItem("user", "q"), SeedItem("assistant", "a")]
    assert structure({"text": "hi", "think": False, "images": None}, SendMessage) == SendMessage("hi", False, None)
    assert structure({"item": "i1", "text": "x"}, EditMessage) == EditMessage("i1", "x", None)
    assert structure({"item": "i1", "decision": "deny"}, Approval) == Approval("i1", "deny")
    assert structure({"path": "/tmp/x"}, NewWorkspace) == NewWorkspace("/tmp/x", None)


# ---- structure: refused bodies ----


@pytest.mark.parametrize(
    ("data", "cls", "field"),
    [
        ({"mode": 5}, NewConversation, "mode"),
        ({"mode": "everything"}, NewConversation, "mode"),
        ({"mode": True}, NewConversation, "mode"),
        ({"mode": None}, NewConversation, "mode"),
        ({"title": 5}, NewConversation, "title"),
        ({"route": ["local"]}, NewConversation, "route"),
        ({"agent": None}, NewConversation, "agent"),
        ({"items": [{"kind": "system", "text": "x"}]}, NewConversation, "kind"),
        ({"items": [{"kind": "user"}]}, NewConversation, "text"),
        ({"items": [{"kind": "user", "text": 1}]}, NewConversation, "text"),
        ({"text": 5}, SendMessage, "text"),
        ({"text": None}, SendMessage, "text"),
        ({"text": True}, SendMessage, "text"),
        ({"text": {"a": 1}}, SendMessage, "text"),
        ({"text": "hi", "think": 1}, SendMessage, "think"),
        ({"text": "hi", "think": "true"}, SendMessage, "think"),
        ({"text": "hi", "images": [5]}, SendMessage, "images"),
        ({}, SendMessage, "text"),
        ({"text": "x"}, EditMessage, "item"),
        ({"item": "i1"}, Approval, "decision"),
        ({"item": "i1", "decision": "maybe"}, Approval, "decision"),
        ({"item": 1, "decision": "approve"}, Approval, "item"),
        ({}, NewWorkspace, "path"),
        ({"path": 5}, NewWorkspace, "path"),
        ({"path": "/x", "name": 5}, NewWorkspace, "name"),
    ],
)
def test_structure_refuses_wrong_types_values_and_missing_fields(data: dict, cls: type, field: str) -> None:
    with pytest.raises(BadRequest) as info:
        structure(data, cls)
    assert info.value.code == "bad_request"
    assert field in info.value.message, info.value.message


@pytest.mark.parametrize(
    ("data", "cls"),
    [
        ({"text": "hi", "images": ""}, SendMessage),
        ({"text": "hi", "images": {}}, SendMessage),
        ({"text": "hi", "images": "data:image/png;base64,AA=="}, SendMessage),
        ({"items": {}}, NewConversation),
        ({"items": ""}, NewConversation),
    ],
)
def test_structure_refuses_a_non_array_for_a_list_field(data: dict, cls: type) -> None:
    with pytest.raises(BadRequest):
        structure(data, cls)


_json_scalars = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=5)
_json_any = st.recursive(
    _json_scalars, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3)
)


@settings(max_examples=200, deadline=None)
@given(
    cls=st.sampled_from([NewConversation, SendMessage, EditMessage, Approval, NewWorkspace]),
    data=st.dictionaries(
        st.sampled_from(["text", "mode", "item", "decision", "images", "items", "path", "name", "think", "title"]),
        _json_any,
        max_size=5,
    ),
)
def test_structure_raises_only_bad_request(cls: type, data: dict[str, Any]) -> None:
    try:
        value = structure(data, cls)
    except BadRequest:
        return
    assert isinstance(value, cls)
    # What is accepted has the declared types.
    for field in ("text", "item", "path"):
        if hasattr(value, field):
            assert isinstance(getattr(value, field), str)


# ---- patch_fields ----


def test_patch_fields_absent_means_unchanged() -> None:
    assert patch_fields({}) == {}
    assert patch_fields({"unknown": 1, "state": "idle"}) == {}


def test_patch_fields_sets_what_is_given() -> None:
    assert patch_fields({"title": "New", "mode": "read_only", "route": "a/b", "agent": "builtin"}) == {
        "title": "New",
        "mode": "read_only",
        "route": "a/b",
        "agent": "builtin",
    }
    assert patch_fields({"workspace": "w1"}) == {"workspace": "w1"}


def test_patch_fields_workspace_null_removes_it() -> None:
    assert patch_fields({"workspace": None}) == {"workspace": None}


@pytest.mark.parametrize(
    "data",
    [
        {"title": 5},
        {"title": None},
        {"mode": "everything"},
        {"mode": 5},
        {"route": None},
        {"route": 1.5},
        {"agent": False},
        {"workspace": 5},
        {"workspace": ["w"]},
        {"title": "ok", "mode": "bad"},
    ],
)
def test_patch_fields_refuses_wrong_types(data: dict) -> None:
    with pytest.raises(BadRequest) as info:
        patch_fields(data)
    bad = [k for k in data if not (k == "title" and data[k] == "ok")][0]
    assert f"body.{bad}" in info.value.message


# ---- check_route / check_images ----


@pytest.mark.parametrize("route", ["local", "openai/gpt-4o", "ollama/llama3:8b", "a/b/c"])
def test_check_route_accepts(route: str) -> None:
    check_route(route)


@pytest.mark.parametrize("route", ["", "openai", "/gpt", "openai/", "/", "Local"])
def test_check_route_refuses(route: str) -> None:
    with pytest.raises(BadRequest):
        check_route(route)


PNG = "data:image/png;base64,iVBORw0KGgo="


def test_check_images_none_or_empty_is_none() -> None:
    assert check_images(None) is None
    assert check_images([]) is None


def test_check_images_returns_a_tuple() -> None:
    assert check_images([PNG, "data:image/jpeg;base64,/9j/"]) == (PNG, "data:image/jpeg;base64,/9j/")
    assert check_images([PNG] * MAX_IMAGES) == (PNG,) * MAX_IMAGES


def test_check_images_limits_the_count() -> None:
    with pytest.raises(BadRequest):
        check_images([PNG] * (MAX_IMAGES + 1))


@pytest.mark.parametrize(
    "img",
    ["", "https://example.com/a.png", "data:text/plain;base64,aGk=", "data:image/png,rawbytes", "iVBORw0KGgo="],
)
def test_check_images_refuses_what_is_not_an_image_data_url(img: str) -> None:
    with pytest.raises(BadRequest):
        check_images([PNG, img])


# ================================ access ================================


# ---- is_loopback ----


@pytest.mark.parametrize(
    "addr",
    ["127.0.0.1", "127.5.6.7", "::1", "[::1]", "::ffff:127.0.0.1", "[::ffff:127.0.0.1]", "localhost"],
)
def test_is_loopback_true(addr: str) -> None:
    assert access.is_loopback(addr) is True


@pytest.mark.parametrize(
    "addr",
    [
        None,
        "",
        "10.0.0.1",
        "192.168.1.5",
        "8.8.8.8",
        "::",
        "0.0.0.0",
        "::ffff:10.0.0.1",
        "fe80::1",
        "garbage",
        "127.0.0.1.evil.com",
        "localhost.evil.com",
        "[::1",
        "::1]",
        "127.1",
        "x" * 1000,
    ],
)
def test_is_loopback_false(addr: str | None) -> None:
    assert access.is_loopback(addr) is False


@settings(max_examples=300, deadline=None)
@given(addr=st.none() | st.text() | st.text(alphabet="0123456789abcdef:.[]%", max_size=45))
def test_is_loopback_never_raises(addr: str | None) -> None:
    assert access.is_loopback(addr) in (True, False)


@settings(max_examples=200, deadline=None)
@given(ip=st.ip_addresses(v=4))
def test_is_loopback_matches_the_address_and_its_mapped_form(ip: ipaddress.IPv4Address) -> None:
    expected = ip in ipaddress.ip_network("127.0.0.0/8")
    assert access.is_loopback(str(ip)) is expected
    assert access.is_loopback(f"::ffff:{ip}") is expected
    assert access.is_loopback(f"[::ffff:{ip}]") is expected


# ---- check_key ----


def test_check_key_without_a_key_lets_everything_through() -> None:
    access.check_key(None, None)
    access.check_key(None, "Bearer whatever")


@pytest.mark.parametrize("header", ["Bearer s3cret", "bearer s3cret", "BEARER s3cret", "Bearer   s3cret  "])
def test_check_key_accepts_the_key(header: str) -> None:
    access.check_key("s3cret", header)


@pytest.mark.parametrize(
    "header",
    [None, "", "s3cret", "Bearer", "Bearer ", "Bearer s3cre", "Bearer s3cretX", "Basic s3cret", "Token s3cret"],
)
def test_check_key_refuses_anything_else(header: str | None) -> None:
    with pytest.raises(Unauthorized) as info:
        access.check_key("s3cret", header)
    assert info.value.status == 401 and info.value.code == "unauthorized"
    assert "s3cret" not in info.value.message


def test_check_key_compares_in_constant_time(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[tuple[bytes, bytes]] = []
    real = access.hmac.compare_digest

    def spy(a: bytes, b: bytes) -> bool:
        calls.append((a, b))
        return real(a, b)

    monkeypatch.setattr(access.hmac, "compare_digest", spy)
    access.check_key("k€y", "Bearer k€y")
    with pytest.raises(Unauthorized):
        access.check_key("k€y", "Bearer nope")
    assert calls == [("k€y".encode(), "k€y".encode()), (b"nope", "k€y".encode())]


@settings(max_examples=200, deadline=None)
@given(key=st.text(min_size=1), header=st.none() | st.text())
def test_check_key_raises_only_unauthorized(key: str, header: str | None) -> None:
    try:
        access.check_key(key, header)
    except Unauthorized:
        return
    assert header is not None and header[7:].strip() == key


# ---- check_origin ----


@pytest.mark.parametrize("origin", [None, ""])
def test_check_origin_passes_clients_without_one(origin: str | None) -> None:
    access.check_origin(origin, "daemon.lan:7777")


def test_check_origin_accepts_the_daemons_own_host() -> None:
    access.check_origin("http://daemon.lan:7777", "daemon.lan:7777")
    access.check_origin("https://192.168.1.20:8443", "192.168.1.20:8443")
    access.check_origin("http://127.0.0.1:8765", "127.0.0.1:8765")
    access.check_origin("http://LOCALHOST:8765", "localhost:8765")


@pytest.mark.parametrize(
    "origin",
    ["http://localhost:5173", "http://127.0.0.1:8080", "https://127.0.0.1", "http://[::1]:3000", "vscode-webview://localhost"],
)
def test_check_origin_refuses_other_loopback_pages(origin: str) -> None:
    # Another port of this computer is another site: a page there may not drive the daemon.
    with pytest.raises(ForbiddenOrigin):
        access.check_origin(origin, "127.0.0.1:8765")


def test_check_origin_accepts_the_allowed_list() -> None:
    allowed = (access.normalize_origin("http://localhost:5173/"),)
    assert allowed == ("http://localhost:5173",)
    access.check_origin("http://localhost:5173", "127.0.0.1:8765", allowed)
    with pytest.raises(ForbiddenOrigin):
        access.check_origin("http://localhost:5174", "127.0.0.1:8765", allowed)


@pytest.mark.parametrize("raw", ["localhost:5173", "ftp://x", "http://x/path", "http://", "http://a:99999", "null"])
def test_normalize_origin_refuses_what_is_not_an_origin(raw: str) -> None:
    assert access.normalize_origin(raw) is None


@pytest.mark.parametrize(
    ("origin", "host"),
    [
        ("null", "127.0.0.1:7777"),
        ("null", None),
        ("https://evil.example", "127.0.0.1:7777"),
        ("https://evil.example", None),
        ("http://daemon.lan:9999", "daemon.lan:7777"),
        ("http://localhost.evil.example", "127.0.0.1:7777"),
        ("http://127.0.0.1.evil.example", "127.0.0.1:7777"),
        ("http://10.0.0.1", "127.0.0.1:7777"),
        ("file://", "127.0.0.1:7777"),
        ("garbage", "127.0.0.1:7777"),
    ],
)
def test_check_origin_refuses_other_sites(origin: str, host: str | None) -> None:
    with pytest.raises(ForbiddenOrigin) as info:
        access.check_origin(origin, host)
    assert info.value.status == 403 and info.value.code == "forbidden_origin"


_host_names = st.from_regex(r"\A[a-z][a-z0-9-]{0,10}(\.[a-z]{2,5}){1,2}\Z").filter(lambda h: "localhost" not in h)
_ports = st.none() | st.integers(1, 65535)


def _origin(scheme: str, host: str, port: int | None) -> str:
    return f"{scheme}://{host}" + (f":{port}" if port is not None else "")


@settings(max_examples=150, deadline=None)
@given(
    scheme=st.sampled_from(["http", "https"]),
    host=_host_names | st.ip_addresses(v=4).filter(lambda ip: not ip.is_loopback).map(str),
    port=_ports,
    daemon_host=st.sampled_from([None, "127.0.0.1:7777", "localhost:7777", "daemon.lan:7777"]),
)
def test_check_origin_refuses_any_foreign_site(
    scheme: str, host: str, port: int | None, daemon_host: str | None
) -> None:
    origin = _origin(scheme, host, port)
    if daemon_host is not None and origin.split("://", 1)[1] == daemon_host:
        return
    with pytest.raises(ForbiddenOrigin):
        access.check_origin(origin, daemon_host)


@settings(max_examples=150, deadline=None)
@given(
    scheme=st.sampled_from(["http", "https", "ws"]),
    host=st.sampled_from(["localhost", "[::1]", "[::ffff:127.0.0.1]"])
    | st.ip_addresses(network="127.0.0.0/8").map(str),
    port=_ports,
)
def test_check_origin_refuses_loopback_pages_on_another_port(scheme: str, host: str, port: int | None) -> None:
    if port == 7777:
        port = 7778
    with pytest.raises(ForbiddenOrigin):
        access.check_origin(_origin(scheme, host, port), "127.0.0.1:7777")


@settings(max_examples=300, deadline=None, report_multiple_bugs=False)
@example(origin="http://[", host="127.0.0.1:7777")
@given(
    origin=st.text()
    | st.builds(
        lambda s, rest: f"{s}://{rest}",
        st.sampled_from(["http", "https"]),
        st.text(alphabet="[]:@.a1/\uff03", max_size=12),
    ),
    host=st.none() | st.text(max_size=20),
)
def test_check_origin_raises_only_forbidden_origin(origin: str, host: str | None) -> None:
    try:
        access.check_origin(origin, host)
    except ForbiddenOrigin:
        pass


@pytest.mark.parametrize("origin", ["http://[", "http://[::1", "https://exa\uff03mple.com"])
def test_check_origin_malformed_is_forbidden(origin: str) -> None:
    with pytest.raises(ForbiddenOrigin):
        access.check_origin(origin, "127.0.0.1:7777")


def test_error_bodies_follow_the_spec() -> None:
    for exc in (BadRequest("x"), Unauthorized("y"), ForbiddenOrigin("z")):
        body = exc.body()
        assert set(body) == {"error", "code"}
        assert json.loads(json.dumps(body)) == body


@pytest.mark.parametrize("host", ["127.0.0.1:8765", "localhost:8765", "[::1]:8765", "192.168.1.5:8765", "localhost",
                                  "app.localhost:1", "myhost:8765", None, ""])
def test_check_host_accepts_this_daemon(host):
    access.check_host(host, "myhost")


@pytest.mark.parametrize("host", ["evil.example:8765", "evil.example", "127.0.0.1.evil.example:8765", "[::1",
                                  "localhost.evil:1"])
def test_check_host_refuses_other_names(host):
    with pytest.raises(ForbiddenOrigin):
        access.check_host(host, "myhost")


def test_deep_json_and_too_many_seed_items_are_400_not_500():
    from bmoe_daemon.bodies import parse_json
    from bmoe_daemon.errors import BadRequest

    for raw in (b"[" * 100_000 + b"]" * 100_000, b'{"a":' * 50_000 + b"1" + b"}" * 50_000):
        with pytest.raises(BadRequest, match="nests too deeply"):
            parse_json(raw)
