"""What Ikario knows about the person: what each fact is about (about.py), when it holds
(when.py), and the sheet built from them that the model reads on every turn (sheet.py)."""
