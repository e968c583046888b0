"""The `bmoe-daemon` program: its commands, dispatched (the options: bmoe_daemon/options.py)."""

from __future__ import annotations

import gc
import logging
import sys


def main(argv: list[str] | None = None) -> int:
    # Start-up makes objects that live as long as the process and little garbage: the
    # collector's passes over them were a fifth of the imports' time. It stays off until
    # the daemon serves (server.py freezes what start-up made and turns it back on), or
    # until another command has read its options.
    gc.disable()
    try:
        return _main(argv)
    finally:
        gc.enable()


def _main(argv: list[str] | None) -> int:
    from bmoe_daemon.options import OptionError, parser, serve_config

    p = parser()
    args, rest = p.parse_known_args(argv)
    if args.command != "serve":
        gc.enable()
    if args.command == "service":
        from bmoe_daemon.service.commands import service

        return service(args, rest)
    if args.command == "doctor":
        from bmoe_daemon.doctor import doctor

        return doctor(args, rest)
    if args.command == "run":
        if rest:
            p.error(f"unrecognized arguments: {' '.join(rest)}")
        from bmoe_daemon.run_cmd import run_command

        return run_command(args)
    if rest:
        p.error(f"unrecognized arguments: {' '.join(rest)}")
    from bmoe_daemon.startup import LOG_FORMAT

    logging.basicConfig(
        level=getattr(logging, args.log_level.upper()),
        format=LOG_FORMAT,
        stream=sys.stderr,
    )
    try:
        config = serve_config(args)
    except OptionError as exc:
        print(f"bmoe-daemon: {exc}", file=sys.stderr)
        return 2
    from bmoe_daemon.server import run

    return run(config)


if __name__ == "__main__":
    sys.exit(main())
