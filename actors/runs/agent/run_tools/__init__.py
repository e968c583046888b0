"""The tools the built-in run carries out itself, since what they change is the
conversation: the todo list and questions, plan mode, the goal, and helpers; carrier.py
offers them and carries their calls out."""
