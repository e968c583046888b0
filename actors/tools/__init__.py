"""The tools an agent may call, and the registry that offers them."""
