/*
 * searchcrawl's search box for portals (issue 59; docs/web-application.md, "A search box for
 * portals"). A portal page includes it where the box should be, or names where it goes:
 *
 *   <div id="box"></div>
 *   <script src="https://search.example/static/searchbox.js" data-target="#box"></script>
 *
 * It adds a plain search form that GETs the search page of the application it came from (the
 * script's own URL, without /static/searchbox.js), so the searcher sees their own trimmed
 * results there, signed in or not: the portal needs no token and sees no result. Options, as
 * attributes of the script element: data-target (a CSS selector; none: right after the script),
 * data-placeholder, data-button (the button's text), data-label (the field's accessible name),
 * data-new-window ("true": results in a new tab). Built with DOM methods only: no innerHTML, no
 * eval, no inline style, nothing fetched, no cookie read; nothing of the portal's page is read
 * but the target element.
 */
(function () {
  "use strict";
  var script = document.currentScript;
  if (!script || !script.src) {
    return;
  }
  var data = script.dataset || {};
  var action = new URL("../", script.src).href; // .../static/searchbox.js -> the application's root

  function text(value, fallback) {
    return typeof value === "string" && value.trim() !== "" ? value.trim().slice(0, 200) : fallback;
  }

  function build() {
    var form = document.createElement("form");
    form.setAttribute("method", "get");
    form.setAttribute("action", action);
    form.setAttribute("role", "search");
    form.className = "searchcrawl-box";
    if (data.newWindow === "true") {
      form.setAttribute("target", "_blank");
      form.setAttribute("rel", "noopener");
    }
    var input = document.createElement("input");
    input.setAttribute("type", "search");
    input.setAttribute("name", "q");
    input.setAttribute("maxlength", "1000");
    input.setAttribute("required", "");
    input.setAttribute("aria-label", text(data.label, "Search"));
    input.setAttribute("placeholder", text(data.placeholder, "Search"));
    input.className = "searchcrawl-box-query";
    var button = document.createElement("button");
    button.setAttribute("type", "submit");
    button.className = "searchcrawl-box-button";
    button.appendChild(document.createTextNode(text(data.button, "Search")));
    form.appendChild(input);
    form.appendChild(button);
    return form;
  }

  function place() {
    var target = null;
    if (data.target) {
      try {
        target = document.querySelector(data.target);
      } catch (error) {
        target = null; // not a selector
      }
    }
    var form = build();
    if (target) {
      target.appendChild(form);
    } else if (script.parentNode) {
      script.parentNode.insertBefore(form, script.nextSibling);
    }
  }

  if (document.readyState === "loading" && data.target) {
    document.addEventListener("DOMContentLoaded", place);
  } else {
    place();
  }
})();
