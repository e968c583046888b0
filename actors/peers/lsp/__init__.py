"""Language servers: their wire (wire.py), their program (program.py) and the manager that
asks them for diagnostics after an edit (servers.py)."""
