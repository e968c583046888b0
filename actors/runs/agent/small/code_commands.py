"""Whole commands for edits of code whose every line the request gives: a name renamed
wherever it is written, a number given a name of its own, and a function that returns
what the request writes added to a file.

Asked to rename a function everywhere, SmolLM2-135M edited one line of one file, when
it edited at all; asked to pull a number out into a named constant, it wrote its own
words over a line (a made-up call), refused as breaking the file. A rename and a
constant are the same small change on each line that holds the name or the number, in
files that can be found; a function the request writes whole (its name, parameters and
what it returns) is two lines the model need not write again. So the command is known,
shown and run as any other:

    sed -i 's/\\bold_name\\b/new_name/g' a.py b.py           rename, in every file that writes it
    sed -i -e 's/\\b0\\.25\\b/RATE/g' -e '3i RATE = 0.25\\n' x.py   the number a constant, before the code
    printf '\\n\\ndef half(n):\\n    return n / 2\\n' >> x.py       a function added at the end
    sed -i '4s/[[:space:]]*$/:/' x.py                          the colon Python says a line is missing

A rename is refused where the new name is written there already (two things would
share it); a constant where the number is written anywhere but as a number of the code
(inside a string, a comment), where the name is taken, or where the file does not parse;
a function where the file defines one of that name, or would not parse with it.
"""

from __future__ import annotations

import ast
import keyword
import re
from collections.abc import Callable, Iterable

from actors.runs.agent.small.files_of import PLAIN_PATH

_IDENT = r"`?(?P<{}>[A-Za-z_]\w*)`?(?:\(\))?"
# "rename (the function) old to new", "change the name of old to new".
_RENAME = re.compile(r"\b(?:rename|change\s+the\s+name\s+of)\s+(?:the\s+)?(?:(?:function|method|class|variable|"
                     r"constant|var|field|attribute|parameter|argument|identifier|name)\s+)?"
                     + _IDENT.format("old") + r"\s+(?:to|as|into)\s+(?:be\s+)?" + _IDENT.format("new")
                     + r"(?![\w./])", re.IGNORECASE)
_NUMBER = r"(?P<value>-?\d+(?:\.\d+)?)(?![\w.]*\d)"
# "pull the 0.25 in x.py out into a constant called RATE", "make 0.25 a constant named RATE",
# "use a constant RATE for 0.25", "replace 0.25 with a constant called RATE".
_CONSTANT = re.compile(r"(?<![\w.])" + _NUMBER + r"\b.{0,60}?\b(?:an?\s+)?(?:constant|variable)\s+"
                       r"(?:called\s+|named\s+)?" + _IDENT.format("name") + r"(?![\w(])"
                       r"|\b(?:constant|variable)\s+(?:called\s+|named\s+)?" + _IDENT.format("name2")
                       + r"\s+(?:for|instead\s+of|in\s+place\s+of)\s+(?:the\s+)?(?P<value2>-?\d+(?:\.\d+)?)\b",
                       re.IGNORECASE | re.DOTALL)
_ASKS_CONSTANT = re.compile(r"\b(?:pull|move|extract|factor|hoist|lift|turn|put|make|replace|use|give|introduce|"
                            r"define|name|store|keep)\b", re.IGNORECASE)
# "add a function half(n) to x.py that returns n / 2", "write a half(n) function that returns n / 2 in x.py".
_FUNCTION = re.compile(r"\b(?:add|write|create|define|put|make)\s+(?:a\s+|an\s+)?(?:new\s+)?(?:function\s+|method\s+)?"
                       r"(?:called\s+|named\s+)?(?P<name>[A-Za-z_]\w*)\s*\((?P<args>[^()]*)\)(?:\s+function\b)?"
                       r"(?P<between>.*?)\b(?:that|which|to)?\s*returns?\s+(?P<expr>.+?)"
                       r"(?:\s+(?:to|in|into|inside)\s+(?:the\s+(?:file\s+)?)?(?P<file>[\w./-]+\.py))?\s*[.!]?\s*$",
                       re.IGNORECASE | re.DOTALL)
