"""What becomes knowledge: facts learnt from conversations (a model with a key, rules without), the
profile, conversations and summaries saved, tags, what is kept out, and health (what is worth
cleaning)."""
