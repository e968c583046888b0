"""The search tools: file_glob_search and grep_search.

Names, parameters and result shapes follow llama.cpp's server tools: entries one a
line (a folder with a trailing `/`), matches as `path:line:text` with context lines
as `path-line-text` and `--` after each group, then `---` and `Total matches: N`,
and a bracketed line when a limit was reached. Unlike llama.cpp's, the walk never
consults `.gitignore` or runs git (see actors/tools/globs.py), grep paths are
relative to the workspace (so they can be handed to read_file as they are), and an
`exclude` that matches a folder leaves out everything under it.

Every path goes through `paths.resolve`; the walk does not follow links, and grep
opens each file without following a link, so nothing outside the workspace is read.
The work (walk, reads, regex) runs in a worker thread behind a CapacityLimiter and
polls `trio.from_thread.check_cancelled()` between folders and files, and inside a file
between calls into the regex engine (RE2, whose work per call is bounded): a cancelled
call stops within a fraction of a second. No pattern (a regex, a glob) takes more than
time linear in the text it is matched against.

The tools live in actors/tools/glob_search.py (file_glob_search) and
actors/tools/grep_search.py (grep_search, and how it reads and matches files), with
what both use (arguments, the thread limiter, the walk's notes) in
actors/tools/search_common.py; this module re-exports their names and offers both
tools together (`search_tools`).
"""

from __future__ import annotations

import trio

from actors.tools.glob_search import MAX_GLOB_RESULTS, FileGlobSearch, glob_search
from actors.tools.grep_search import (
    BINARY_SNIFF_BYTES,
    MAX_CONTEXT_LINES,
    MAX_GREP_FILE_BYTES,
    MAX_GREP_MATCHES,
    MAX_LINE_CHARS,
    MAX_PATTERN_CHARS,
    MIN_NEEDLE_CHARS,
    GrepQuery,
    GrepSearch,
    compile_query,
    grep_data,
    grep_search,
    matching_lines,
    read_small,
)
from actors.tools.search_common import (
    MAX_GLOB_CHARS,
    MAX_UNENTERED_NAMED,
    SEARCH_BUDGET_S,
    SEARCH_THREADS,
    TITLE_CHARS,
)

__all__ = [
    "BINARY_SNIFF_BYTES",
    "MAX_CONTEXT_LINES",
    "MAX_GLOB_CHARS",
    "MAX_GLOB_RESULTS",
    "MAX_GREP_FILE_BYTES",
    "MAX_GREP_MATCHES",
    "MAX_LINE_CHARS",
    "MAX_PATTERN_CHARS",
    "MAX_UNENTERED_NAMED",
    "MIN_NEEDLE_CHARS",
    "SEARCH_BUDGET_S",
    "SEARCH_THREADS",
    "TITLE_CHARS",
    "FileGlobSearch",
    "GrepQuery",
    "GrepSearch",
    "compile_query",
    "glob_search",
    "grep_data",
    "grep_search",
    "matching_lines",
    "search_tools",
    # tests read the real one (to patch it, patch actors.tools.grep_search.read_small)
    "read_small",
]


def search_tools(limiter: trio.CapacityLimiter | None = None) -> list[FileGlobSearch | GrepSearch]:
    """Both search tools, sharing `limiter` (or search_common's) for their threads."""
    return [FileGlobSearch(limiter), GrepSearch(limiter)]
