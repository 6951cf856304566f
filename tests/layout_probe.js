// Measures a rendered report's layout in the page (tests/browser.rs injects it and reads the
// result from the dumped DOM): table cells clipped past the page with no scroller to reach
// them, cells squeezed to a word (or a few characters) per line, cells that wrap over many
// lines, and legends whose entries share a colour. Prints one JSON object into
// the pre element whose id is tracelens-layout.
(function () {
  "use strict";
  var problems = [];
  var viewport = document.documentElement.clientWidth;
  var headings = Array.prototype.slice.call(document.querySelectorAll("h2[id]"));
  function sectionOf(el) {
    var found = "";
    headings.forEach(function (h) {
      if (h.compareDocumentPosition(el) & Node.DOCUMENT_POSITION_FOLLOWING) found = h.id;
    });
    return found;
  }
  function scrollerOf(el) {
    for (var p = el.parentElement; p; p = p.parentElement) {
      var o = getComputedStyle(p).overflowX;
      if (o === "auto" || o === "scroll") return p;
    }
    return null;
  }
  // Lines of text in an element: the distinct tops of its text's line boxes.
  function linesOf(el) {
    var range = document.createRange();
    range.selectNodeContents(el);
    var tops = {};
    Array.prototype.forEach.call(range.getClientRects(), function (r) {
      if (r.width > 0 && r.height > 0) tops[Math.round(r.top)] = true;
    });
    return Object.keys(tops).length;
  }
  function add(kind, el, detail) {
    var text = (el.innerText || el.textContent || "").trim().replace(/\s+/g, " ");
    problems.push({
      kind: kind,
      section: sectionOf(el),
      text: text.slice(0, 60),
      detail: detail
    });
  }
  document.querySelectorAll("td, th").forEach(function (cell) {
    var rect = cell.getBoundingClientRect();
    if (rect.width === 0 || rect.height === 0) return;
    var text = (cell.innerText || "").trim();
    if (!text) return;
    var lines = linesOf(cell);
    var words = text.split(/\s+/).length;
    var width = Math.round(rect.width);
    // A word per line is squeezed when the words are short; a long path broken once is not.
    if (lines >= 3 && words >= 2 && lines >= words && text.length / lines < 16) {
      add("one word per line", cell, lines + " lines, " + words + " words, " + width + " px");
    } else if (lines >= 3 && text.length / lines < 12) {
      add("squeezed", cell, lines + " lines of " + Math.round(text.length / lines) + " characters, " + width + " px");
    } else if (lines > 4) {
      add("tall", cell, lines + " lines, " + width + " px");
    }
    if (rect.right > viewport + 1 && !scrollerOf(cell)) {
      add("clipped", cell, "right edge " + Math.round(rect.right) + " px past the page's " + viewport + " px");
    }
    if (getComputedStyle(cell).overflowX === "hidden" && cell.scrollWidth > cell.clientWidth + 1) {
      add("clipped", cell, "content " + cell.scrollWidth + " px in a " + cell.clientWidth + " px cell");
    }
  });
  // A legend says which colour is which: two entries of one colour say nothing.
  document.querySelectorAll(".legend").forEach(function (legend) {
    var seen = {};
    Array.prototype.forEach.call(legend.children, function (entry) {
      var colour = getComputedStyle(entry, "::before").backgroundColor;
      if (!colour || colour === "rgba(0, 0, 0, 0)") return;
      var label = (entry.textContent || "").trim();
      if (seen[colour] !== undefined) {
        add("shared legend colour", entry, label + " and " + seen[colour] + " are both " + colour);
      } else {
        seen[colour] = label;
      }
    });
  });
  var out = document.createElement("pre");
  out.id = "tracelens-layout";
  out.textContent = JSON.stringify({ viewport: viewport, problems: problems });
  document.body.appendChild(out);
})();