# Characters the added lines may not hold: what ends printf's quotes or starts an escape.
_NOT_IN_FUNCTION = frozenset("'\\\n\r")
# A request to mend code that does not run: "fix the syntax error", "x.py fails/crashes", "it's broken".
_BROKEN = re.compile(r"\b(?:syntax\s*error|syntaxerror|(?:fails?|failing|crash(?:es|ing)?|breaks?|broken|won'?t\s+run|"
                     r"doesn'?t\s+(?:run|work|parse|compile)|invalid\s+syntax))\b", re.IGNORECASE)
# Files a rename may touch at most.
RENAME_FILES = 20


def code_commands(asked: str, named: list[str], texts: Callable[[], Iterable[tuple[str, str]]],
                  exists: Callable[[str], bool] = lambda _: False) -> dict[str, list[str]]:
    """The whole command of a request to rename a name of code, or to give a number of
    a file a constant's name: over the files it names that are there (`named`, with
    their text in `texts`), else, for a rename, every text file of the workspace that
    writes the name (`texts`: (path, text) of each); none otherwise, nor for a rename of
    a name that `exists` as a file or folder (`mv` renames that: commands.named_commands)."""
    function = _FUNCTION.search(asked.strip())
    if function is not None:
        return function_commands(function, named, texts)
    if _BROKEN.search(asked):
        colon = [c for p, t in texts() if p.endswith(".py") and (not named or p in named)
                 and (c := colon_command(p, t)) is not None]
        return {"sed": colon} if len(colon) == 1 else {}
    rename, constant = _RENAME.search(asked), _CONSTANT.search(asked)
    if rename is not None and (exists(rename.group("old")) or exists(rename.group("new"))):
        return {}
    if rename is None and (constant is None or not _ASKS_CONSTANT.search(asked)):
        return {}
    files = [(p, t) for p, t in texts() if not named or p in named]
    if rename is not None:
        command = rename_command(rename.group("old"), rename.group("new"), files)
    else:
        assert constant is not None
        name, value = constant.group("name") or constant.group("name2"), constant.group("value") or \
            constant.group("value2")
        holding = [(p, t) for p, t in files if p.endswith(".py") and re.search(_word(value), t)]
        command = constant_command(name, value, *holding[0]) if len(holding) == 1 else None
    return {"sed": [command]} if command else {}


def _word(text: str) -> str:
    """A pattern of `text` written as a word of its own (no letter, digit, `_` or `.` on either side)."""
    return rf"(?<![\w.]){re.escape(text)}(?![\w]|\.\d)"


def _name(name: str) -> str:
    """A pattern of a `name` of code as `sed`'s `\\b` finds it: no letter, digit or `_` on
    either side (`util.old` holds `old`)."""
    return rf"(?<!\w){re.escape(name)}(?!\w)"


def rename_command(old: str, new: str, files: Iterable[tuple[str, str]]) -> str | None:
    """`sed` that writes `new` for the word `old` in each of `files` ((path, text)) that
    holds it; None where none does, one of them all holds `new` already, there are more than
    RENAME_FILES, a name is a keyword, or a path may not be written plain."""
    if old == new or keyword.iskeyword(old) or keyword.iskeyword(new):
        return None
    files = list(files)
    holding = [(p, t) for p, t in files if re.search(_name(old), t)]
    if not holding or len(holding) > RENAME_FILES or any(re.search(_name(new), t) for _, t in files) \
            or not all(PLAIN_PATH.fullmatch(p) for p, _ in holding):
        return None
    return f"sed -i 's/\\b{old}\\b/{new}/g' " + " ".join(p for p, _ in holding)


