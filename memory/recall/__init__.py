"""What memory brings to a chat turn: auto-recall and its window, the guide and the memory block of
the system prompt, the user's notes, Claude's memory tools, the recall log."""
