// Suggestions while typing on the search page (searchcrawl/search/suggestions.py, GET /suggest).
// No framework, no inline script, no eval, no innerHTML: every suggestion is text put into the
// page with textContent. The search box is an ARIA combobox with a listbox of options: up and
// down move through them, Enter searches the one chosen, Escape closes the list. Without this
// script the search page is the same plain form.
"use strict";
(() => {
  const form = document.querySelector("form.searchbox[data-suggest]");
  const input = form && form.querySelector("input[name=q]");
  if (!input || !window.fetch) {
    return;
  }
  const endpoint = form.getAttribute("data-suggest");
  const WAIT_MS = 150; // typing pauses this long before asking
  // the words are the page's, in its language (search.html's data-suggest-* attributes)
  const KINDS = {
    title: form.getAttribute("data-suggest-title") || "title",
    query: form.getAttribute("data-suggest-search") || "search",
  };
  const list = document.createElement("ul");
  list.id = "suggestions";
  list.className = "suggestions";
  list.setAttribute("role", "listbox");
  list.setAttribute("aria-label", form.getAttribute("data-suggest-label") || "Suggestions");
  list.hidden = true;
  input.insertAdjacentElement("afterend", list);
  input.setAttribute("role", "combobox");
  input.setAttribute("aria-autocomplete", "list");
  input.setAttribute("aria-controls", list.id);
  input.setAttribute("aria-expanded", "false");
  input.setAttribute("autocomplete", "off");

  let timer = 0;
  let asking = null; // the AbortController of the request under way
  let options = [];
  let active = -1;

  function close() {
    list.hidden = true;
    list.replaceChildren();
    options = [];
    active = -1;
    input.setAttribute("aria-expanded", "false");
    input.removeAttribute("aria-activedescendant");
  }

  function mark(index) {
    active = index;
    options.forEach((option, number) => option.setAttribute("aria-selected", number === index ? "true" : "false"));
    if (index >= 0) {
      input.setAttribute("aria-activedescendant", options[index].id);
    } else {
      input.removeAttribute("aria-activedescendant");
    }
  }

  function choose(index) {
    const option = options[index];
    if (!option) {
      return;
    }
    input.value = option.dataset.text;
    close();
    if (form.requestSubmit) {
      form.requestSubmit();
    } else {
      form.submit();
    }
  }

  // ``text`` into ``element`` as text nodes, the beginnings of its words that a word typed
  // begins with in <strong> (case ignored)
  function emphasised(element, text, typed) {
    const words = typed.split(/\s+/).filter((word) => word).map((word) => word.replace(/[.*+?^${}()|[\]\\]/g, "\\$&"));
    let pattern = null;
    try {
      pattern = words.length ? new RegExp("(^|[^\\p{L}\\p{N}])(" + words.join("|") + ")", "giu") : null;
    } catch (error) {
      pattern = null;
    }
    let last = 0;
    for (const match of pattern ? text.matchAll(pattern) : []) {
      const start = match.index + match[1].length;
      if (!match[2] || start < last) {
        continue;
      }
      element.append(document.createTextNode(text.slice(last, start)));
      const strong = document.createElement("strong");
      strong.textContent = match[2];
      element.append(strong);
      last = start + match[2].length;
    }
    element.append(document.createTextNode(text.slice(last)));
  }

  function show(suggestions, typed) {
    close();
    suggestions.slice(0, 10).forEach((suggestion, number) => {
      if (typeof suggestion.text !== "string" || !suggestion.text) {
        return;
      }
      const option = document.createElement("li");
      option.id = "suggestion-" + number;
      option.setAttribute("role", "option");
      option.setAttribute("aria-selected", "false");
      option.dataset.text = suggestion.text;
      option.dataset.kind = suggestion.kind === "title" ? "title" : "query";
      const text = document.createElement("span");
      text.className = "text";
      emphasised(text, suggestion.text, typed);
      const kind = document.createElement("span");
      kind.className = "kind";
      kind.textContent = KINDS[option.dataset.kind];
      option.append(text, kind);
      // mousedown, not click: the search box keeps the focus (its blur would close the list first)
      option.addEventListener("mousedown", (event) => {
        event.preventDefault();
        choose(options.indexOf(option));
      });
      options.push(option);
      list.append(option);
    });
    if (options.length) {
      list.hidden = false;
      input.setAttribute("aria-expanded", "true");
    }
  }

  function ask() {
    const typed = input.value;
    if (asking) {
      asking.abort();
    }
    if (!typed.trim()) {
      close();
      return;
    }
    asking = new AbortController();
    fetch(endpoint + "?q=" + encodeURIComponent(typed), {
      signal: asking.signal,
      credentials: "same-origin",
      headers: { accept: "application/json" },
    })
      .then((answer) => (answer.ok ? answer.json() : null))
      .then((data) => {
        if (data && Array.isArray(data.suggestions) && input.value === typed && document.activeElement === input) {
          show(data.suggestions, typed);
        }
      })
      .catch(() => {}); // aborted by the next keystroke, or no answer: no suggestions
  }

  input.addEventListener("input", () => {
    window.clearTimeout(timer);
    timer = window.setTimeout(ask, WAIT_MS);
  });
  input.addEventListener("keydown", (event) => {
    if (event.key === "ArrowDown" || event.key === "ArrowUp") {
      if (!options.length) {
        return;
      }
      event.preventDefault();
      // through the options and back to the text typed (-1)
      let next = active + (event.key === "ArrowDown" ? 1 : -1);
      if (next >= options.length) {
        next = -1;
      } else if (next < -1) {
        next = options.length - 1;
      }
      mark(next);
    } else if (event.key === "Enter" && active >= 0) {
      event.preventDefault();
      choose(active);
    } else if (event.key === "Escape" && options.length) {
      event.preventDefault();
      close();
    }
  });
  input.addEventListener("blur", close);
  form.addEventListener("submit", () => {
    window.clearTimeout(timer);
    if (asking) {
      asking.abort();
    }
  });
})();
