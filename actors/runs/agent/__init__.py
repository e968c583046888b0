"""The built-in agent's run: rounds with the model and its tool calls under the mode
(run.py), what it sends the model (history.py, prompt.py, instructions.py, git_status.py,
real_names.py), its bookkeeping (ledger.py), compaction (compaction_cut.py: the pure
cut; compaction_turn.py: the summary turn), its own tools (run_tools/) and how it leads
a small model (small/)."""
