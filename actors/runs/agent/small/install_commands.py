"""The whole command of a question about what must be installed before the workspace's
Python code runs, or of a request for a requirements file: the packages its imports
need, read by Python's parser, shown as the one `pip install` line that gets them.

Asked what to install, SmolLM2-135M searched for a name of its own making and answered
"No matches found". Which modules the code imports is the parser's to say; which of them
are Python's own is `sys.stdlib_module_names`; which are the workspace's own modules is
its files' to say; and a module's package on PyPI is its own name but for the few
well-known ones whose names differ (`yaml` is PyYAML). So the answer is known, and the
command that shows it, with the import lines it comes from, is run as any other:

    echo 'pip install PyYAML requests' && grep -rnE --include='*.py' '^\\s*(import|from)\\s.*\\b(yaml|requests)\\b' .

A request to write a requirements file that is not there yet writes those names, one a
line (`printf '%s\\n' PyYAML requests > requirements.txt`). Imports made only where an
ImportError is caught (optional), under `if TYPE_CHECKING:`, and those of tests (unless
the request is about tests) are left out. None where a Python file does not parse (the
list would be short).
"""

from __future__ import annotations

import ast
import posixpath
import re
import sys
from collections.abc import Callable, Iterable

from actors.runs.agent.small.files_of import is_test

# A question of what to install for the code to run.
_ASKS = re.compile(
    r"\bpip\s+install\b|\b(?:install|installed)\b.*\b(?:before|first|to\s+run|so\s+(?:it|this)|for\s+(?:it|this))\b|"
    r"\bwhat\b.*\b(?:install(?:ing|ed)?|dependenc(?:y|ies))\b|"
    r"\b(?:which|what)\s+(?:packages?|librar(?:y|ies)|modules?)\b.*\b(?:need|needed|install|missing|required)\b|"
    r"\b(?:list|show|tell\s+me)\b.*\b(?:dependenc(?:y|ies)|third[\s-]*party\s+(?:packages|librar(?:y|ies)|"
    r"modules|requirements))\b",
    re.IGNORECASE)
# A requirements file asked for.
_REQUIREMENTS = re.compile(r"\brequirements(?:\.txt|\s+file)\b", re.IGNORECASE)
_MAKE = re.compile(r"\b(?:make|create|write|generate|add|produce|build|give\s+me|set\s+up)\b", re.IGNORECASE)
_TESTS = re.compile(r"\btests?\b", re.IGNORECASE)

# Import names whose package on PyPI has another name (the well-known ones).
PIP_NAMES = {
    "yaml": "PyYAML", "PIL": "Pillow", "dateutil": "python-dateutil", "cv2": "opencv-python",
    "sklearn": "scikit-learn", "skimage": "scikit-image", "bs4": "beautifulsoup4", "dotenv": "python-dotenv",
    "serial": "pyserial", "Crypto": "pycryptodome", "jwt": "PyJWT", "magic": "python-magic",
    "docx": "python-docx", "pptx": "python-pptx", "attr": "attrs", "OpenSSL": "pyOpenSSL", "usb": "pyusb",
    "fitz": "PyMuPDF", "win32api": "pywin32", "win32con": "pywin32", "gi": "PyGObject", "wx": "wxPython",
    "telegram": "python-telegram-bot", "discord": "discord.py", "Levenshtein": "python-Levenshtein",
    "slugify": "python-slugify", "jose": "python-jose", "multipart": "python-multipart", "git": "GitPython",
    "github": "PyGithub", "kafka": "kafka-python", "ldap": "python-ldap", "MySQLdb": "mysqlclient",
    "psycopg2": "psycopg2-binary", "zmq": "pyzmq", "Xlib": "python-xlib", "pkg_resources": "setuptools",
    "google.protobuf": "protobuf", "dns": "dnspython", "nacl": "PyNaCl", "markdown": "Markdown",
    "tomli_w": "tomli-w", "sentry_sdk": "sentry-sdk", "grpc": "grpcio", "websocket": "websocket-client",
}
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")


