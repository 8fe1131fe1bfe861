// Composer behaviour: Enter sends, Shift+Enter adds a line; the box clears once sent;
// the message list follows the answer as it streams.
(function () {
  function composer() { return document.getElementById("composer"); }

  document.addEventListener("keydown", function (event) {
    var input = event.target;
    if (input.id !== "composer-input" || event.key !== "Enter") return;
    if (event.shiftKey || event.isComposing) return;
    event.preventDefault();
    if (input.value.trim() === "") return;
    if (document.querySelector('#turn-state[data-busy="1"]')) return;
    composer().requestSubmit();
  });

  document.addEventListener("input", function (event) {
    if (event.target.id !== "composer-input") return;
    var box = event.target;
    box.style.height = "auto";
    box.style.height = Math.min(box.scrollHeight, 224) + "px";
  });

  // ws-send: refuse empty messages, clear the box once the message is on its way.
  document.addEventListener("htmx:wsConfigSend", function (event) {
    var form = event.target.closest && event.target.closest("form");
    if (!form || form.id !== "composer") return;
    var content = (event.detail.parameters.content || "").trim();
    if (content === "") { event.preventDefault(); return; }
    document.getElementById("composer-errors").textContent = "";
  });
  var unanswered = null; // the message sent last, until the socket says anything back
  document.addEventListener("htmx:wsAfterSend", function (event) {
    var form = event.target.closest && event.target.closest("form");
    if (form && form.id === "composer") {
      var input = document.getElementById("composer-input");
      unanswered = input.value;
      input.value = "";
      input.style.height = "auto";
      scrollToEnd(true); // one's own message: back to the end, and follow the answer
    }
  });

  // Following the end: true while the reader is at the end of the list (as of their last
  // scroll, not of the last frame: one long message pushes the end far down at once).
  var following = true;
  var ownTop = -1; // where our own last scroll put the list: its scroll event is not the reader's
  function scrollToEnd(force) {
    var list = document.getElementById("messages");
    if (!list) return;
    if (force) following = true;
    if (!following) return;
    list.scrollTop = list.scrollHeight;
    ownTop = list.scrollTop;
  }
  document.addEventListener("scroll", function (event) {
    var list = event.target;
    if (list.id !== "messages" || list.scrollTop === ownTop) return;
    following = list.scrollHeight - list.scrollTop - list.clientHeight < 160;
  }, true);
  document.addEventListener("htmx:wsAfterMessage", function () {
    unanswered = null;
    scrollToEnd(false);
  });

  // The page's socket, when it closes abnormally, is opened again, with a growing pause,
  // by htmx's ws extension: after 1006 (a refused handshake among them: the database is
  // away, core/errors.py), 1011, 1012 and 1013. The app's 4503 (the database went
  // away while the socket was open) is not one of its codes: it is opened again here, and
  // refused until the database is back. Meanwhile the page says it is reconnecting.
  var DATABASE_AWAY = 4503;
  var RECONNECTED_BY_HTMX = [1006, 1011, 1012, 1013];
  function reconnecting(shown) {
    var notice = document.getElementById("reconnecting");
    if (notice) notice.hidden = !shown;
  }
  document.addEventListener("htmx:wsClose", function (event) {
    var code = event.detail.event.code;
    if (code === DATABASE_AWAY) {
      giveBackUnanswered();
      setTimeout(event.detail.socketWrapper.reconnect, Math.random() * 1000);
    } else if (RECONNECTED_BY_HTMX.indexOf(code) < 0) {
      return;
    }
    reconnecting(true);
  });
  document.addEventListener("htmx:wsOpen", function () { reconnecting(false); });

  // Closed with 4503 before the socket said anything back, the consumer could not save
  // the message sent last: it goes back in the box, to be sent again.
  function giveBackUnanswered() {
    var input = document.getElementById("composer-input");
    if (unanswered && input && input.value === "") input.value = unanswered;
    unanswered = null;
  }

  // A form marked data-swap-invalid gets its 400 or 429 answer (itself, with the errors) swapped
  // in place. htmx leaves 4xx unswapped, and django-htmx's debug script (a document
  // listener) would put the response in place of the whole page: body listeners run first.
  function refusedForm(event) {
    // The element that asked: beforeSwap fires on the target, which may hold the form.
    var elt = (event.detail.requestConfig && event.detail.requestConfig.elt) || event.detail.elt;
    var status = event.detail.xhr.status;
    if (sharedOut(event.detail.xhr)) return false;
    return (status === 400 || status === 429) && elt && elt.closest && elt.closest("[data-swap-invalid]");
  }
  // A 429 from the web process's fair shares (ikario_clone/fair_shares.py), before any view:
  // not the form's answer, a toast with the words its HX-Trigger carries.
  function sharedOut(xhr) {
    return xhr.status === 429 && /tooManyRequests/.test(xhr.getResponseHeader("HX-Trigger") || "");
  }
  document.body.addEventListener("tooManyRequests", function (event) {
    var toasts = document.getElementById("toasts");
    if (!toasts || !event.detail || !event.detail.text) return;
    var toast = document.createElement("p");
    toast.className = "toast";
    toast.textContent = event.detail.text;
    toasts.appendChild(toast);
  });
  document.body.addEventListener("htmx:beforeOnLoad", function (event) {
    if (refusedForm(event)) event.stopPropagation();
  });
  document.body.addEventListener("htmx:beforeSwap", function (event) {
    if (!refusedForm(event)) return;
    event.detail.shouldSwap = true;
    event.detail.isError = false;
  });
  // Opened at a message (a search hit's #message-N): bring it into view and make it glow.
  function showLinkedMessage() {
    var match = /^#message-\d+$/.exec(location.hash);
    var found = match && document.getElementById(location.hash.slice(1));
    if (!found) return false;
    found.classList.remove("found");
    void found.offsetWidth; // restart the animation when the same hit is opened again
    found.classList.add("found");
    found.scrollIntoView({ block: "center" });
    return true;
  }
  window.addEventListener("hashchange", showLinkedMessage);
  // The open chat was deleted (chat/views.py): a new chat takes its place in the history.
  document.body.addEventListener("chatDeleted", function (event) {
    location.replace(event.detail.to);
  });
  // A toast (#toasts) fades out by itself (chat.css); then it goes.
  document.addEventListener("animationend", function (event) {
    if (event.animationName === "toast-life") event.target.remove();
  });
  document.addEventListener("DOMContentLoaded", function () {
    if (!showLinkedMessage()) scrollToEnd(true);
  });
})();
