"""The whole command of a request to make a Python file's `%` and `.format()` strings
f-strings: each one-line `"…%s…" % (a, b)` or `"…{}…".format(a, b)` written again with
its values in place, read by Python's parser.

Asked to switch a file's string formatting to f-strings, SmolLM2-135M edited one line
into the worked example's text. Which strings are formatted, and with what, is the
parser's to say, and each is a one-line change:

    sed -i -e '4s/"%s is %d" % (name, age)/f"{name} is {age}"/' people.py

Conversions `%s`, `%r`, `%d`, `%i`, `%f`, `%e`, `%g`, `%x`, `%o` with their flags, width
and precision (`%-8s`, `%6.2f`, `%+d`, `%05d`) and `%%`, and `.format` fields by place,
number or name with their specs, are written again. None where a formatted string of the
file is of another shape, or one line holds both quotes: all of them or none (a file
half done is not what was asked: one string left as it was, and the job is not done).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable

from actors.runs.agent.small.files_of import PLAIN_PATH, PY_FILE, sed_pattern, sed_replacement

_ASKS = re.compile(r"\bf[\s-]?strings?\b", re.IGNORECASE)
_PERCENT = re.compile(r"%(?:(?P<pct>%)|(?P<flags>[-+ 0#]*)(?P<width>\d+)?(?:\.(?P<prec>\d+))?"
                      r"(?P<conv>[sdirfFeEgGxXo]))")
_FIELD = re.compile(r"\{\{|\}\}|\{(?P<key>[^{}!:]*)(?P<conv>![rsa])?(?::(?P<spec>[^{}]*))?\}|[{}]")


def fstring_commands(asked: str, read: Callable[[str], str | None]) -> dict[str, list[str]]:
    """The whole command of a request to make the one Python file it names (that `read`
    gives) use f-strings; none otherwise."""
    if not _ASKS.search(asked):
        return {}
    files = [f for f in dict.fromkeys(PY_FILE.findall(asked)) if PLAIN_PATH.fullmatch(f) and read(f) is not None]
    if len(files) != 1:
        return {}
    command = fstrings_command(files[0], read(files[0]) or "")
    return {"sed": [command]} if command else {}


def fstrings_command(path: str, text: str) -> str | None:
    """The `sed` writing each formatted string of `path` (its `text`) as an f-string."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return None
    edits = []
    for node in ast.walk(tree):
        if not _old_style(node):
            continue
        if not isinstance(node, ast.BinOp | ast.Call) or node.lineno != node.end_lineno:
            return None
        new = _converted(node, text)
        old = ast.get_source_segment(text, node) if new else None
        if not old or not new or "\n" in old:
            return None
        if "'" in old + new and '"' in old + new or "\\" in old + new:
            return None
        quote = '"' if "'" in old + new else "'"
        if quote == '"' and re.search(r"[$`]", old + new):  # (`!` is plain text in a script's bash)
            return None
        pattern, with_ = sed_pattern(old), sed_replacement(new)
        edits.append(f"-e {quote}{node.lineno}s/{pattern}/{with_}/{quote}")
    if not edits or not PLAIN_PATH.fullmatch(path):
        return None
    return f"sed -i {' '.join(edits)} {path}"


def _converted(node: ast.BinOp | ast.Call, text: str) -> str | None:
    """The f-string `node` (a `%` or `.format` of a plain string) is, None where it is of
    another shape."""
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mod) and isinstance(node.left, ast.Constant) \
            and isinstance(node.left.value, str):
        values = node.right.elts if isinstance(node.right, ast.Tuple) else [node.right]
        said = [ast.get_source_segment(text, v) for v in values]
        if isinstance(node.right, ast.Dict) or any(s is None for s in said):
            return None
        return _percent(node.left.value, [s for s in said if s is not None], _quote_of(node.left, text))
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "format" \
            and isinstance(node.func.value, ast.Constant) and isinstance(node.func.value.value, str) \
            and not any(isinstance(a, ast.Starred) for a in node.args) and all(k.arg for k in node.keywords):
        args = [ast.get_source_segment(text, a) for a in node.args]
        keywords = {k.arg: ast.get_source_segment(text, k.value) for k in node.keywords if k.arg}
        if any(a is None for a in args) or any(v is None for v in keywords.values()):
            return None
        return _format(node.func.value.value, [a for a in args if a], {k: v for k, v in keywords.items() if v},
                       _quote_of(node.func.value, text))
    return None


