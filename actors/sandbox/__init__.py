"""The OS sandbox around the commands the model runs: bubblewrap on Linux
(bwrap.py, the argv; pure), Seatbelt on macOS (seatbelt.py, the profile; pure and
untested here), and the daemon's side (policy.py: whether one is available, what it
hides, the note a confined failure gets)."""
