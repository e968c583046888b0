"""A conversation's record: its items as values (items.py), the record in memory with its
waiting cards (transcript.py), what the cards need (cards.py), the list's pages
(listing.py), the record's file as a journal of its saves (journal.py), the tools a
client brings (client_tools.py) and the JSON Schemas clients give (json_schema.py)."""