def _percent(template: str, values: list[str], quote: str | None) -> str | None:
    """`template % values` as an f-string."""
    out, used, at = [], 0, 0
    for m in _PERCENT.finditer(template):
        out.append(_literal(template[at:m.start()]))
        at = m.end()
        if m.group("pct"):
            out.append("%")
            continue
        if used >= len(values):
            return None
        value = values[used]
        used += 1
        field = _field(value, m.group("conv"), m.group("flags") or "", m.group("width"), m.group("prec"))
        if field is None:
            return None
        out.append(field)
    if used != len(values) or "%" in template[at:].replace("%%", ""):
        return None
    out.append(_literal(template[at:]))
    return _fstring("".join(out), values, quote)


def _old_style(node: ast.AST) -> bool:
    """Whether `node` formats a plain string the old way (`'…' % x`, `'…'.format(x)`)."""
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mod):
        return isinstance(node.left, ast.Constant) and isinstance(node.left.value, str)
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "format" \
        and isinstance(node.func.value, ast.Constant) and isinstance(node.func.value.value, str)


def _field(value: str, conv: str, flags: str, width: str | None, prec: str | None) -> str | None:
    """The f-string field `%<flags><width>.<prec><conv>` of `value` is, None where it has
    no such field (`%.2d`)."""
    left = "-" in flags
    if conv in "sr":
        shown = "!r" if conv == "r" else "!s" if width or prec else ""
        spec = (("<" if left else ">") + width if width else "") + (f".{prec}" if prec else "")
        return "{" + value + shown + (f":{spec}" if spec else "") + "}"
    if conv in "di" and prec:
        return None
    kind = "d" if conv in "di" else conv
    sign = "+" if "+" in flags else " " if " " in flags else ""
    spec = ("<" if left and width else "") + sign + ("#" if "#" in flags else "") \
        + ("0" if "0" in flags and not left and width else "") + (width or "") + (f".{prec}" if prec else "")
    if kind == "d" and not spec:
        return "{" + value + "}"  # (as before: `%d` of an int)
    return "{" + value + ":" + spec + kind + "}"


def _format(template: str, args: list[str], keywords: dict[str, str], quote: str | None) -> str | None:
    """`template.format(*args, **keywords)` as an f-string."""
    out, auto, at = [], 0, 0
    for m in _FIELD.finditer(template):
        out.append(_literal(template[at:m.start()]))
        at = m.end()
        if m.group(0) in ("{{", "}}"):
            out.append(m.group(0))
            continue
        key = m.group("key")
        if key is None:
            return None  # a lone brace
        if key == "":
            if auto >= len(args):
                return None
            value, auto = args[auto], auto + 1
        elif key.isdigit():
            if int(key) >= len(args):
                return None
            value = args[int(key)]
        elif key in keywords:
            value = keywords[key]
        else:
            return None
        out.append("{" + value + (m.group("conv") or "") + (f":{m.group('spec')}" if m.group("spec") else "") + "}")
    out.append(_literal(template[at:]))
    return _fstring("".join(out), [*args, *keywords.values()], quote)


def _literal(text: str) -> str:
    """Literal text of an f-string: its braces doubled, its escapes as Python writes them."""
    said = text.replace("{", "{{").replace("}", "}}")
    return repr(said)[1:-1] if any(c in said for c in "\n\t\\") else said


def _fstring(body: str, values: list[str], quote: str | None) -> str | None:
    """`body` as an f-string in the template's quote (the other one where a value holds
    it); None where values hold both, or a backslash."""
    if quote is None:
        return None
    if any(quote in v for v in values):
        quote = "'" if quote == '"' else '"'
        if any(quote in v for v in values) or quote in body:
            return None
    if any("\\" in v for v in values) or quote in body.replace("\\" + quote, ""):
        return None
    return f"f{quote}{body}{quote}"


def _quote_of(node: ast.Constant, text: str) -> str | None:
    """The quote a plain one-line string is written in (none for a prefixed or triple one)."""
    said = ast.get_source_segment(text, node) or ""
    return said[0] if said[:1] in ("'", '"') and not said.startswith(("'''", '"""')) else None
