"""A memory as its owner sees and edits it: the card, its category, its source, its versions in
words, and the memory page's forms."""