def install_commands(asked: str, texts: Callable[[], Iterable[tuple[str, str]]],
                     is_file: Callable[[str], bool]) -> dict[str, list[str]]:
    """The whole command of a question of what to install, or of a request for a
    requirements file not there yet; none otherwise."""
    wants_file = _REQUIREMENTS.search(asked) is not None and _MAKE.search(asked) is not None
    if not wants_file and not _ASKS.search(asked):
        return {}
    files = [(p, t) for p, t in texts() if p.endswith(".py")]
    if not files:
        return {}
    tests = _TESTS.search(asked) is not None
    needed = packages(files, tests=tests)
    if needed is None:
        return {}
    imports, pips = needed
    if wants_file:
        target = "requirements.txt"
        if is_file(target) or not pips:
            return {}
        return {"printf": [f"printf '%s\\n' {' '.join(pips)} > {target}"]}
    if not pips:
        return {"echo": ["echo 'Nothing to install: every module the code imports is in the standard library or "
                         "in this folder.'"]}
    pattern = "|".join(re.escape(i) for i in imports)
    return {"echo": [f"echo 'pip install {' '.join(pips)}' && grep -rnE --include='*.py' "
                     f"'^\\s*(import|from)\\s.*\\b({pattern})\\b' ."]}


def packages(files: list[tuple[str, str]], *, tests: bool = False) -> tuple[list[str], list[str]] | None:
    """The third-party modules the workspace's Python `files` import (their top names,
    sorted) and the packages that install them (PIP_NAMES, else the name itself, each
    once); None where a file does not parse. Test files count only with `tests`."""
    own = _own_names(p for p, _ in files)
    found: dict[str, str] = {}
    for path, text in files:
        if is_test(path) and not tests:
            continue
        try:
            tree = ast.parse(text)
        except (SyntaxError, ValueError, RecursionError):
            return None
        for name in _imported(tree):
            top = name.split(".", 1)[0]
            if top in own or top in sys.stdlib_module_names or top == "__future__":
                continue
            key = name if name in PIP_NAMES else top
            if _NAME.fullmatch(PIP_NAMES.get(key, top)):
                found.setdefault(top, PIP_NAMES.get(key, top))
    imports = sorted(found)
    return imports, list(dict.fromkeys(found[i] for i in imports))


def _own_names(paths: Iterable[str]) -> set[str]:
    """The names the workspace's own modules and packages may be imported by: every
    Python file's name and every folder's, wherever it is."""
    names: set[str] = set()
    for path in paths:
        parts = path.split("/")
        names.update(parts[:-1])
        names.add(posixpath.splitext(parts[-1])[0])
    return names


def _imported(tree: ast.Module) -> list[str]:
    """The absolute imports of `tree` (`import a.b`: "a.b"; `from a.b import c`: "a.b"),
    those where an ImportError is caught, or under `if TYPE_CHECKING:`, left out."""
    skipped: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Try) and any(_catches_import_error(h) for h in node.handlers):
            skipped.update(id(n) for stmt in node.body for n in ast.walk(stmt))
        elif isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            skipped.update(id(n) for stmt in node.body for n in ast.walk(stmt))
    out: list[str] = []
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.Import):
            out.extend(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            out.append(node.module)
    return out


def _catches_import_error(handler: ast.ExceptHandler) -> bool:
    """Whether the handler catches ImportError (or ModuleNotFoundError, or everything)."""
    if handler.type is None:
        return True
    names = [n.id if isinstance(n, ast.Name) else n.attr if isinstance(n, ast.Attribute) else ""
             for n in (handler.type.elts if isinstance(handler.type, ast.Tuple) else [handler.type])]
    return any(n in ("ImportError", "ModuleNotFoundError", "Exception", "BaseException") for n in names)
