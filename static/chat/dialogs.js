// Dialogs, popovers and the phone drawer, by keyboard and pointer alike:
// - the sidebar opens as a drawer below 800 px (menu button), over a backdrop; Escape, the
//   backdrop or ✕ close it, focus moves into it and back to the button;
// - a <dialog open> swapped in by htmx (the memory detail) becomes modal: a backdrop,
//   Escape, a click outside closes it, focus returns to what opened it;
// - the <details> popovers (a chat's menu, "Save to memory", the memory status) close with
//   Escape or a click outside; opening one moves focus into it, and one that has no room
//   above its button opens below it.
(function () {
  var POPOVERS = "details.conv-menu, details.memory-save, details.memory-dashboard";
  var FOCUSABLE = 'a[href], button:not([disabled]), input:not([type="hidden"]):not([disabled]), select, textarea, [tabindex]:not([tabindex="-1"])';

  // --- the drawer ------------------------------------------------------------------------
  function drawerOpen() { return document.querySelector(".app.drawer-open") !== null; }
  function openDrawer() {
    var app = document.querySelector(".app");
    var sidebar = document.getElementById("sidebar");
    if (!app || !sidebar) return;
    app.classList.add("drawer-open");
    document.querySelector(".drawer-backdrop").hidden = false;
    document.querySelector("[data-drawer-open]").setAttribute("aria-expanded", "true");
    // Everything behind the drawer is out of reach while it is open (focus stays in it).
    document.querySelector(".main").inert = true;
    var first = sidebar.querySelector(FOCUSABLE);
    if (first) first.focus();
  }
  function closeDrawer() {
    var app = document.querySelector(".app");
    if (!app || !drawerOpen()) return;
    app.classList.remove("drawer-open");
    document.querySelector(".drawer-backdrop").hidden = true;
    document.querySelector(".main").inert = false;
    var button = document.querySelector("[data-drawer-open]");
    button.setAttribute("aria-expanded", "false");
    button.focus();
  }

  // --- popovers ------------------------------------------------------------------------
  function closePopover(details, giveFocusBack) {
    details.open = false;
    var summary = details.querySelector("summary");
    if (giveFocusBack && summary) summary.focus();
  }
  function placePopover(details) {
    var panel = details.querySelector(".memory-save-modal");
    if (!panel) return;
    details.classList.remove("open-below");
    var room = document.querySelector(".messages");
    var top = room ? room.getBoundingClientRect().top : 0;
    if (panel.getBoundingClientRect().top < top) details.classList.add("open-below");
  }
  document.addEventListener("toggle", function (event) {
    var details = event.target;
    if (!(details.matches && details.matches(POPOVERS)) || !details.open) return;
    document.querySelectorAll(POPOVERS).forEach(function (other) {
      if (other !== details && other.open) other.open = false;
    });
    placePopover(details);
    var field = details.querySelector('.menu input:not([type="hidden"]), .memory-save-modal select');
    if (field) field.focus();
  }, true);

  // A widget that refreshes itself (the memory status: at once, then with the server's
  // figures, then every 30 s) replaces its popover: one marked data-keep-open that the user
  // opened stays open. Others (a chat's menu) close with the answer to what was done in them.
  var reopen = null;
  document.addEventListener("htmx:beforeSwap", function (event) {
    var target = event.detail.target;
    var open = target && target.id && target.querySelector && target.querySelector("details[data-keep-open][open]");
    reopen = open ? target.id : null;
  });
  document.addEventListener("htmx:afterSwap", function () {
    var swapped = reopen && document.getElementById(reopen);
    var details = swapped && swapped.querySelector("details[data-keep-open]");
    if (details) details.open = true;
    reopen = null;
  });

  // --- modal dialogs swapped in by htmx ---------------------------------------------------
  var opener = null;
  document.addEventListener("htmx:beforeRequest", function (event) {
    opener = event.detail.elt;
  });
  document.addEventListener("htmx:afterSettle", function (event) {
    var target = event.detail.target;
    var dialog = target && target.querySelector && target.querySelector("dialog[open]");
    if (!dialog || dialog.dataset.modal === "1") return;
    var from = opener;
    dialog.dataset.modal = "1";
    dialog.close();
    dialog.showModal();
    dialog.addEventListener("close", function () {
      if (dialog.open) return; // the close() above, reported late: it is open, as a modal now
      dialog.remove();
      if (from && from.isConnected) from.focus();
    });
  });
  document.addEventListener("click", function (event) {
    // A click on a modal dialog itself, not its content, is a click on its backdrop.
    var target = event.target;
    if (target.tagName === "DIALOG" && target.open && target.dataset.modal === "1") {
      var box = target.getBoundingClientRect();
      var inside = event.clientX >= box.left && event.clientX <= box.right &&
        event.clientY >= box.top && event.clientY <= box.bottom;
      if (!inside) target.close();
    }
    if (target.closest && target.closest("[data-drawer-open]")) { openDrawer(); return; }
    if (target.closest && target.closest("[data-drawer-close]")) { closeDrawer(); return; }
    document.querySelectorAll(POPOVERS).forEach(function (details) {
      if (details.open && !details.contains(target)) closePopover(details, false);
    });
  });

  document.addEventListener("keydown", function (event) {
    if (event.key !== "Escape") return;
    var open = Array.prototype.filter.call(document.querySelectorAll(POPOVERS), function (d) {
      return d.open;
    });
    if (open.length) { open.forEach(function (d) { closePopover(d, true); }); event.preventDefault(); return; }
    if (document.querySelector("dialog[open]")) return; // the dialog's own Escape closes it
    if (drawerOpen()) closeDrawer();
  });
  // A link followed from the drawer (a chat, a search hit): the drawer closes behind it.
  window.addEventListener("pageshow", function () { if (drawerOpen()) closeDrawer(); });
})();
