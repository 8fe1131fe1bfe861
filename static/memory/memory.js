// The memory page: what its socket says changed (memory/web/consumers.py lands it in the hidden
// #memory-live once htmx has processed it) is put in its place in the list.
(function () {
  function busy(card) {
    // A card this tab is editing, or waiting on (its own delete or save), is left alone.
    return card.querySelector("form, .htmx-request") || card.classList.contains("htmx-request");
  }

  function placeLiveChanges() {
    var live = document.getElementById("memory-live");
    var list = document.getElementById("memory-list");
    if (!live || !list || !live.firstElementChild) return;
    live.querySelectorAll("[data-live]").forEach(function (item) {
      var what = item.dataset.live;
      if (what === "reload") {
        htmx.trigger(document.body, "memory-list-changed");
        return;
      }
      var card = item.querySelector("article.memory-card");
      var id = item.dataset.memoryId || (card && card.dataset.memoryId);
      // The list's own card (the one in #memory-live has the same id, so look in the list).
      var here = id && list.querySelector('[id="memory-' + id.replace(/["\\]/g, "") + '"]');
      var shown = here && here.matches("article.memory-card") && !busy(here);
      if (what === "removed") {
        if (shown) here.remove();
        return;
      }
      if (what === "added" && !here) {
        var empty = document.getElementById("memory-empty");
        if (empty) empty.remove();
        card.classList.add("memory-new");
        list.prepend(card);
        htmx.process(card);
      } else if (what === "updated" && shown) {
        here.replaceWith(card);
        htmx.process(card);
      }
    });
    live.replaceChildren();
  }

  document.addEventListener("htmx:wsAfterMessage", placeLiveChanges);
})();

// Forget a topic: a preview is for the topic it was asked for. Once the topic field says
// something else, the preview goes and its ids are not sent (disabled), so Enter asks for
// the new topic's preview instead of confirming the old one (the server checks it too).
(function () {
  function followTopic(event) {
    if (event.target.id !== "forget-topic") return;
    var preview = document.getElementById("forget-preview");
    var show = document.getElementById("forget-show");
    if (!preview || !show) return;
    var stale = event.target.value.trim() !== preview.dataset.topic;
    preview.hidden = stale;
    preview.querySelectorAll("input, button").forEach(function (field) {
      field.disabled = stale;
    });
    show.hidden = !stale;
  }

  document.addEventListener("input", followTopic);
})();

// The retrieval sliders: each shows its value while it moves (it saves when let go).
document.addEventListener("input", function (event) {
  var slider = event.target;
  if (!slider.closest || !slider.closest(".memory-recall-sliders") || slider.type !== "range") return;
  var shown = document.getElementById(slider.id + "-value");
  if (shown) shown.value = slider.value;
});

// An upload's progress (the history import's form): htmx reports the bytes sent so far.
document.addEventListener("htmx:xhr:progress", function (event) {
  var form = event.target.closest && event.target.closest("form");
  var bar = form && form.querySelector("progress.upload-progress");
  if (!bar || !event.detail.lengthComputable) return;
  bar.hidden = false;
  bar.value = Math.round((100 * event.detail.loaded) / event.detail.total);
});
