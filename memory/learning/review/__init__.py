"""The user's say over what learning keeps: the review inbox (inbox.py)."""
