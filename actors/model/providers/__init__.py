"""Saved providers: OpenAI-compatible chat services a conversation may use.

`backend.py` is the engine's Backend for one provider and model (`ProviderBackend`:
the HTTP request, the stream read back, the refusals put in plain words);
`entries.py` is what a saved provider is (`Provider`, `ProviderModel`) and the
checks on what is given for one; `directory.py` keeps them (`ProviderDirectory`:
providers.json, the keys in credentials.json, written whole and 0600) and hands out
a backend for a `<provider>/<model>` route; `probe.py` asks an address for its model
list (`GET <base_url>/models`) to test it and its key before a provider is saved.
"""
