"""Whether a call runs: the modes (modes.py), the person's always-allow rules (rules.py)
and hooks (hooks_config.py, hooks.py)."""
