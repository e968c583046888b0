"""Skills: folders with a SKILL.md from three places and their switches (catalog.py), and
the tool that reads one (tool.py)."""
