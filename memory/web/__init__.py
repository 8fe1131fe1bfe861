"""The memory's pages and fragments: /memory and its sections, its profile and settings pages, the
widgets on chat pages, and the memory page's socket."""
