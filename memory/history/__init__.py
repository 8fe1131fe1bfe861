"""Bringing one's history from another assistant: a ChatGPT or Claude.ai export, or a pasted
list of memories, read as a stream, stored as past chats and learnt from in the background."""