def constant_command(name: str, value: str, path: str, text: str) -> str | None:
    """`sed` that writes `name` for the number `value` in the Python file `path` (its
    `text`) and sets `name = value` before its first line of code (after its docstring
    and imports); None where the file does not parse, writes the number elsewhere than
    as a number of the code, has nothing after its imports, or writes `name` already."""
    if not PLAIN_PATH.fullmatch(path) or re.search(_name(name), text) or keyword.iskeyword(name):
        return None
    try:
        tree = ast.parse(text)
        number = ast.literal_eval(value)
    except (SyntaxError, ValueError):
        return None
    used = [n for n in ast.walk(tree) if isinstance(n, ast.Constant) and type(n.value) is type(number)
            and n.value == number and ast.get_source_segment(text, n) == value.lstrip("-")]
    if not used or len(used) != len(re.findall(_word(value.lstrip("-")), text)):
        return None
    code = [n for n in tree.body if not isinstance(n, ast.Import | ast.ImportFrom)
            and not (isinstance(n, ast.Expr) and isinstance(n.value, ast.Constant) and isinstance(n.value.value, str))]
    if not code:
        return None
    first = min([code[0].lineno, *(d.lineno for d in getattr(code[0], "decorator_list", ()))])
    pattern = value.lstrip("-").replace(".", "\\.")
    return f"sed -i -e 's/\\b{pattern}\\b/{name}/g' -e '{first}i {name} = {value.lstrip('-')}\\n' {path}"



def function_commands(m: re.Match[str], named: list[str], texts: Callable[[], Iterable[tuple[str, str]]]
                      ) -> dict[str, list[str]]:
    """`function_command` for a request `_FUNCTION` matched, in the one Python file it
    names (`named`) that is there."""
    files = [n for n in named if n.endswith(".py")]
    if len(files) != 1:
        return {}
    text = next((t for p, t in texts() if p == files[0]), None)
    command = function_command(m.group("name"), m.group("args"), m.group("expr"), files[0], text) \
        if text is not None else None
    return {"printf": [command]} if command else {}


def function_command(name: str, args: str, expr: str, path: str, text: str) -> str | None:
    """`printf` that adds to the Python file `path` (its `text`) a function `name` of
    `args` returning `expr`, after two blank lines; None where the file defines `name`
    already, the function is not Python (`args` no parameters, `expr` no expression),
    the file would not parse with it, or a character may not be written in it."""
    if keyword.iskeyword(name) or not PLAIN_PATH.fullmatch(path) or _NOT_IN_FUNCTION & set(args + expr):
        return None
    expr = expr.strip().rstrip(".")
    lines = f"def {name}({args.strip()}):\n    return {expr}\n"
    try:
        added = ast.parse(lines)
        ast.parse(text)
        ast.parse(text + ("" if text.endswith("\n") or not text else "\n") + "\n\n" + lines)
    except (SyntaxError, ValueError):
        return None
    if any(isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) and n.name == name
           for n in ast.walk(ast.parse(text))) or len(added.body) != 1:
        return None
    start = "" if text.endswith("\n") or not text else "\\n"
    body = lines.replace("%", "%%").replace("\n", "\\n")
    return f"printf '{start}\\n\\n{body}' >> {path}"


def colon_command(path: str, text: str) -> str | None:
    """`sed` that puts the colon Python says a line of the file `path` (its `text`) is
    missing ("expected ':'") at that line's end; None where the file parses, fails for
    another reason, the line holds a comment or a string's quote, or it still would
    not parse."""
    try:
        compile(text, path, "exec", dont_inherit=True)
        return None
    except SyntaxError as exc:
        if exc.msg != "expected ':'" or exc.lineno is None:
            return None
        number = exc.lineno
    except ValueError:
        return None
    lines = text.split("\n")
    if not 0 < number <= len(lines) or set(lines[number - 1]) & set("#'\"\\") or not PLAIN_PATH.fullmatch(path):
        return None
    lines[number - 1] = lines[number - 1].rstrip() + ":"
    try:
        compile("\n".join(lines), path, "exec", dont_inherit=True)
    except (SyntaxError, ValueError):
        return None
    return f"sed -i '{number}s/[[:space:]]*$/:/' {path}"
