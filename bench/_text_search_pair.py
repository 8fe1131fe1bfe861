"""Store.text_search against the join-first query it replaced, paired, on one index.

    .venv/bin/python bench/_text_search_pair.py INDEX_DIR NAMESPACE QUESTIONS
    e.g. bench/_text_search_pair.py /tmp/ikario-profile-search locomo-10000 200
(the index bench/_profile_search.py fills). Each LoCoMo question's words are searched by
both, alternately first, after one untimed call each (word counts cached); prints medians,
p95, the median per-call ratio and how many result lists are identical.
"""

import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from memory_latency import pct, questions  # noqa: E402

from ikario_rag import search, text  # noqa: E402
from ikario_rag.store import Store  # noqa: E402


class Before(Store):
    """The query before: every match joined to its record before ranking."""

    def text_search(self, namespace, words, limit, now_ts):
        match = self.text_match(namespace, words)
        return [] if match is None else self.live_ranked(namespace, match, limit, now_ts)


path = Path(sys.argv[1]) / "memories.sqlite3"
ns = sys.argv[2]
now, before = Store(path), Before(path)
t_now, t_before, same, n = [], [], 0, 0
for step, q in enumerate(questions(int(sys.argv[3]))):
    words = search.query_words(q)
    ts = text.now().timestamp()
    now.text_search(ns, words, 60, ts)
    before.text_search(ns, words, 60, ts)  # counts cached
    order = [(now, t_now), (before, t_before)] if step % 2 else [(before, t_before), (now, t_now)]
    got = {}
    for st, acc in order:
        t0 = time.perf_counter()
        got[id(st)] = st.text_search(ns, words, 60, ts)
        acc.append((time.perf_counter() - t0) * 1000)
    n += 1
    same += got[id(now)] == got[id(before)]
ratio = statistics.median(a / b for a, b in zip(t_now, t_before, strict=True))
print(f"text_search now: median {statistics.median(t_now):.2f} ms, p95 {pct(t_now, 95):.2f} ms")
print(f"join first: median {statistics.median(t_before):.2f} ms, p95 {pct(t_before, 95):.2f} ms")
print(f"median ratio now/join first {ratio:.3f}; identical (id, bm25) lists {same}/{n}")
