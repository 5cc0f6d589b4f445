// kitsoki web: the page's script. It builds the document from the
// server's JSON with text nodes and a few checked attributes only; no
// string a story or an agent wrote is ever parsed as markup. The home
// page (/) lists the stories and their sessions; the session page
// (/s/ID) follows the session's event stream (entries, status, calls).
(function () {
  "use strict";

  var TOKEN = document.querySelector('meta[name="kitsoki-token"]').content;
  var app = document.getElementById("app");

  // ---- small helpers ----------------------------------------------------

  // el makes an element. props: className, text, and a fixed set of
  // properties and attributes (never innerHTML, never an event handler
  // attribute); kids: nodes or strings (as text).
  function el(tag, props, kids) {
    var e = document.createElement(tag);
    props = props || {};
    Object.keys(props).forEach(function (k) {
      var v = props[k];
      if (v === undefined || v === null || v === false) return;
      switch (k) {
        case "className": e.className = v; break;
        case "text": e.textContent = String(v); break;
        case "value": e.value = String(v); break;
        case "checked": case "disabled": case "required": case "readOnly": case "selected": e[k] = !!v; break;
        case "href": e.setAttribute("href", safeHref(v)); break;
        case "onclick": case "onsubmit": case "oninput": case "onkeydown": case "onchange":
          e.addEventListener(k.slice(2), v); break;
        default:
          if (!/^(id|type|name|placeholder|title|src|alt|min|max|step|for|role|tabindex|rel|target|loading|aria-[a-z]+|data-[a-z-]+)$/.test(k)) {
            throw new Error("el: attribute " + k + " is not allowed");
          }
          e.setAttribute(k, String(v));
      }
    });
    (kids || []).forEach(function (c) {
      if (c === null || c === undefined || c === false) return;
      e.appendChild(typeof c === "string" ? document.createTextNode(c) : c);
    });
    return e;
  }

  // safeHref lets through links of our own (a path) and http(s) links;
  // anything else (javascript:, data:, …) becomes "#".
  function safeHref(h) {
    h = String(h);
    if (/^\/(?!\/)/.test(h)) return h;
    if (/^https?:\/\//i.test(h)) return h;
    return "#";
  }

  function clear(node) { while (node.firstChild) node.removeChild(node.firstChild); }

  // api calls the server; a request that changes something carries the
  // token header. It resolves to {ok, status, data}.
  function api(method, path, body) {
    var opts = { method: method, headers: { "X-Kitsoki-Token": TOKEN }, credentials: "same-origin" };
    if (body !== undefined) {
      opts.headers["Content-Type"] = "application/json";
      opts.body = JSON.stringify(body);
    }
    return fetch(path, opts).then(function (r) {
      return r.json().catch(function () { return {}; }).then(function (d) { return { ok: r.ok, status: r.status, data: d }; });
    });
  }

  function show(node) { clear(app); app.appendChild(node); }

  function ago(ms) {
    var s = Math.max(0, Math.round(ms / 100) / 10);
    return s < 60 ? s.toFixed(1) + " s" : Math.floor(s / 60) + " min " + Math.round(s % 60) + " s";
  }

  function json(v) { return typeof v === "string" ? JSON.stringify(v) : JSON.stringify(v, null, 2); }

  // ---- home page --------------------------------------------------------

  function homePage() {
    document.getElementById("crumb").textContent = "stories";
    api("GET", "/api/stories").then(function (r) {
      if (!r.ok) { show(el("p", { className: "banner bad", text: r.data.error || "could not list the stories" })); return; }
      var list = el("div", { className: "cards" });
      r.data.stories.forEach(function (s) { list.appendChild(storyCard(s)); });
      if (!r.data.stories.length) list.appendChild(el("p", { className: "dim", text: "No story is served: give kitsoki web a story directory." }));
      show(el("section", { className: "home" }, [el("h1", { text: "Stories" }), list]));
      document.body.dataset.ready = "home";
    });
  }

  function storyCard(s) {
    var start = el("button", { type: "button", className: "primary", text: "Start a session", "data-start": s.key, disabled: !!s.error,
      onclick: function () {
        start.disabled = true;
        api("POST", "/api/sessions", { story: s.key }).then(function (r) {
          if (r.ok) location.assign("/s/" + encodeURIComponent(r.data.id));
          else { start.disabled = false; card.appendChild(el("p", { className: "banner bad", text: r.data.error })); }
        });
      } });
    var card = el("article", { className: "card", "data-story": s.key }, [
      el("h2", { text: s.title }),
      el("p", { className: "dim mono", text: (s.app_id ? s.app_id + (s.version ? " " + s.version : "") + " · " : "") + s.file }),
      s.error ? el("p", { className: "banner bad", text: s.error }) : null,
      start,
    ]);
    if (s.sessions.length) card.appendChild(sessionTable(s.sessions));
    return card;
  }

  function sessionTable(rows) {
    var body = el("tbody");
    rows.forEach(function (m) {
      var fork = el("button", { type: "button", text: "Fork", title: "a new session from turn " + m.turn, "data-fork": m.id,
        onclick: function () { forkSession(m.id, m.turn, fork); } });
      var del = el("button", { type: "button", text: "Delete", title: "delete this session and its journal", "data-delete": m.id,
        onclick: function () { deleteSession(m.id, del); } });
      body.appendChild(el("tr", { "data-session": m.id }, [
        el("td", {}, [el("a", { href: "/s/" + encodeURIComponent(m.id), text: m.id })]),
        el("td", { text: m.state || "–" }),
        el("td", { text: String(m.turn) }),
        el("td", { text: m.finished ? "finished" + (m.exit ? " (" + m.exit + ")" : "") : (m.live ? "open" : "resumable") }),
        el("td", { text: new Date(m.updated).toLocaleString() }),
        el("td", {}, [fork, " ", del]),
      ]));
    });
    return el("table", { className: "sessions" }, [
      el("thead", {}, [el("tr", {}, ["session", "state", "turn", "status", "last activity", ""].map(function (h) { return el("th", { text: h }); }))]),
      body,
    ]);
  }

  function forkSession(id, at, button) {
    if (button) button.disabled = true;
    return api("POST", "/api/sessions/" + encodeURIComponent(id) + "/fork", { at: at }).then(function (r) {
      if (r.ok) { location.assign("/s/" + encodeURIComponent(r.data.id)); return; }
      if (button) button.disabled = false;
      alertLine(r.data.error || "the fork failed");
    });
  }

  // deleteSession deletes a session (the server lets go of it first) and
  // lists the stories again.
  function deleteSession(id, button) {
    button.disabled = true;
    return api("DELETE", "/api/sessions/" + encodeURIComponent(id)).then(function (r) {
      if (r.ok) { homePage(); return; }
      button.disabled = false;
      alertLine(r.data.error || "the delete failed");
    });
  }

  // ---- session page -----------------------------------------------------

  // The session page's parts, filled by the event stream.
  var S = null;

  function sessionPage(id) {
    S = { id: id, entries: [], status: null, calls: { calls: [] }, openForm: null, pane: "diagram", traceLoaded: false, evalShown: "" };
    var base = "/api/sessions/" + encodeURIComponent(id);
    S.base = base;
    document.getElementById("crumb").textContent = "session " + id;
    S.head = el("div", { className: "statebar", id: "statebar" });
    S.alert = el("div", { id: "alert", role: "alert" });
    S.transcript = el("ol", { id: "transcript", "aria-label": "transcript", "aria-live": "polite" });
    S.callsBox = el("div", { id: "calls", "aria-live": "polite" });
    S.view = el("div", { id: "view", "aria-label": "view" });
    S.intents = el("div", { id: "intents", "aria-label": "intents" });
    S.line = el("input", { id: "line", type: "text", name: "line", placeholder: "Type an intent or say something", "aria-label": "input line" });
    S.say = el("form", { id: "say", onsubmit: function (ev) { ev.preventDefault(); sendText(); } }, [S.line, el("button", { type: "submit", text: "Send" })]);
    S.controls = el("fieldset", { id: "controls", className: "controls" }, [S.view, S.intents, S.say]);
    var play = el("section", { className: "play", "aria-label": "play" }, [S.head, S.alert, S.transcript, S.callsBox, S.controls]);
    show(el("div", { className: "session" }, [play, panes()]));
    document.addEventListener("keydown", globalKeys);
    S.tick = setInterval(renderCalls, 250);

    var es = new EventSource(base + "/events");
    S.es = es;
    es.addEventListener("entries", function (e) { onEntries(JSON.parse(e.data)); });
    es.addEventListener("status", function (e) { onStatus(JSON.parse(e.data)); });
    es.addEventListener("calls", function (e) { S.calls = JSON.parse(e.data); renderCalls(); renderControls(); });
    es.onopen = function () { document.getElementById("conn").textContent = "● live"; };
    es.onerror = function () { document.getElementById("conn").textContent = "○ reconnecting…"; };
  }

  function globalKeys(ev) {
    var t = ev.target;
    var typing = t && (t.tagName === "INPUT" || t.tagName === "TEXTAREA" || t.tagName === "SELECT");
    if (ev.key === "/" && !typing) { ev.preventDefault(); S.line.focus(); }
    if (ev.key === "Escape" && S.openForm) { closeSlotForm(); }
  }

  function alertLine(text) {
    if (!S) { window.alert(text); return; }
    clear(S.alert);
    if (text) S.alert.appendChild(el("p", { className: "banner bad", text: text }));
  }

  // send posts an input; the result comes back on the event stream.
  function send(body) {
    alertLine("");
    return api("POST", S.base + "/input", body).then(function (r) {
      if (!r.ok) alertLine(r.data.error || "the input was refused");
      return r.ok;
    });
  }

  function sendText() {
    var text = S.line.value.trim();
    if (!text) return;
    send({ text: text }).then(function (ok) { if (ok) S.line.value = ""; });
  }

  function sendIntent(name, slots) { return send({ intent: name, slots: slots || {} }); }

  // ---- transcript -------------------------------------------------------

  function onEntries(m) {
    if (m.reset) { S.entries = []; clear(S.transcript); }
    // Entries from index m.from on: drop any the page has past it.
    while (S.entries.length > m.from) { S.entries.pop(); S.transcript.removeChild(S.transcript.lastChild); }
    m.entries.forEach(function (e) { S.entries.push(e); S.transcript.appendChild(entryNode(e)); });
    S.transcript.scrollTop = S.transcript.scrollHeight;
    document.body.dataset.entries = String(S.entries.length);
  }

  function entryNode(e) {
    var kids = [];
    if (e.kind === "input") kids.push(el("span", { className: "who", text: "› " }));
    kids.push(el("span", { className: "text", text: e.text }));
    if (e.note) kids.push(el("span", { className: "note", text: e.kind === "rejected" ? "hint: " + e.note : e.note }));
    return el("li", { className: "entry " + e.kind, "data-kind": e.kind, "data-turn": String(e.turn) }, kids);
  }

  // ---- status -----------------------------------------------------------

  function onStatus(st) {
    var first = !S.status;
    S.status = st;
    renderHead();
    renderView();
    renderIntents();
    renderPanes(first);
    renderControls();
    document.body.dataset.state = st.state || "";
    document.body.dataset.turn = String(st.turn);
    document.body.dataset.ready = "session";
  }

  function renderHead() {
    var st = S.status;
    clear(S.head);
    S.head.appendChild(el("h1", {}, [
      el("span", { className: "story", text: st.story.title }),
      el("span", { className: "state", id: "state", text: st.state || "…" }),
    ]));
    if (st.description) S.head.appendChild(el("p", { className: "desc", text: st.description }));
    var meta = ["turn " + st.turn];
    if (st.done) meta.push(st.exit ? "ended at exit " + st.exit : "ended");
    if (st.forked_from) meta.push("forked from " + st.forked_from + " at turn " + st.forked_at);
    S.head.appendChild(el("p", { className: "dim" }, [meta.join(" · ")]));
    if (st.failed) S.head.appendChild(el("p", { className: "banner bad", id: "failed", text: st.failed }));
    if (st.read_only) S.head.appendChild(el("p", { className: "banner", id: "readonly", text: st.read_only }));
    var at = el("input", { type: "number", id: "fork-at", min: "0", max: String(st.turn), value: String(st.turn), "aria-label": "fork at turn" });
    var btn = el("button", { type: "button", id: "fork", text: "Fork",
      onclick: function () { forkSession(S.id, parseInt(at.value, 10), btn); } });
    if (!st.failed) S.head.appendChild(el("div", { className: "fork" }, [el("label", { for: "fork-at", text: "Fork at turn " }), at, btn]));
  }

  // renderControls enables the inputs when a turn can be taken.
  function renderControls() {
    var st = S.status;
    var off = !st || !!S.calls.busy || !!st.read_only || !!st.failed || st.done;
    S.controls.disabled = off;
    document.body.dataset.busy = S.calls.busy ? S.calls.busy : "";
  }

  // ---- the typed view ---------------------------------------------------

  function renderView() {
    var st = S.status;
    clear(S.view);
    if (st.view_error) S.view.appendChild(el("p", { className: "banner bad", text: "view: " + st.view_error }));
    st.view.forEach(function (v, i) { var n = viewNode(v, i); if (n) S.view.appendChild(n); });
  }

  var COLORS = ["red", "green", "yellow", "blue", "magenta", "cyan", "gray", "grey", "white", "black"];

  // viewNode renders one typed view element.
  function viewNode(v, i) {
    var cls = "el el-" + v.kind;
    switch (v.kind) {
      case "heading": return el("h3", { className: cls, text: v.body });
      case "prose": return el("p", { className: cls, text: v.body });
      case "banner":
        var c = COLORS.indexOf(String(v.color || "").toLowerCase()) >= 0 ? " color-" + v.color.toLowerCase() : "";
        return el("div", { className: cls + c, role: "note" }, [el("strong", { text: v.body }), v.subtitle ? el("div", { className: "sub", text: v.subtitle }) : null]);
      case "kv":
        var dl = el("dl", { className: cls });
        (v.pairs || []).forEach(function (p) { dl.appendChild(el("dt", { text: p.key })); dl.appendChild(el("dd", { text: p.value })); });
        return dl;
      case "list":
        return el("ul", { className: cls }, (v.items || []).map(function (it) {
          return el("li", {}, [el("span", { text: it.label }), it.hint ? el("span", { className: "hint", text: " " + it.hint }) : null]);
        }));
      case "code": return el("pre", { className: cls }, [el("code", { text: v.body })]);
      case "media": return mediaNode(v, cls);
      case "choice": return choiceNode(v, cls, i);
    }
    // template, base: the text as the terminal prints it, less the blank
    // lines around it; a blank one (an empty block of a base view) is
    // left out.
    var text = String(v.text || v.body || "").replace(/^(\s*\n)+/, "").replace(/\s+$/, "");
    return text ? el("pre", { className: cls + " text", text: text }) : null;
  }

  // mediaNode shows a media element: an image or video file the
  // server serves (m.src, a path of its own) as the element that plays
  // it; anything else as its caption and a link (http(s) only) or its
  // handle as text. Nothing is loaded from another site.
  function mediaNode(v, cls) {
    var m = v.media || {};
    var link = /^https?:\/\//i.test(m.handle) ? el("a", { href: m.handle, target: "_blank", rel: "noopener noreferrer", text: m.handle })
      : el("code", { text: m.handle });
    var player = null;
    var src = /^\/api\/sessions\//.test(m.src || "") ? m.src : "";
    if (src && m.kind === "image") player = el("img", { src: src, alt: m.caption || m.handle });
    if (src && m.kind === "video") {
      player = el("video", { src: src, title: m.caption || m.handle });
      player.controls = true;
      player.preload = "metadata";
    }
    return el("figure", { className: cls }, [
      el("span", { className: "tag", text: m.kind || "media" }),
      player,
      el("figcaption", { text: m.caption || m.handle }),
      link,
    ]);
  }

  // choiceNode renders a choice: single as buttons (an item with a param
  // as a one-field form), multi as checkboxes, form as a form.
  function choiceNode(v, cls, i) {
    var c = v.choice || {};
    var box = el("fieldset", { className: cls + " choice-" + c.mode, "data-choice": String(i) });
    if (c.prompt) box.appendChild(el("legend", { text: c.prompt }));
    if (c.mode === "single") (v.items || []).forEach(function (it) { box.appendChild(singleItem(it)); });
    if (c.mode === "multi") box.appendChild(multiForm(c, v.items || []));
    if (c.mode === "form") box.appendChild(fieldsForm(c));
    return box;
  }

  function singleItem(it) {
    var slots = Object.assign({}, it.slots || {});
    if (!it.param) {
      return el("div", { className: "item" }, [
        el("button", { type: "button", className: "pick", "data-intent": it.intent, text: it.label,
          onclick: function () { sendIntent(it.intent, slots); } }),
        it.hint ? el("span", { className: "hint", text: it.hint }) : null,
      ]);
    }
    var p = it.param;
    var input = fieldInput({ name: p.slot, type: p.type, placeholder: p.placeholder, required: p.required, values: p.values });
    return el("form", { className: "item param", "data-intent": it.intent, onsubmit: function (ev) {
      ev.preventDefault();
      slots[p.slot] = readField(input);
      sendIntent(it.intent, slots);
    } }, [input, el("button", { type: "submit", className: "pick", text: it.label }), it.hint ? el("span", { className: "hint", text: it.hint }) : null]);
  }

  function multiForm(c, items) {
    var boxes = [];
    var msg = el("span", { className: "hint" });
    var form = el("form", { className: "multi", onsubmit: function (ev) {
      ev.preventDefault();
      var vals = boxes.filter(function (b) { return b.checked; }).map(function (b) { return b.value; });
      if (vals.length < Math.max(c.min || 0, 1) || (c.max && vals.length > c.max)) {
        msg.textContent = "tick " + (c.max ? "between " + Math.max(c.min || 0, 1) + " and " + c.max : "at least " + Math.max(c.min || 0, 1));
        return;
      }
      var slots = {};
      slots[c.slot] = vals;
      sendIntent(c.intent, slots);
    } });
    items.forEach(function (it, j) {
      var cb = el("input", { type: "checkbox", id: "multi-" + c.slot + "-" + j, value: it.value });
      boxes.push(cb);
      form.appendChild(el("div", { className: "item" }, [cb, el("label", { for: cb.id, text: " " + it.label }), it.hint ? el("span", { className: "hint", text: " " + it.hint }) : null]));
    });
    form.appendChild(el("button", { type: "submit", className: "pick", text: "Send", "data-intent": c.intent }));
    form.appendChild(msg);
    return form;
  }

  // fieldsForm is a form choice: its template with the fields in their
  // {blanks}, fields the template does not place after it.
  function fieldsForm(c) {
    var inputs = {};
    var form = el("form", { className: "form", "data-intent": c.intent, onsubmit: function (ev) {
      ev.preventDefault();
      var slots = {};
      Object.keys(inputs).forEach(function (k) { var v = readField(inputs[k]); if (v !== "") slots[k] = v; });
      sendIntent(c.intent, slots);
    } });
    var fields = c.fields || [];
    fields.forEach(function (f) {
      inputs[f.name] = f.readonly ? null : fieldInput({ name: f.name, type: f.type, placeholder: f.placeholder || f.name, required: f.required,
        values: f.values, value: f.default, min: f.min, max: f.max, hint: f.hint });
    });
    Object.keys(inputs).forEach(function (k) { if (!inputs[k]) delete inputs[k]; });
    var placed = {};
    var line = el("p", { className: "template" });
    var parts = String(c.template || "").split(/(\{[A-Za-z_][A-Za-z0-9_]*\})/);
    parts.forEach(function (part) {
      var m = /^\{(.+)\}$/.exec(part);
      var f = m && fields.filter(function (x) { return x.name === m[1]; })[0];
      if (!f) { if (part && !m) line.appendChild(document.createTextNode(part)); return; }
      placed[f.name] = true;
      line.appendChild(f.readonly ? el("strong", { text: f.value || "" }) : inputs[f.name]);
    });
    if (c.template) form.appendChild(line);
    fields.forEach(function (f) {
      if (placed[f.name]) return;
      form.appendChild(el("label", { className: "field" }, [el("span", { text: f.name + (f.required ? " *" : "") }),
        f.readonly ? el("strong", { text: f.value || "" }) : inputs[f.name], f.hint ? el("span", { className: "hint", text: f.hint }) : null]));
    });
    form.appendChild(el("button", { type: "submit", className: "pick", text: c.intent }));
    return form;
  }

  // fieldInput is the input of one slot or field: a picker for an enum
  // (or any list of values), a number box, a checkbox for a bool, else a
  // text box.
  function fieldInput(f) {
    var label = f.name + (f.hint ? " — " + f.hint : "");
    if (f.values && f.values.length) {
      // An empty first choice: "choose" a required value, "(none)" for an
      // optional one without a default.
      var first = f.value ? [] : [el("option", { value: "", text: f.required ? "choose " + f.name : "(none)" })];
      return el("select", { name: f.name, "aria-label": label, required: f.required },
        first.concat(f.values.map(function (v) { return el("option", { value: v, text: v, selected: v === f.value }); })));
    }
    if (f.type === "bool") {
      return el("input", { type: "checkbox", name: f.name, "aria-label": label, checked: f.value === "true" });
    }
    var type = f.type === "int" || f.type === "float" || f.type === "number" ? "number" : "text";
    return el("input", { type: type, name: f.name, "aria-label": label, placeholder: f.placeholder || f.type || "", required: f.required,
      value: f.value, min: f.min, max: f.max, step: f.type === "float" || f.type === "number" ? "any" : null });
  }

  function readField(input) {
    if (input.type === "checkbox") return input.checked ? "true" : "false";
    return input.value;
  }

  // ---- intents ----------------------------------------------------------

  function renderIntents() {
    var st = S.status;
    clear(S.intents);
    S.openForm = null;
    S.line.placeholder = "Type an intent" + (st.intents.length ? " (" + lineExample(st.intents[0]) + ")" : "") + " or say something";
    if (!st.intents.length) return;
    var row = el("div", { className: "intent-row", role: "group", "aria-label": "what this state accepts" });
    S.slotBox = el("div", { id: "slot-form" });
    st.intents.forEach(function (it) {
      var about = [it.title, it.description].filter(Boolean).join(" — ");
      row.appendChild(el("button", { type: "button", className: "intent", "data-intent": it.name, title: about || it.name,
        "aria-label": it.name + (about ? ": " + about : ""), text: it.name + (it.slots.length ? " …" : ""), "aria-expanded": it.slots.length ? "false" : null,
        onclick: function (ev) { if (it.slots.length) openSlotForm(it, ev.currentTarget); else sendIntent(it.name, {}); } }));
    });
    S.intents.appendChild(row);
    S.intents.appendChild(S.slotBox);
  }

  // lineExample is an intent as the box takes it: its name and its
  // required slots ("go direction=…").
  function lineExample(it) {
    return [it.name].concat(it.slots.filter(function (x) { return x.required; }).map(function (x) { return x.name + "=…"; })).join(" ");
  }

  function openSlotForm(it, button) {
    closeSlotForm();
    var inputs = {};
    var form = el("form", { className: "slots", "data-slots-for": it.name, onsubmit: function (ev) {
      ev.preventDefault();
      var slots = {};
      Object.keys(inputs).forEach(function (k) { var v = readField(inputs[k]); if (v !== "") slots[k] = v; });
      sendIntent(it.name, slots).then(function (ok) { if (ok) closeSlotForm(); });
    } }, [el("h4", { text: it.title || it.name }), it.description ? el("p", { className: "dim", text: it.description }) : null]);
    it.slots.forEach(function (sl) {
      inputs[sl.name] = fieldInput({ name: sl.name, type: sl.type, required: sl.required, values: sl.values, value: sl.default, hint: sl.description });
      form.appendChild(el("label", { className: "field" }, [el("span", { text: sl.name + (sl.required ? " *" : "") }), inputs[sl.name],
        sl.description ? el("span", { className: "hint", text: sl.description }) : null]));
    });
    form.appendChild(el("div", { className: "buttons" }, [
      el("button", { type: "submit", className: "primary", text: it.name }),
      el("button", { type: "button", text: "Cancel", onclick: closeSlotForm }),
    ]));
    S.slotBox.appendChild(form);
    S.openForm = { form: form, button: button };
    button.setAttribute("aria-expanded", "true");
    var first = form.querySelector("input, select");
    if (first) first.focus();
  }

  function closeSlotForm() {
    if (!S.openForm) return;
    var b = S.openForm.button;
    clear(S.slotBox);
    S.openForm = null;
    b.setAttribute("aria-expanded", "false");
    b.focus();
  }

  // ---- calls in flight --------------------------------------------------

  function renderCalls() {
    if (!S) return;
    var c = S.calls;
    clear(S.callsBox);
    if (!c.busy) return;
    var since = S.callsAt || 0;
    if (S.callsSeen !== c) { S.callsSeen = c; S.callsAt = since = Date.now(); }
    var grown = Date.now() - since;
    var what = { starting: "starting the session", opening: "opening the session", turn: "taking the turn" }[c.busy] || c.busy;
    var list = el("ul", {}, c.calls.map(function (x) {
      var name = x.agent ? x.agent + " (" + x.handler + ")" : x.handler;
      return el("li", { className: "call", "data-handler": x.handler }, [el("span", { className: "spin", "aria-hidden": "true", text: "◌ " }),
        el("span", { text: name + (x.purpose ? " — " + x.purpose : "") + " · " + ago((x.age_ms || 0) + grown) })]);
    }));
    var cancel = el("button", { type: "button", id: "cancel", className: "danger", text: c.stopping ? "Cancelling…" : "Cancel",
      disabled: c.stopping, onclick: function () { api("POST", S.base + "/cancel").then(function (r) { if (!r.ok) alertLine(r.data.error); }); } });
    S.callsBox.appendChild(el("div", { className: "busy" }, [el("p", {}, [what + " · " + ago((c.age_ms || 0) + grown) + " "]), list, cancel]));
  }

  // ---- panes: diagram, trace, world, evals ------------------------------

  var PANES = [["diagram", "Diagram"], ["trace", "Trace"], ["world", "World"], ["evals", "Evals"]];

  function panes() {
    S.tabs = el("div", { className: "tabs", role: "tablist", "aria-label": "panes", onkeydown: tabKeys });
    S.panels = {};
    var box = el("aside", { className: "panes" }, [S.tabs]);
    PANES.forEach(function (p) {
      S.tabs.appendChild(el("button", { type: "button", role: "tab", id: "tab-" + p[0], "aria-controls": "pane-" + p[0], text: p[1],
        onclick: function () { selectPane(p[0]); } }));
      var panel = el("section", { role: "tabpanel", id: "pane-" + p[0], "aria-labelledby": "tab-" + p[0], className: "pane" });
      S.panels[p[0]] = panel;
      box.appendChild(panel);
    });
    selectPane("diagram");
    return box;
  }

  function tabKeys(ev) {
    var names = PANES.map(function (p) { return p[0]; });
    var i = names.indexOf(S.pane);
    if (ev.key === "ArrowRight") i = (i + 1) % names.length;
    else if (ev.key === "ArrowLeft") i = (i + names.length - 1) % names.length;
    else return;
    ev.preventDefault();
    selectPane(names[i]);
    document.getElementById("tab-" + names[i]).focus();
  }

  function selectPane(name) {
    S.pane = name;
    PANES.forEach(function (p) {
      var on = p[0] === name;
      var tab = document.getElementById("tab-" + p[0]) || S.tabs.querySelector("#tab-" + p[0]);
      tab.setAttribute("aria-selected", on ? "true" : "false");
      tab.setAttribute("tabindex", on ? "0" : "-1");
      S.panels[p[0]].hidden = !on;
    });
    if (name === "trace") loadTrace();
  }

  function renderPanes(first) {
    renderDiagram();
    renderWorld();
    if (first) renderEvals();
  }

  function renderDiagram() {
    var st = S.status, box = S.panels.diagram;
    clear(box);
    if (st.diagram) {
      var wrap = el("div", { className: "diagram" + (S.zoom ? " zoom" : "") }, [el("img", { id: "diagram", src: S.base + "/diagram.svg?v=" + st.diagram,
        alt: "state diagram; the current state is " + (st.state || "none") })]);
      var zoom = el("button", { type: "button", id: "zoom", text: "Actual size", "aria-pressed": S.zoom ? "true" : "false", onclick: function () {
        S.zoom = !S.zoom;
        wrap.classList.toggle("zoom", S.zoom);
        zoom.setAttribute("aria-pressed", S.zoom ? "true" : "false");
      } });
      box.appendChild(el("div", { className: "buttons" }, [zoom]));
      box.appendChild(wrap);
    }
    var list = el("ul", { className: "states", id: "states", "aria-label": "states" });
    st.states.forEach(function (n) {
      var mark = n.current ? "● " : (n.visited ? "✓ " : "  ");
      var li = el("li", { className: (n.current ? "current" : "") + (n.visited ? " visited" : ""), "data-state": n.id },
        [mark + n.label, n.current ? el("span", { className: "here", text: " — you are here" }) : null]);
      li.style.paddingLeft = (n.depth * 1.2) + "em";
      list.appendChild(li);
    });
    box.appendChild(list);
  }

  function loadTrace() {
    if (S.traceLoaded || !S.status || S.status.failed) return;
    S.traceLoaded = true;
    S.panels.trace.appendChild(el("iframe", { id: "trace-frame", src: "/s/" + encodeURIComponent(S.id) + "/trace/", title: "trace of this session" }));
  }

  function renderWorld() {
    var st = S.status, box = S.panels.world;
    clear(box);
    if (st.pending_world) {
      box.appendChild(el("div", { className: "banner", id: "pending" }, ["Pending for the next turn (applied at its start): ",
        el("code", { text: JSON.stringify(st.pending_world) })]));
    }
    var table = el("table", { className: "world", id: "world" });
    var keys = st.world_keys.map(function (k) { return k.name; });
    Object.keys(st.world).forEach(function (k) { if (keys.indexOf(k) < 0) keys.push(k); });
    keys.sort().forEach(function (k) {
      var decl = st.world_keys.filter(function (x) { return x.name === k; })[0];
      var cell = el("td", {}, [el("pre", { className: "value", text: st.world[k] === undefined ? "(unset)" : json(st.world[k]) })]);
      if (st.debug && decl) cell.appendChild(worldEditor(k, st.world[k]));
      table.appendChild(el("tr", { "data-key": k }, [el("th", { text: k, title: decl ? decl.type + (decl.description ? ": " + decl.description : "") : "not declared" }), cell]));
    });
    box.appendChild(table);
    if (!st.debug) box.appendChild(el("p", { className: "dim", text: "Start kitsoki web with --debug to edit the world." }));
  }

  function worldEditor(key, value) {
    var area = el("textarea", { name: key, "aria-label": "new value of " + key, value: value === undefined ? "" : JSON.stringify(value) });
    var msg = el("span", { className: "hint" });
    return el("form", { className: "edit", "data-edit": key, onsubmit: function (ev) {
      ev.preventDefault();
      var v;
      try { v = JSON.parse(area.value); } catch (e) { msg.textContent = "not JSON: " + e.message; return; }
      api("POST", S.base + "/world", { key: key, value: v }).then(function (r) { msg.textContent = r.ok ? "queued for the next turn" : r.data.error; });
    } }, [area, el("button", { type: "submit", text: "Set" }), msg]);
  }

  function renderEvals() {
    var st = S.status, box = S.panels.evals;
    clear(box);
    if (!st.evals.length) { box.appendChild(el("p", { className: "dim", text: "This story has no eval datasets (evals/*.yaml)." })); return; }
    var frame = el("div", { id: "eval-frame" });
    box.appendChild(el("ul", { className: "evals" }, st.evals.map(function (ev) {
      var open = el("button", { type: "button", text: "Show report", disabled: !ev.has_report, "data-eval": ev.name, onclick: function () {
        clear(frame);
        frame.appendChild(el("iframe", { src: "/evals/" + encodeURIComponent(st.story.key) + "/" + encodeURIComponent(ev.name), title: "eval report " + ev.name }));
      } });
      var what = ev.error ? ev.error : (ev.has_report ? ev.passing + " of " + ev.total + " candidates pass" + (ev.decision ? " · " + ev.decision : "") : "no report yet");
      return el("li", {}, [el("strong", { text: ev.name }), " call " + (ev.call || "?") + " — " + what + " ", open]);
    })));
    box.appendChild(frame);
  }

  // ---- start ------------------------------------------------------------

  var m = /^\/s\/([^/]+)$/.exec(location.pathname);
  if (m) sessionPage(decodeURIComponent(m[1]));
  else homePage();
})();
