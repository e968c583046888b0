"""Prompts that run on a schedule: when a task is due (schedule.py, pure) and the actor
that runs it (scheduler.py)."""
