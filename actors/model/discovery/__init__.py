"""The person's GGUF models: their headers read without loading them, and where they are kept."""
