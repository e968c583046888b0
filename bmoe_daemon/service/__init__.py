"""bmoe-daemon as a background service of this user: the unit and plist templates
(units.py fills them in, with no I/O) and `bmoe-daemon service …` (commands.py)."""
