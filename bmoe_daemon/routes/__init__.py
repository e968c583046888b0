"""The HTTP routes, one module per part of the API."""
