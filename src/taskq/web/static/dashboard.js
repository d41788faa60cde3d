// taskq dashboard: every behaviour of the pages, here and not inline (the pages' CSP is
// script-src 'self'). Elements ask for a behaviour with data- attributes:
//   data-live             refreshed by htmx (hx-trigger "every Ns"); the refresh is
//                         skipped while rows are selected or a field has the focus
//   data-select-all       a checkbox that checks every row checkbox of its table
//   data-confirm="..."    a submit button that asks first; {selected} is the number of
//                         rows checked, {count} the button's data-count
//   data-copy="..."       a button that copies its value to the clipboard
"use strict";

(function () {
  function selectedRows() {
    return document.querySelectorAll("input[data-row]:checked").length;
  }

  function busy() {
    const active = document.activeElement;
    const typing = active && ["INPUT", "SELECT", "TEXTAREA"].includes(active.tagName);
    return typing || selectedRows() > 0;
  }

  document.addEventListener("htmx:beforeRequest", function (event) {
    const elt = event.detail && event.detail.elt;
    if (elt && elt.hasAttribute("data-live") && busy()) {
      event.preventDefault();
    }
  });

  document.addEventListener("change", function (event) {
    const box = event.target;
    if (!(box instanceof HTMLInputElement) || !box.hasAttribute("data-select-all")) return;
    const table = box.closest("table");
    if (!table) return;
    table.querySelectorAll("input[data-row]").forEach(function (row) {
      row.checked = box.checked;
    });
  });

  document.addEventListener("submit", function (event) {
    const button = event.submitter;
    if (!button || !button.hasAttribute("data-confirm")) return;
    const selected = selectedRows();
    if (button.hasAttribute("data-needs-selection") && selected === 0) {
      event.preventDefault();
      window.alert("Select at least one job first.");
      return;
    }
    const question = button
      .getAttribute("data-confirm")
      .replace("{selected}", String(selected))
      .replace("{count}", button.getAttribute("data-count") || "");
    if (!window.confirm(question)) event.preventDefault();
  });

  document.addEventListener("click", function (event) {
    const target = event.target instanceof Element ? event.target.closest("[data-copy]") : null;
    if (!target) return;
    event.preventDefault();
    const text = target.getAttribute("data-copy") || "";
    const done = function () {
      target.classList.add("copied");
      window.setTimeout(function () { target.classList.remove("copied"); }, 1200);
    };
    if (navigator.clipboard && window.isSecureContext) {
      navigator.clipboard.writeText(text).then(done, function () {});
    } else {  // plain HTTP on another host: select it for Ctrl-C
      const range = document.createRange();
      range.selectNodeContents(target);
      const selection = window.getSelection();
      if (selection) { selection.removeAllRanges(); selection.addRange(range); }
    }
  });
})();
