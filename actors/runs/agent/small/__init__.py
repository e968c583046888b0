"""How the built-in run leads a small local model through a job."""
